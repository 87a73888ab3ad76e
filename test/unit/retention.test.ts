import { existsSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { Troupe } from "../../src/runtime/engine.js";
import { modelSetOf } from "../../src/testing/model-set.js";
import { answerStep, planStep, reviewStep, subtask } from "../../src/testing/script.js";
import { ScriptedChatModel } from "../../src/testing/scripted-chat-model.js";
import { createBuiltinRegistry } from "../../src/tools/builtin/index.js";
import { largeTextTool, tempDir } from "../helpers.js";

/** A run whose one subtask stashes a large text (the tool's), reviewed and answered. */
const bigRun = (id: string, extra: Record<string, unknown> = {}) => [
  planStep([subtask("s1", "research", `Make data ${id}`, { tool: "make_data" })], extra),
  reviewStep(0.9),
  answerStep(`done ${id}`),
];

describe("retention", () => {
  it("gc removes finished runs with their checkpoints, events and stash, never a running or waiting one, and the data file shrinks", async () => {
    const directory = tempDir();
    const tools = createBuiltinRegistry();
    tools.register(largeTextTool("x".repeat(400_000)));
    const model = new ScriptedChatModel({
      steps: [...bigRun("a"), ...bigRun("b"), ...bigRun("c"), ...bigRun("d"), planStep([subtask("s1", "research", "Make data w", { tool: "make_data" })])],
    });
    const troupe = await Troupe.create({ models: modelSetOf(model), dataDir: path.join(directory, "data"), workspace: path.join(directory, "ws"), tools });
    try {
      const a = await troupe.run({ task: "a" });
      const b = await troupe.run({ task: "b" });
      // Two runs on one thread: the older collected, the newer waiting for a person (kept).
      const c = await troupe.run({ task: "c", threadId: "shared" });
      const d = await troupe.run({ task: "d", threadId: "other" });
      const waiting = await troupe.run({ task: "w", threadId: "shared", approvePlan: true });
      expect([a.status, b.status, c.status, d.status, waiting.status]).toEqual(["completed", "completed", "completed", "completed", "interrupted"]);
      // A run recorded as running (its process elsewhere) is never collected.
      const running = await troupe.store.runs.create({ id: "run-running", threadId: "busy", task: "busy", status: "running", request: { task: "busy" }, pid: process.pid, host: "here" });
      const file = path.join(directory, "data", "troupe.db");

      const dry = await troupe.gc({ cutoff: Date.now() + 1, keep: ["failed"], dryRun: true });
      expect(dry).toMatchObject({ dryRun: true, runs: 4, byStatus: { completed: 4 }, threads: { deleted: 3, pruned: 1 } });
      expect(dry.stashValues).toBeGreaterThanOrEqual(4);
      expect(await troupe.store.runs.get(a.runId)).toBeDefined();

      // The data file with its write-ahead log: what the database takes on disk.
      const onDisk = (): number => statSync(file).size + (existsSync(`${file}-wal`) ? statSync(`${file}-wal`).size : 0);
      const sizeBefore = onDisk();
      const report = await troupe.gc({ cutoff: Date.now() + 1 });
      expect(report).toMatchObject({ dryRun: false, runs: 4, threads: { deleted: 3, pruned: 1 } });
      for (const gone of [a, b, c, d]) {
        expect(await troupe.store.runs.get(gone.runId)).toBeUndefined();
        expect(await troupe.store.events.list(gone.runId)).toEqual([]);
        await expect(troupe.store.stash.get(`stash:${gone.runId}/s1`)).rejects.toMatchObject({ code: "stash_missing" });
      }
      expect((await troupe.graph.getState({ configurable: { thread_id: a.threadId } })).values).toEqual({});
      // The waiting run keeps its thread's checkpoints (the collected run's are pruned) and can go on.
      expect(await troupe.store.runs.get(waiting.runId)).toMatchObject({ status: "interrupted" });
      const shared = await troupe.history("shared");
      expect(shared.map((entry) => entry.runId)).toEqual(shared.map(() => waiting.runId));
      expect(await troupe.store.runs.get(running.id)).toMatchObject({ status: "running" });
      expect(report.bytesAfter).toBeLessThan(report.bytesBefore);
      expect(onDisk()).toBeLessThan(sizeBefore / 2);
      const resumed = await troupe.resume("shared", { decision: "reject", feedback: "stop" });
      expect(resumed.runId).toBe(waiting.runId);

      await expect(troupe.deleteRun(running.id)).rejects.toMatchObject({ code: "run_active" });
      await expect(troupe.deleteRun("run-nope")).rejects.toMatchObject({ code: "unknown_run" });
    } finally {
      await troupe.shutdown();
    }
  });
});
