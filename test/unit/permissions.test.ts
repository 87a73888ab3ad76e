import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { StoredEvent } from "../../src/core/events.js";
import { Troupe } from "../../src/runtime/engine.js";
import { modelSetOf } from "../../src/testing/model-set.js";
import { answerStep, finalStep, planStep, reviewStep, subtask, toolStep } from "../../src/testing/script.js";
import { type ScriptStep, ScriptedChatModel } from "../../src/testing/scripted-chat-model.js";
import { eventsOf, tempDir } from "../helpers.js";

async function engine(steps: ScriptStep[] = [], toolsConfig: unknown = {}) {
  const directory = tempDir();
  const model = new ScriptedChatModel({ steps });
  const troupe = await Troupe.create({ models: modelSetOf(model), dataDir: path.join(directory, "data"), workspace: path.join(directory, "workspace"), toolsConfig });
  return { troupe, model, workspace: troupe.workspace };
}

/** One harmless call per built-in tool; each either runs or is refused. */
const CALLS: Record<string, Record<string, unknown>> = {
  calculator: { expression: "2 + 2" },
  json: { text: "[1]" },
  file_read: { path: "seed.txt" },
  file_list: {},
  text_stats: { path: "seed.txt" },
  file_write: { path: "written.txt", content: "x" },
  file_append: { path: "appended.txt", content: "x" },
  file_move: { from: "movable.txt", to: "moved.txt" },
  file_copy: { from: "movable.txt", to: "copied.txt" },
  file_delete: { path: "seed.txt" },
  code_run: { language: "python", code: "open('/workspace/ran.txt', 'w').write('ran')" },
  web_search: { query: "anything" },
  http_fetch: { url: "http://127.0.0.1:9/" },
  // Open to every agent (NONE); outside a run's subtask there is no board to use.
  board_post: { text: "hello" },
  board_read: {},
  memory_save: { text: "the test fact", subject: "the test" },
  memory_search: { query: "test fact" },
  memory_forget: { id: "m-000000000000" },
  thread_result: { handle: "stash:run-none/s1" },
};

/** The role defaults, as users rely on them. */
const BOARD = ["board_post", "board_read"];
const ALLOWED: Record<string, string[]> = {
  research: ["calculator", "json", "file_read", "file_list", "text_stats", "web_search", "http_fetch", "memory_search", "thread_result", ...BOARD],
  code: ["calculator", "json", "file_read", "file_list", "file_write", "file_append", "file_move", "code_run", "web_search", ...BOARD],
  execute: ["calculator", "json", "file_read", "file_list", "text_stats", "file_write", "file_append", "file_move", "file_copy", "code_run", "web_search", "http_fetch", "memory_search", "thread_result", ...BOARD],
  memory: ["calculator", "json", "memory_save", "memory_search", "memory_forget", "thread_result", ...BOARD],
};
/** Reachable, but only with a person's approval (high-risk): a call without anyone to ask is refused unrun. Only memory reaches one by default (memory_forget). */
const WITH_APPROVAL = new Set(["file_delete", "memory_forget"]);

describe("permission matrix", () => {
  it("lets each agent reach exactly its role's tools; denied calls never run and are audited", async () => {
    const { troupe, workspace } = await engine();
    try {
      for (const [agent, allowed] of Object.entries(ALLOWED)) {
        expect([...(troupe.agents.get(agent)?.tools ?? [])].sort(), agent).toEqual([...allowed].sort());
        for (const [tool, args] of Object.entries(CALLS)) {
          writeFileSync(path.join(workspace, "seed.txt"), "seed");
          writeFileSync(path.join(workspace, "movable.txt"), "m");
          const before = await troupe.store.audit.count();
          const outcome = await troupe.callTool(tool, args, { agent });
          const denied = !outcome.ok && ["permission_denied", "approval_required"].includes(outcome.error.code);
          const waits = allowed.includes(tool) && WITH_APPROVAL.has(tool);
          expect(denied, `${agent} → ${tool}: ${JSON.stringify(outcome).slice(0, 200)}`).toBe(!allowed.includes(tool) || waits);
          if (waits) expect(outcome).toMatchObject({ ok: false, error: { code: "approval_required" } });
          const rows = await troupe.store.audit.list({ limit: 1 });
          expect(await troupe.store.audit.count()).toBe(before + 1);
          expect(rows[0]).toMatchObject({ agent, tool, decision: denied ? "denied" : "allowed" });
          if (denied) {
            // Never run: none of the refused tool's side effects.
            for (const made of ["written.txt", "appended.txt", "moved.txt", "copied.txt", "ran.txt"]) expect(existsSync(path.join(workspace, made)), `${agent} → ${tool}: ${made}`).toBe(false);
            expect(readFileSync(path.join(workspace, "seed.txt"), "utf8")).toBe("seed");
            expect(existsSync(path.join(workspace, "movable.txt"))).toBe(true);
          }
          for (const made of ["written.txt", "appended.txt", "moved.txt", "copied.txt", "ran.txt"]) rmSync(path.join(workspace, made), { force: true });
        }
      }
      // POST needs WRITE: research may GET but not POST.
      expect(await troupe.callTool("http_fetch", { url: "https://example.org/", method: "POST" }, { agent: "research" })).toMatchObject({ ok: false, error: { code: "permission_denied" } });
      const stats = await troupe.store.audit.stats();
      expect(stats.byAgent.research?.denied).toBe(Object.keys(CALLS).length - ALLOWED.research!.length + 1);
    } finally {
      troupe.close();
    }
  });

  it("applies grants from the config: a role replaced, an extra grant with conditions, an expired one", async () => {
    const { troupe } = await engine([], {
      permissions: {
        roles: { research: [{ tool: "web_search", level: "READ" }] },
        grants: [
          { agent: "research", tool: "file_write", level: "WRITE", conditions: { args: { path: { prefix: "notes/" } } }, grantedBy: "alice" },
          { agent: "code", tool: "http_fetch", level: "READ", expiresAt: "2000-01-01T00:00:00Z" },
        ],
      },
    });
    try {
      expect(troupe.agents.get("research")?.tools).toEqual(["board_post", "board_read", "calculator", "file_write", "json", "web_search"]);
      expect(await troupe.callTool("file_read", { path: "x" }, { agent: "research" })).toMatchObject({ ok: false, error: { code: "permission_denied" } });
      expect(await troupe.callTool("file_write", { path: "notes/a.md", content: "ok" }, { agent: "research" })).toMatchObject({ ok: true });
      expect(await troupe.callTool("file_write", { path: "b.md", content: "no" }, { agent: "research" })).toMatchObject({ ok: false, error: { code: "condition_failed" } });
      expect(await troupe.callTool("http_fetch", { url: "https://example.org/" }, { agent: "code" })).toMatchObject({ ok: false, error: { code: "grant_expired" } });
      expect((await troupe.store.audit.list()).at(-3)).toMatchObject({ decision: "allowed", grant: "research:file_write:WRITE by alice" });
    } finally {
      troupe.close();
    }
  });
});

describe("tool calls in runs", () => {
  it("audits every call of a run, one row per call in the trace, denied calls included and never run", async () => {
    const { troupe, model, workspace } = await engine([
      planStep([subtask("s1", "research", "Look and try to write"), subtask("s2", "execute", "Compute and save")]),
      toolStep("s1", "file_list", {}),
      toolStep("s1", "file_write", { path: "stolen.txt", content: "x" }, { contains: '"ok":true' }),
      finalStep("s1", "I may not write", { contains: "permission_denied" }),
      toolStep("s2", "calculator", { expression: "6 * 7" }),
      toolStep("s2", "calculator", { expression: "1 / 0" }, { contains: "42" }),
      toolStep("s2", "file_write", { path: "answer.txt", content: "42" }, { contains: "invalid_expression" }),
      finalStep("s2", "42", { contains: "answer.txt" }),
      reviewStep(0.9),
      answerStep("42"),
    ]);
    try {
      const result = await troupe.run({ task: "a run with tools" });
      model.assertDone();
      expect(result.status).toBe("completed");
      expect(existsSync(path.join(workspace, "stolen.txt"))).toBe(false);
      expect(readFileSync(path.join(workspace, "answer.txt"), "utf8")).toBe("42");
      const rows = await troupe.store.audit.list({ runId: result.runId });
      const key = (tool: string, ok: boolean, subtaskId?: string | null) => `${subtaskId}:${tool}:${ok}`;
      expect(rows.map((row) => key(row.tool, row.status === "ok", row.subtaskId)).sort()).toEqual(
        result.trace.toolCalls.map((call) => key(call.tool, call.ok, call.subtaskId)).sort(),
      );
      expect(rows).toHaveLength(5);
      expect(result.metrics.toolCalls).toBe(5);
      expect(rows.find((row) => row.tool === "file_write" && row.agent === "research")).toMatchObject({ decision: "denied", status: "not_run", errorCode: "permission_denied", threadId: result.threadId });
    } finally {
      troupe.close();
    }
  });
});

describe("approval of high-risk tools through interrupt and resume", () => {
  function approvalScript(final?: ScriptStep): ScriptStep[] {
    return [
      planStep([subtask("s1", "execute", "Log the cleanup, then remove old.txt")]),
      toolStep("s1", "file_append", { path: "log.txt", content: "cleanup started\n" }),
      toolStep("s1", "file_delete", { path: "old.txt" }, { contains: '"ok":true' }),
      ...(final ? [final] : []),
      reviewStep(0.9),
      // A one-subtask plan whose worker finished answers with its result (no synthesizer); a rejected one is worded by the synthesizer.
      ...(final ? [] : [answerStep("done")]),
    ];
  }

  it("pauses before the call, and after approval runs it without repeating the model calls or tool calls made before", async () => {
    const { troupe, model, workspace } = await engine(approvalScript(finalStep("s1", "removed old.txt", { contains: "deleted file old.txt" })), {
      permissions: { grants: [{ agent: "execute", tool: "file_delete", level: "WRITE" }] },
    });
    writeFileSync(path.join(workspace, "old.txt"), "old");
    const events: StoredEvent[] = [];
    try {
      const paused = await troupe.run({ task: "clean up", threadId: "approve-1" }, { onEvent: (event) => events.push(event) });
      expect(paused.status).toBe("interrupted");
      expect(paused.interrupt).toMatchObject({ kind: "tool-approval", payload: { tool: "file_delete", agent: "execute", subtaskId: "s1", riskLevel: "high", args: { path: "old.txt" } } });
      expect(existsSync(path.join(workspace, "old.txt"))).toBe(true);
      expect(model.callsFor("execute", "s1")).toHaveLength(2);
      const resumed = await troupe.resume("approve-1", { decision: "approve" }, { onEvent: (event) => events.push(event) });
      model.assertDone();
      expect(resumed.status).toBe("completed");
      expect(existsSync(path.join(workspace, "old.txt"))).toBe(false);
      // Nothing before the approval happened twice: two model calls then one, one append.
      expect(model.callsFor("execute", "s1")).toHaveLength(3);
      expect(readFileSync(path.join(workspace, "log.txt"), "utf8")).toBe("cleanup started\n");
      expect(eventsOf(events, "subtask-start").map((event) => event.subtaskId)).toEqual(["s1"]);
      expect(eventsOf(events, "tool-call").map((event) => event.tool)).toEqual(["file_append", "file_delete"]);
      expect((await troupe.store.audit.list()).map((row) => [row.tool, row.decision, row.status])).toEqual([
        ["file_append", "allowed", "ok"],
        ["file_delete", "approved", "ok"],
      ]);
      expect(resumed.trace.toolCalls.map((call) => call.tool)).toEqual(["file_append", "file_delete"]);
      // The planner, three execute calls, the critic; the worker's result is the answer.
      expect(resumed.metrics.llmCalls).toBe(5);
      expect(resumed.answer).toBe("removed old.txt");
    } finally {
      troupe.close();
    }
  });

  it("on rejection never runs the tool, ends the subtask as rejected (not retried), and refuses a decision that is not approve or reject", async () => {
    // No final worker step: a person's rejection ends the subtask there, without another model call.
    const { troupe, model, workspace } = await engine(approvalScript(), {
      permissions: { grants: [{ agent: "execute", tool: "file_delete", level: "WRITE" }] },
    });
    writeFileSync(path.join(workspace, "old.txt"), "old");
    try {
      expect((await troupe.run({ task: "clean up", threadId: "reject-1" })).status).toBe("interrupted");
      await expect(troupe.resume("reject-1", { decision: "answer", answer: "maybe" })).rejects.toThrow(/--approve or --reject/);
      const resumed = await troupe.resume("reject-1", { decision: "reject", feedback: "keep it for now" });
      model.assertDone();
      expect(resumed.status).toBe("failed");
      expect(resumed.stopReason).toBe("rejected");
      expect(resumed.trace.unfinished).toEqual([
        { id: "s1", label: "Log the cleanup, then remove old.txt", status: "failed", failureKind: "rejected", error: "a person rejected this call to file_delete: keep it for now" },
      ]);
      expect(readFileSync(path.join(workspace, "old.txt"), "utf8")).toBe("old");
      expect((await troupe.store.audit.list()).map((row) => [row.tool, row.decision, row.status, row.errorCode])).toEqual([
        ["file_append", "allowed", "ok", null],
        ["file_delete", "rejected", "not_run", "rejected"],
      ]);
    } finally {
      troupe.close();
    }
  });

  it("asks once per waiting subtask when several wait at the same time", async () => {
    const { troupe, model, workspace } = await engine(
      [
        planStep([subtask("s1", "execute", "Remove a.txt"), subtask("s2", "execute", "Remove b.txt")]),
        toolStep("s1", "file_delete", { path: "a.txt" }),
        toolStep("s2", "file_delete", { path: "b.txt" }),
        finalStep("s1", "a gone", { contains: "deleted file a.txt" }),
        reviewStep(0.9),
        answerStep("one removed"),
      ],
      { permissions: { grants: [{ agent: "execute", tool: "file_delete", level: "WRITE" }] } },
    );
    writeFileSync(path.join(workspace, "a.txt"), "a");
    writeFileSync(path.join(workspace, "b.txt"), "b");
    try {
      const first = await troupe.run({ task: "remove both", threadId: "both" });
      expect(first.interrupt?.kind).toBe("tool-approval");
      const firstPath = (first.interrupt?.payload.args as { path: string }).path;
      const second = await troupe.resume("both", firstPath === "a.txt" ? { decision: "approve" } : { decision: "reject" });
      expect(second.status).toBe("interrupted");
      const secondPath = (second.interrupt?.payload.args as { path: string }).path;
      expect(secondPath).not.toBe(firstPath);
      const done = await troupe.resume("both", secondPath === "a.txt" ? { decision: "approve" } : { decision: "reject" });
      model.assertDone();
      expect(done.status).toBe("failed");
      expect(done.stopReason).toBe("rejected");
      expect(existsSync(path.join(workspace, "a.txt"))).toBe(false);
      expect(existsSync(path.join(workspace, "b.txt"))).toBe(true);
      expect(model.callsFor("execute")).toHaveLength(3);
    } finally {
      troupe.close();
    }
  });
});

describe("answering one of several pending approvals by its interrupt id", () => {
  it("lists the pending interrupts with their ids and answers the one named; an unknown id is refused", async () => {
    const { troupe, model, workspace } = await engine(
      [
        planStep([subtask("s1", "execute", "Remove a.txt"), subtask("s2", "execute", "Remove b.txt")]),
        toolStep("s1", "file_delete", { path: "a.txt" }),
        toolStep("s2", "file_delete", { path: "b.txt" }),
        finalStep("s2", "b gone", { contains: "deleted file b.txt" }),
        reviewStep(0.9),
        answerStep("one removed"),
      ],
      { permissions: { grants: [{ agent: "execute", tool: "file_delete", level: "WRITE" }] } },
    );
    writeFileSync(path.join(workspace, "a.txt"), "a");
    writeFileSync(path.join(workspace, "b.txt"), "b");
    try {
      const first = await troupe.run({ task: "remove both", threadId: "named" });
      expect(first.interrupt?.kind).toBe("tool-approval");
      const pending = await troupe.pendingInterrupts("named");
      expect(pending.map((item) => [item.kind, (item.payload.args as { path: string }).path]).sort()).toEqual([
        ["tool-approval", "a.txt"],
        ["tool-approval", "b.txt"],
      ]);
      await expect(troupe.resume("named", { decision: "approve" }, { interruptId: "no-such-interrupt" })).rejects.toMatchObject({ code: "unknown_interrupt" });
      // Approve b.txt's call by its id, whichever comes first.
      const forB = pending.find((item) => (item.payload.args as { path: string }).path === "b.txt");
      const second = await troupe.resume("named", { decision: "approve" }, { interruptId: forB?.id as string });
      expect(second.status).toBe("interrupted");
      expect((second.interrupt?.payload.args as { path: string }).path).toBe("a.txt");
      expect(existsSync(path.join(workspace, "b.txt"))).toBe(false);
      const [left] = await troupe.pendingInterrupts("named");
      const done = await troupe.resume("named", { decision: "reject", feedback: "keep a" }, { interruptId: left?.id as string });
      model.assertDone();
      expect(done.status).toBe("failed");
      expect(done.trace.unfinished.map((entry) => [entry.id, entry.failureKind])).toEqual([["s1", "rejected"]]);
      expect(existsSync(path.join(workspace, "a.txt"))).toBe(true);
      expect(await troupe.pendingInterrupts("named")).toEqual([]);
    } finally {
      troupe.close();
    }
  });
});

describe("a run's tools (the request's allow-list) within the permission model", () => {
  it("narrows what the agents may use: a granted tool outside the list is neither offered nor run, and is audited as denied", async () => {
    const { troupe, model, workspace } = await engine([
      planStep([subtask("s1", "execute", "Work it out and note it")]),
      // execute holds WRITE on file_write, but this run may use only the calculator.
      toolStep("s1", "file_write", { path: "note.txt", content: "4" }),
      finalStep("s1", "4", { contains: "tool_not_allowed" }),
      reviewStep(0.9),
    ]);
    try {
      const result = await troupe.run({ task: "compute 2+2", tools: ["calculator"] });
      model.assertDone();
      expect(result.status).toBe("completed");
      expect(model.callsFor("execute")[0]?.tools).toEqual(["calculator", "submit_result"]);
      expect(existsSync(path.join(workspace, "note.txt"))).toBe(false);
      expect((await troupe.store.audit.list({ runId: result.runId })).map((row) => [row.agent, row.tool, row.decision, row.errorCode])).toEqual([["execute", "file_write", "denied", "tool_not_allowed"]]);
    } finally {
      troupe.close();
    }
  });

  it("never widens the grants: a tool in the list that the agent may not use is still refused by the policy", async () => {
    const { troupe, model, workspace } = await engine([
      planStep([subtask("s1", "research", "Save the figure")]),
      // research reads only; naming file_write in the run's tools does not give it WRITE.
      toolStep("s1", "file_write", { path: "figure.txt", content: "42" }),
      finalStep("s1", "could not save", { contains: "permission_denied" }),
      reviewStep(0.9),
    ]);
    try {
      const result = await troupe.run({ task: "save 42", tools: ["file_write", "file_read"] });
      model.assertDone();
      // Offered only what is both granted and listed.
      expect(model.callsFor("research")[0]?.tools).toEqual(["file_read", "submit_result"]);
      expect(existsSync(path.join(workspace, "figure.txt"))).toBe(false);
      expect((await troupe.store.audit.list({ runId: result.runId })).map((row) => [row.tool, row.decision, row.errorCode])).toEqual([["file_write", "denied", "permission_denied"]]);
    } finally {
      troupe.close();
    }
  });

  it("refuses unknown tool names before anything is stored, and keeps the list across a resume", async () => {
    const { troupe, model } = await engine([
      // A verified direct tool result is not reviewed; the synthesizer words it.
      planStep([subtask("s1", "execute", "Add", { tool: "calculator", args: { expression: { value: "2+2" } } })]),
      answerStep("4"),
    ]);
    try {
      await expect(troupe.run({ task: "t", tools: ["calculator", "nope"] })).rejects.toMatchObject({ code: "unknown_tool" });
      expect(await troupe.store.runs.count()).toBe(0);
      const paused = await troupe.run({ task: "add", tools: ["calculator"], approvePlan: true, threadId: "listed" });
      expect(paused.interrupt?.kind).toBe("plan-approval");
      const done = await troupe.resume("listed", { decision: "approve" });
      model.assertDone();
      expect(done.status).toBe("completed");
      expect((await troupe.store.audit.list({ runId: done.runId })).map((row) => [row.tool, row.decision])).toEqual([["calculator", "allowed"]]);
    } finally {
      troupe.close();
    }
  });
});
