import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { BaseMessage } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseSections, SECTIONS } from "../core/prompt-protocol.js";
import { routeFor } from "../providers/registry.js";
import { countMessageTokens } from "../providers/token-count.js";
import type { ToolCallingCallOptions } from "../providers/tool-calling-chat-model.js";
import { modelSetOf } from "../testing/model-set.js";
import { finalStep, toolStep } from "../testing/script.js";
import { type ScriptStep, ScriptedChatModel } from "../testing/scripted-chat-model.js";
import type { AuditEntry } from "../tools/audit.js";
import { createBuiltinRegistry } from "../tools/builtin/index.js";
import { workspaceRoot } from "../tools/workspace.js";
import { runCritic } from "./critic.js";
import { executeAgent } from "./execute.js";
import { UsageMeter } from "./model-call.js";
import { promptValue, prepareValue } from "./prompt-budget.js";
import { runAgentLoop } from "./agent-loop.js";

class RecordingModel extends ScriptedChatModel {
  readonly prompts: BaseMessage[][] = [];
  override async _generate(messages: BaseMessage[], options: ToolCallingCallOptions): Promise<ChatResult> {
    this.prompts.push(messages);
    return super._generate(messages, options);
  }
}

let workspace: string;
beforeEach(async () => {
  workspace = await workspaceRoot(await mkdtemp(path.join(tmpdir(), "troupe-budget-")));
});
afterEach(async () => {
  await rm(workspace, { recursive: true, force: true });
});

async function work(steps: ScriptStep[], args: Record<string, unknown>, promptBudget: number, tools = createBuiltinRegistry()) {
  const model = new RecordingModel({ steps });
  const outcome = await runAgentLoop(
    {
      agent: executeAgent,
      model: routeFor(modelSetOf(model), "worker"),
      tools,
      task: "Save the report",
      subtask: { id: "s2", label: "Save it to report.txt", agent: "execute", dependsOn: ["s1"], args: {} },
      args,
      dependencies: [{ id: "s1", label: "Build the report", summary: "a long report" }],
      feedback: [],
      toolContext: { workspace, agent: "execute", subtaskId: "s2" },
      maxSteps: 4,
      promptBudget,
    },
    { meter: new UsageMeter() },
  );
  return { model, outcome };
}

describe("prompts under a token budget", () => {
  it("shows a small value whole and a large one as a handle with its size, shape and a preview", () => {
    expect(promptValue(prepareValue({ a: 1 }), "args.x", 100, 50)).toEqual({ a: 1 });
    expect(promptValue(prepareValue("x".repeat(500)), "args.x", 100, 20)).toEqual({ $stash: "args.x", bytes: 500, shape: "string", preview: `${"x".repeat(19)}…` });
    expect(promptValue(prepareValue([{ id: 1 }, { id: 2 }]), "args.rows", 5, 0)).toEqual({ $stash: "args.rows", bytes: 19, shape: "array(2) of object {id}" });
  });

  it("keeps a worker's prompt flat as its argument grows from 1 KB to 5 MB, and puts the whole value in the tool call", async () => {
    const sizes: number[] = [];
    for (const bytes of [1_000, 50_000, 5_000_000]) {
      const content = Array.from({ length: Math.ceil(bytes / 12) }, (_, index) => `row ${index}`.padEnd(11, ".")).join("\n").slice(0, bytes);
      const { model, outcome } = await work([toolStep("s2", "file_write", { path: "report.txt", content: { $stash: "args.content" } }), finalStep("s2", "saved")], { content }, 1_500);
      expect(outcome.status).toBe("done");
      expect(await readFile(path.join(workspace, "report.txt"), "utf8")).toBe(content);
      const tokens = await Promise.all(model.prompts.map((prompt) => countMessageTokens(prompt)));
      for (const count of tokens) expect(count).toBeLessThanOrEqual(1_500);
      sizes.push(Math.max(...tokens));
      await rm(path.join(workspace, "report.txt"));
    }
    // 50 KB and 5 MB are both shown as a handle with the same preview: the same prompt size, but for the digits of "bytes".
    expect(Math.abs((sizes[2] ?? 0) - (sizes[1] ?? 0))).toBeLessThanOrEqual(3);
  });

  it("refuses a handle the subtask does not have, as a tool error the model can read, and audits the refused call", async () => {
    const audited: AuditEntry[] = [];
    const tools = createBuiltinRegistry().configure({ audit: { record: (entry) => void audited.push(entry) } });
    const { model, outcome } = await work(
      [toolStep("s2", "file_write", { path: "report.txt", content: { $stash: "args.other" } }), finalStep("s2", "FAILED: no such handle", { contains: "unknown_handle" })],
      { content: "x" },
      8_000,
      tools,
    );
    expect(audited).toHaveLength(1);
    expect(audited[0]).toMatchObject({ tool: "file_write", agent: "execute", subtaskId: "s2", status: "not_run", errorCode: "unknown_handle" });
    expect(JSON.parse(audited[0]?.args ?? "{}")).toEqual({ path: "report.txt", content: { $stash: "args.other" } });
    expect(outcome).toMatchObject({ status: "failed", error: "no such handle" });
    expect(outcome.toolCalls[0]?.outcome).toEqual({ ok: false, error: { code: "unknown_handle", message: '"args.other" is not a handle of this subtask; known: args.content' } });
    expect(model.calls).toHaveLength(2);
  });

  it("trims the critic's view of a 5,000-item map to the budget, listing the failed items first", async () => {
    const results = Array.from({ length: 5_000 }, (_, index) =>
      index % 1_000 === 7 ? { status: "error" as const, input: `item-${index}`, error: "not found" } : { status: "success" as const, input: `item-${index}`, output: { text: "y".repeat(200) } },
    );
    const model = new RecordingModel({ steps: [{ role: "critic", toolCalls: [{ name: "submit_review", args: { scores: { accuracy: 1, completeness: 1, relevance: 1, logic: 1 }, issues: [], redo: [], replan: false } }] }] });
    await runCritic(
      {
        model: routeFor(modelSetOf(model), "critic"),
        task: "check everything",
        outcomes: [{ id: "s2", label: "Fetch every item", agent: "research", status: "done", attempts: 1, value: { overallStatus: "PARTIAL_SUCCESS", results } }],
        iteration: 1,
        maxIterations: 3,
        promptBudget: 2_000,
      },
      { meter: new UsageMeter() },
    );
    const prompt = model.prompts[0] ?? [];
    expect(await countMessageTokens(prompt)).toBeLessThanOrEqual(2_000);
    const human = prompt.find((message) => message.getType() === "human");
    const [outcome] = JSON.parse(parseSections(String(human?.content)).get(SECTIONS.outcomes) ?? "[]") as Array<{ items: { total: number; failed: number; listed: Array<{ input: string; status: string }> } }>;
    expect(outcome?.items.total).toBe(5_000);
    expect(outcome?.items.failed).toBe(5);
    expect(outcome?.items.listed.filter((item) => item.status === "error").map((item) => item.input)).toEqual(["item-7", "item-1007", "item-2007", "item-3007", "item-4007"]);
  });
});
