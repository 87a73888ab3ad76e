import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { TroupeConfig } from "../src/config/config-file.js";
import { parseEnv } from "../src/config/env.js";
import type { StoredEvent } from "../src/core/events.js";
import { Troupe } from "../src/runtime/engine.js";
import { modelSetOf } from "../src/testing/model-set.js";
import { SchemaFollowingChatModel } from "../src/testing/schema-following-chat-model.js";
import { answerStep, finalStep, planStep, reviewStep, subtask, toolStep } from "../src/testing/script.js";
import { type ScriptStep, ScriptedChatModel } from "../src/testing/scripted-chat-model.js";
import { envFor, fakeOpenAI } from "./provider-helpers.js";
import { eventsOf, runCli, tempDir } from "./helpers.js";

/** Two agents declared in the config file: a reader of notes, and a second one with the same capability. */
const CONFIG: TroupeConfig = {
  agents: [
    {
      name: "summarizer",
      description: "reads notes in the workspace and summarises them; never writes",
      capabilities: ["summarise-notes"],
      tools: ["file_read", "file_list"],
      prompt: "Read the notes you are given with file_read and answer with a three-line summary.",
    },
    {
      name: "digest",
      description: "digests notes into key points",
      capabilities: ["summarise-notes"],
      tools: ["file_read"],
      role: "critic",
      prompt: "Read the notes and answer with their key points.",
    },
  ],
};

async function engine(steps: ScriptStep[], config: TroupeConfig = CONFIG) {
  const directory = tempDir();
  const workspace = path.join(directory, "workspace");
  mkdirSync(workspace, { recursive: true });
  writeFileSync(path.join(workspace, "notes.txt"), "Meeting on Monday.\nBudget approved.\n");
  const model = new ScriptedChatModel({ steps });
  const troupe = await Troupe.create({ models: modelSetOf(model), config, dataDir: path.join(directory, "data"), workspace });
  return { troupe, model, workspace };
}

describe("agents declared in the config file", () => {
  it("are planned onto, checked against the tools their subtasks need, and refused a tool they lack", async () => {
    const { troupe, model } = await engine([
      // A plan giving the summarizer a file write: refused by the plan check, with the agents that could.
      planStep([subtask("s1", "summarizer", "Summarise notes.txt into summary.txt", { tool: "file_write", args: { path: { value: "summary.txt" }, content: { value: "x" } } })]),
      // The planner gives it reading, as the error says; its worker still tries to write, and the registry refuses.
      { ...planStep([subtask("s1", "summarizer", "Summarise notes.txt", { tools: ["file_read"], reads: ["notes.txt"] })]), contains: 'agent "summarizer" cannot use file_write' },
      toolStep("s1", "file_read", { path: "notes.txt" }),
      toolStep("s1", "file_write", { path: "summary.txt", content: "Monday; budget" }, { contains: "Budget approved" }),
      finalStep("s1", "Meeting on Monday; budget approved.", { contains: "permission_denied" }),
      reviewStep(0.9),
      // The worker read notes.txt, untrusted by default: its text is not the answer as it stands (no fast route), the synthesizer words it.
      answerStep("Meeting on Monday; budget approved."),
    ]);
    const events: StoredEvent[] = [];
    try {
      expect(troupe.agents.names()).toEqual(["research", "code", "execute", "memory", "cleanup", "summarizer", "digest"]);
      expect(troupe.agents.get("summarizer")).toMatchObject({ source: "config", capabilities: ["summarise-notes"], instructions: "Read the notes you are given with file_read and answer with a three-line summary." });
      // Its tools are what its grants reach: file_read and file_list, and the tools open to every agent.
      expect(troupe.agents.get("summarizer")?.tools).toEqual(["board_post", "board_read", "calculator", "file_list", "file_read", "json"]);
      const result = await troupe.run({ task: "summarise notes.txt" }, { onEvent: (event) => events.push(event) });
      model.assertDone();
      const invalid = eventsOf(events, "plan-invalid")[0];
      expect(invalid?.errors).toEqual([
        'subtask s1: agent "summarizer" cannot use file_write (its tools: board_post, board_read, calculator, file_list, file_read, json); agents that can: code, execute',
      ]);
      // The planner was told about it: its capabilities and tools are in the planner's prompt.
      expect(model.callsFor("planner")).toHaveLength(2);
      expect(result.status).toBe("completed");
      expect(result.plan[0]).toMatchObject({ id: "s1", agent: "summarizer", status: "done" });
      const write = result.trace.toolCalls.find((call) => call.tool === "file_write");
      expect(write).toMatchObject({ agent: "summarizer", ok: false });
      expect(write?.preview).toMatch(/^permission_denied: /);
      const audit = (await troupe.store.audit.list({ runId: result.runId })).find((row) => row.tool === "file_write");
      expect(audit).toMatchObject({ agent: "summarizer", decision: "denied", status: "not_run" });
      // The worker spoke in its own role, with its own prompt.
      const prompt = model.calls.find((call) => call.subtask === "s1");
      expect(prompt?.role).toBe("summarizer");
    } finally {
      troupe.close();
    }
  });

  it("gives a subtask that asks for a capability to the least busy agent that has it, and says so in the trace", async () => {
    const { troupe, model } = await engine([
      planStep([
        subtask("s1", "summarizer", "Summarise part one", { capability: "summarise-notes", tools: ["file_read"] }),
        subtask("s2", "summarizer", "Summarise part two", { capability: "summarise-notes", tools: ["file_read"] }),
        subtask("s3", "summarizer", "Summarise both parts", { capability: "summarise-notes", dependsOn: ["s1", "s2"] }),
      ]),
      finalStep("s1", "part one", { delayMs: 200 }),
      finalStep("s2", "part two", { delayMs: 200 }),
      finalStep("s3", "both parts"),
      reviewStep(0.9),
      answerStep("done"),
    ]);
    const events: StoredEvent[] = [];
    try {
      const result = await troupe.run({ task: "summarise the notes in parts" }, { onEvent: (event) => events.push(event) });
      model.assertDone();
      expect(result.status).toBe("completed");
      const assigned = eventsOf(events, "agent-assign").map((event) => [event.subtaskId, event.agent]);
      // s1 to the planner's pick; s2 starts while s1 runs, so to the other; s3 after both, each having run one: the planner's pick again.
      expect(assigned).toEqual([
        ["s1", "summarizer"],
        ["s2", "digest"],
        ["s3", "summarizer"],
      ]);
      expect(eventsOf(events, "agent-assign")[1]?.candidates).toEqual([
        { agent: "summarizer", running: 1, assigned: 1 },
        { agent: "digest", running: 0, assigned: 0 },
      ]);
      expect(result.plan.map((view) => [view.id, view.agent, view.assignment?.capability])).toEqual([
        ["s1", "summarizer", "summarise-notes"],
        ["s2", "digest", "summarise-notes"],
        ["s3", "summarizer", "summarise-notes"],
      ]);
      // The worker that ran s2 was digest's: its role, its prompt.
      expect(model.calls.find((call) => call.subtask === "s2")?.role).toBe("digest");
    } finally {
      troupe.close();
    }
  });

  it("refuses a plan that asks for a capability no agent with the right tools has", async () => {
    const { troupe, model } = await engine([
      planStep([subtask("s1", "research", "Fly", { capability: "flying" })]),
      { ...planStep([subtask("s1", "research", "Write the summary", { capability: "summarise-notes", tools: ["file_write"] })]), contains: 'no agent has the capability "flying"' },
      { ...planStep([subtask("s1", "execute", "Write the summary", { tools: ["file_write"] })]), contains: 'no agent with the capability "summarise-notes" has the tools it needs' },
      finalStep("s1", "written"),
      // One subtask that read nothing: its worker's text is the answer (the fast route), no synthesizer call.
      reviewStep(0.9),
    ]);
    try {
      const result = await troupe.run({ task: "summarise into a file" });
      model.assertDone();
      expect(result.status).toBe("completed");
    } finally {
      troupe.close();
    }
  });

  it("keeps the planner's agent enum strict for new agents, through the real OpenAI client", async () => {
    const openai = await fakeOpenAI(new SchemaFollowingChatModel({}));
    const directory = tempDir();
    // The JSON plan wire (OpenAI plans on the compact wire by default, whose prompt names the agents in words).
    const config: TroupeConfig = { ...CONFIG, providers: { openai: { planWire: "json" } } };
    const troupe = await Troupe.create({ env: parseEnv(envFor({ openai }, { TROUPE_PROVIDER: "openai" })), config, dataDir: path.join(directory, "data"), workspace: path.join(directory, "workspace") });
    try {
      await troupe.run({ task: "summarise the notes" });
      const body = openai.requestsFor("planner")[0]?.body as { response_format: { json_schema: { strict: boolean; schema: Record<string, unknown> } } };
      expect(body.response_format.json_schema.strict).toBe(true);
      type Shape = { properties: Record<string, { enum?: string[]; anyOf?: Array<{ enum?: string[] }> }> };
      const steps = (body.response_format.json_schema.schema.properties as Record<string, { items: { anyOf: Shape[] } }>).steps;
      const full = steps?.items.anyOf.find((shape) => "agent" in shape.properties);
      expect(full?.properties.agent?.enum).toEqual(["research", "code", "execute", "memory", "cleanup", "summarizer", "digest"]);
      expect(full?.properties.capability?.anyOf?.[0]?.enum).toContain("summarise-notes");
      const system = (openai.requestsFor("planner")[0]?.body.messages as Array<{ role: string; content: string }>)[0]?.content ?? "";
      expect(system).toContain("- summarizer: reads notes in the workspace and summarises them; never writes (capabilities: summarise-notes; also: board_post, board_read, calculator, file_list, file_read, json)");
    } finally {
      troupe.close();
    }
  });

  it("are listed by troupe agents list with their capabilities and tools; a bad declaration is exit 2 naming it", async () => {
    const directory = tempDir();
    writeFileSync(path.join(directory, "troupe.config.json"), JSON.stringify(CONFIG));
    const listed = await runCli(["agents", "list", "--json"], { cwd: directory });
    expect(listed.code).toBe(0);
    const agents = JSON.parse(listed.stdout) as Array<{ name: string; source: string; capabilities: string[]; tools: string[]; model: string }>;
    expect(agents.map((agent) => [agent.name, agent.source])).toEqual([
      ["research", "builtin"],
      ["code", "builtin"],
      ["execute", "builtin"],
      ["memory", "builtin"],
      ["cleanup", "builtin"],
      ["summarizer", "config"],
      ["digest", "config"],
    ]);
    expect(agents[6]).toMatchObject({ capabilities: ["summarise-notes"], tools: ["board_post", "board_read", "calculator", "file_read", "json"], model: "the critic role's" });
    const text = await runCli(["agents", "list"], { cwd: directory });
    expect(text.stdout).toMatch(/summarizer\s+config\s+reads notes/);
    writeFileSync(path.join(directory, "troupe.config.json"), JSON.stringify({ agents: [{ ...CONFIG.agents?.[0], tools: ["file_reed"] }] }));
    const bad = await runCli(["agents", "list"], { cwd: directory });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/agents\.0 \(summarizer\): unknown tool file_reed/);
    writeFileSync(path.join(directory, "troupe.config.json"), JSON.stringify({ agents: [{ ...CONFIG.agents?.[0], name: "research" }] }));
    const taken = await runCli(["agents", "list"], { cwd: directory });
    expect(taken.code).toBe(2);
    expect(taken.stderr).toMatch(/agents\.0 \(research\): an agent named "research" is already registered/);
  });
});
