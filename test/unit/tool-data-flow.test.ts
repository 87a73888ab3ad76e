import { existsSync, readFileSync, writeFileSync } from "node:fs";
import type { SqliteStore } from "../../src/store/index.js";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { MappedExecutionReport } from "../../src/core/map-report.js";
import { Troupe } from "../../src/runtime/engine.js";
import { modelSetOf } from "../../src/testing/model-set.js";
import { answerStep, finalStep, planStep, reviewStep, subtask, toolStep } from "../../src/testing/script.js";
import { type ScriptStep, ScriptedChatModel } from "../../src/testing/scripted-chat-model.js";
import { createBuiltinRegistry } from "../../src/tools/builtin/index.js";
import { largeTextTool, tempDir } from "../helpers.js";

/**
 * Where the tool platform (permissions, audit, approvals, durable worker steps) meets the data
 * flow (stash, maps, value handles) and the budgets of model calls.
 */

/** The execute agent may delete files, which needs a person's approval: its workers' steps are durable. */
const DELETE_GRANT = { permissions: { grants: [{ agent: "execute", tool: "file_delete", level: "WRITE" }] } };

async function engine(steps: ScriptStep[], options: { toolsConfig?: unknown; tools?: ReturnType<typeof createBuiltinRegistry> } = {}) {
  const directory = tempDir();
  const model = new ScriptedChatModel({ steps });
  const troupe = await Troupe.create({
    models: modelSetOf(model),
    dataDir: path.join(directory, "data"),
    workspace: path.join(directory, "workspace"),
    toolsConfig: options.toolsConfig ?? {},
    ...(options.tools ? { tools: options.tools } : {}),
  });
  return { troupe, model, workspace: troupe.workspace };
}

/** The largest value LangGraph's checkpointer holds for a thread (checkpoints and pending writes). */
function largestCheckpointValue(troupe: Troupe, threadId: string): number {
  const checkpoints = (troupe.store as SqliteStore).db.prepare("SELECT max(length(checkpoint)) AS size FROM checkpoints WHERE thread_id = ?").get(threadId) as { size: number | null };
  const writes = (troupe.store as SqliteStore).db.prepare("SELECT max(length(value)) AS size FROM writes WHERE thread_id = ?").get(threadId) as { size: number | null };
  return Math.max(checkpoints.size ?? 0, writes.size ?? 0);
}

describe("value handles in a worker whose steps are durable", () => {
  it("hands the whole value to a tool, pauses for approval without repeating anything, and keeps large values out of the checkpoint", async () => {
    const big = `${"row of data\n".repeat(150_000)}end`;
    const tools = createBuiltinRegistry().register(largeTextTool(big));
    const { troupe, model, workspace } = await engine(
      [
        planStep([
          subtask("s1", "research", "Produce the data", { tool: "make_data" }),
          subtask("s2", "execute", "Save it to big.txt, read it back, remove old.txt", { dependsOn: ["s1"], args: { content: { ref: "s1", path: "$" } } }),
        ]),
        toolStep("s2", "file_write", { path: "big.txt", content: { $stash: "args.content" } }, { contains: '"$stash":"args.content"' }),
        toolStep("s2", "file_read", { path: "big.txt" }, { contains: '"ok":true' }),
        toolStep("s2", "file_delete", { path: "old.txt" }, { contains: '"$stash":"results.2"' }),
        toolStep("s2", "file_write", { path: "copy.txt", content: { $stash: "results.2" } }, { contains: "deleted file old.txt" }),
        finalStep("s2", "saved big.txt and removed old.txt", { contains: "too large to keep across the pause" }),
        reviewStep(0.9),
        answerStep("Saved."),
      ],
      { toolsConfig: DELETE_GRANT, tools },
    );
    writeFileSync(path.join(workspace, "old.txt"), "old");
    try {
      const paused = await troupe.run({ task: "save the data and clean up", threadId: "handles", promptBudget: 2_000 });
      expect(paused.status).toBe("interrupted");
      expect(paused.interrupt).toMatchObject({ kind: "tool-approval", payload: { tool: "file_delete", subtaskId: "s2" } });
      // The whole value went to the tool through its handle, inside a durable step.
      expect(readFileSync(path.join(workspace, "big.txt"), "utf8")).toBe(big);
      expect(model.callsFor("execute", "s2")).toHaveLength(3);
      // Neither the 1.8 MB argument nor the 1 MiB file_read result is in the checkpoint.
      expect(largestCheckpointValue(troupe, "handles")).toBeLessThan(100_000);

      const resumed = await troupe.resume("handles", { decision: "approve" });
      model.assertDone();
      expect(resumed.status).toBe("completed");
      expect(existsSync(path.join(workspace, "old.txt"))).toBe(false);
      // Nothing before the pause ran twice; the cut read result cannot be handed on after the replay.
      expect(model.callsFor("execute", "s2")).toHaveLength(5);
      expect(existsSync(path.join(workspace, "copy.txt"))).toBe(false);
      expect((await troupe.store.audit.list({ runId: resumed.runId })).map((row) => [row.subtaskId, row.tool, row.decision, row.status])).toEqual([
        ["s1", "make_data", "allowed", "ok"],
        ["s2", "file_write", "allowed", "ok"],
        ["s2", "file_read", "allowed", "ok"],
        ["s2", "file_delete", "approved", "ok"],
        // Refused for its lost handle, still audited: one row for every call in the trace.
        ["s2", "file_write", "allowed", "not_run"],
      ]);
      expect(resumed.trace.toolCalls.map((call) => [call.subtaskId, call.tool, call.ok])).toEqual([
        ["s1", "make_data", true],
        ["s2", "file_write", true],
        ["s2", "file_read", true],
        ["s2", "file_delete", true],
        ["s2", "file_write", false],
      ]);
      // The direct tool step's value is in the stash, not in the state.
      expect(await troupe.store.stash.get(resumed.plan[0]?.ref ?? "")).toBe(big);
      const state = (await troupe.graph.getState({ configurable: { thread_id: "handles" } })).values;
      expect(JSON.stringify(state).length).toBeLessThan(30_000);
      expect(resumed.metrics.llmCalls).toBe(8);
    } finally {
      troupe.close();
    }
  });
});

describe("a worker that may pause, saved only once it acts", () => {
  /** The LangGraph tasks whose results the thread's checkpoints hold, by what they returned. */
  function savedTaskResults(troupe: Troupe, threadId: string): string[] {
    const rows = (troupe.store as SqliteStore).db.prepare("SELECT CAST(value AS TEXT) AS value FROM writes WHERE thread_id = ? AND channel = '__return__'").all(threadId) as Array<{ value: string }>;
    const kind = (value: string): string => {
      if (/^\d+$/.test(value)) return "a start time";
      if (value.includes('"AIMessage')) return "a model reply";
      if (value.includes('"subtasks"')) return "the plan";
      if (value.startsWith('{"results"')) return "a subtask's result";
      return value.startsWith('{"tool"') ? "a tool call" : value.slice(0, 40);
    };
    return rows.map((row) => kind(row.value)).sort();
  }

  it("answers without a tool call and saves no step of its own: nothing to repeat, nothing written", async () => {
    const { troupe, model } = await engine(
      [planStep([subtask("s1", "execute", "Say what the figure is")]), finalStep("s1", "the figure is 4"), reviewStep(0.9)],
      { toolsConfig: DELETE_GRANT },
    );
    try {
      const result = await troupe.run({ task: "say the figure", threadId: "answers-at-once" });
      model.assertDone();
      expect(result.status).toBe("completed");
      expect(savedTaskResults(troupe, "answers-at-once")).toEqual(["a subtask's result", "the plan"]);
    } finally {
      troupe.close();
    }
  });

  it("saves its steps before its first tool call, so a pause later in the subtask repeats no model call", async () => {
    const { troupe, model, workspace } = await engine(
      [
        planStep([subtask("s1", "execute", "Write a note, then remove old.txt")]),
        toolStep("s1", "file_write", { path: "note.txt", content: "kept" }),
        toolStep("s1", "file_delete", { path: "old.txt" }),
        finalStep("s1", "wrote the note and removed old.txt"),
        reviewStep(0.9),
      ],
      { toolsConfig: DELETE_GRANT },
    );
    writeFileSync(path.join(workspace, "old.txt"), "old");
    try {
      const paused = await troupe.run({ task: "write a note and clean up", threadId: "acts-then-pauses" });
      expect(paused.status).toBe("interrupted");
      // Saved when the first tool call came: the start and the first reply; then that call and the next reply, each as it finished.
      expect(savedTaskResults(troupe, "acts-then-pauses")).toEqual(["a model reply", "a model reply", "a start time", "a tool call", "the plan"]);
      const resumed = await troupe.resume("acts-then-pauses", { decision: "approve" });
      model.assertDone();
      expect(resumed.status).toBe("completed");
      expect(model.callsFor("execute", "s1")).toHaveLength(3);
      expect(readFileSync(path.join(workspace, "note.txt"), "utf8")).toBe("kept");
      expect(existsSync(path.join(workspace, "old.txt"))).toBe(false);
      expect((await troupe.store.audit.list({ runId: resumed.runId })).map((row) => [row.tool, row.decision, row.status])).toEqual([
        ["file_write", "allowed", "ok"],
        ["file_delete", "approved", "ok"],
      ]);
    } finally {
      troupe.close();
    }
  });
});

describe("maps and direct tool steps under the permission policy", () => {
  it("runs map items through permissions and audit without ever pausing: a high-risk call is refused, a denied one never runs", async () => {
    const { troupe, model, workspace } = await engine(
      [
        planStep([
          subtask("s1", "execute", "Remove each old file", { tool: "file_delete", args: { path: { value: ["a.txt", "b.txt"] } }, mapOver: "path" }),
          subtask("s2", "research", "Write each note", { tool: "file_write", args: { path: { value: ["n1.txt", "n2.txt"] }, content: { value: "x" } }, mapOver: "path" }),
          subtask("s3", "execute", "Count the words of each file", { tool: "text_stats", args: { path: { value: ["a.txt", "b.txt"] } }, mapOver: "path" }),
          subtask("s4", "execute", "Tidy up c.txt, item by item", { args: { file: { value: ["c.txt"] } }, mapOver: "file" }),
        ]),
        toolStep("s4", "file_delete", { path: "c.txt" }),
        finalStep("s4", "FAILED: c.txt needs a person's approval", { contains: "approval_required" }),
        reviewStep(0.9),
        answerStep("Some work was refused."),
      ],
      // research may write under notes/ only: it reaches file_write (so the plan is valid), and each call outside is denied.
      { toolsConfig: { permissions: { grants: [...DELETE_GRANT.permissions.grants, { agent: "research", tool: "file_write", level: "WRITE", conditions: { args: { path: { prefix: "notes/" } } } }] } } },
    );
    for (const name of ["a.txt", "b.txt", "c.txt"]) writeFileSync(path.join(workspace, name), "two words");
    try {
      const result = await troupe.run({ task: "tidy the workspace" });
      model.assertDone();
      expect(result.status).not.toBe("interrupted");
      expect(result.interrupt).toBeUndefined();
      for (const name of ["a.txt", "b.txt", "c.txt"]) expect(existsSync(path.join(workspace, name))).toBe(true);
      for (const name of ["n1.txt", "n2.txt"]) expect(existsSync(path.join(workspace, name))).toBe(false);
      const view = (id: string) => result.plan.find((subtask) => subtask.id === id);
      expect(view("s1")).toMatchObject({ status: "failed", map: { overallStatus: "ALL_FAILURE", total: 2, failed: 2 } });
      expect(view("s1")?.error).toMatch(/approval_required: file_delete is high-risk and needs a person's approval/);
      expect(view("s2")).toMatchObject({ status: "failed", map: { overallStatus: "ALL_FAILURE" } });
      expect(view("s2")?.error).toMatch(/condition_failed: permission denied: research's grant for file_write does not cover this call: path must start with notes\//);
      expect(view("s3")).toMatchObject({ status: "done", map: { overallStatus: "ALL_SUCCESS", total: 2, succeeded: 2 } });
      expect(view("s4")).toMatchObject({ status: "failed", map: { overallStatus: "ALL_FAILURE", total: 1 } });
      // The items' outputs are in the stash.
      const counts = (await troupe.store.stash.get(view("s3")?.ref ?? "")) as MappedExecutionReport;
      expect(counts.results.map((item) => (item.output as { words: number }).words)).toEqual([2, 2]);
      // One audit row per item call, each refusal audited as denied.
      const rows = await troupe.store.audit.list({ runId: result.runId });
      const summary = rows.map((row) => `${row.subtaskId} ${row.tool} ${row.decision} ${row.errorCode ?? "ok"}`).sort();
      expect(summary).toEqual(
        [
          "s1 file_delete denied approval_required",
          "s1 file_delete denied approval_required",
          "s2 file_write denied condition_failed",
          "s2 file_write denied condition_failed",
          "s3 text_stats allowed ok",
          "s3 text_stats allowed ok",
          "s4 file_delete denied approval_required",
        ].sort(),
      );
      expect(result.metrics.toolCalls).toBe(rows.length);
    } finally {
      troupe.close();
    }
  });
});

describe("budgets through durable worker steps", () => {
  it("stops the run with budget_exhausted when a durable worker's model call is refused, not just its subtask", async () => {
    const { troupe, model } = await engine([planStep([subtask("s1", "execute", "Compute 6 * 7")]), toolStep("s1", "calculator", { expression: "6 * 7" })], { toolsConfig: DELETE_GRANT });
    try {
      const result = await troupe.run({ task: "compute 6 * 7", budget: { maxModelCalls: 2 } });
      model.assertDone();
      expect(result.stopReason).toBe("budget_exhausted");
      expect(result.trace.budget).toEqual({ limit: "maxModelCalls", max: 2, used: 2 });
      expect(result.plan[0]).toMatchObject({ status: "failed", error: "stopped: the run's budget ran out before this subtask finished" });
      expect(result.metrics.llmCalls).toBe(2);
      expect(result.trace.toolCalls.map((call) => call.tool)).toEqual(["calculator"]);
    } finally {
      troupe.close();
    }
  });

  it("counts the model calls replayed after a pause against the budget", async () => {
    const { troupe, model, workspace } = await engine(
      [
        planStep([subtask("s1", "execute", "Log the cleanup, then remove old.txt")]),
        toolStep("s1", "file_append", { path: "log.txt", content: "cleanup started\n" }),
        toolStep("s1", "file_delete", { path: "old.txt" }),
      ],
      { toolsConfig: DELETE_GRANT },
    );
    writeFileSync(path.join(workspace, "old.txt"), "old");
    try {
      const paused = await troupe.run({ task: "clean up", threadId: "budget-pause", budget: { maxModelCalls: 3 } });
      expect(paused.status).toBe("interrupted");
      const resumed = await troupe.resume("budget-pause", { decision: "approve" });
      model.assertDone();
      // The planner's call and the worker's two calls before the pause use the budget up: the
      // approved delete runs, and the worker's next call is refused.
      expect(resumed.stopReason).toBe("budget_exhausted");
      expect(resumed.trace.budget).toEqual({ limit: "maxModelCalls", max: 3, used: 3 });
      expect(model.callsFor("execute", "s1")).toHaveLength(2);
      expect(existsSync(path.join(workspace, "old.txt"))).toBe(false);
      expect(resumed.metrics.llmCalls).toBe(3);
    } finally {
      troupe.close();
    }
  });
});
