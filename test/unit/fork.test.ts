import path from "node:path";
import { describe, expect, it } from "vitest";
import { Troupe } from "../../src/runtime/engine.js";
import { modelSetOf } from "../../src/testing/model-set.js";
import { answerStep, finalStep, planStep, reviewStep, subtask } from "../../src/testing/script.js";
import { ScriptedChatModel } from "../../src/testing/scripted-chat-model.js";
import { tempDir } from "../helpers.js";

describe("fork and replay", () => {
  it("forks from a middle subtask: upstream results are reused, downstream runs again, the original is untouched", async () => {
    const directory = tempDir();
    const model = new ScriptedChatModel({
      steps: [
        planStep([
          subtask("s1", "research", "Find the base figure"),
          subtask("s2", "execute", "Double it", { dependsOn: ["s1"], args: { base: { ref: "s1", path: "$" } } }),
          subtask("s3", "execute", "Describe it", { dependsOn: ["s2"], args: { doubled: { ref: "s2", path: "$" } } }),
        ]),
        finalStep("s1", "21"),
        finalStep("s2", "42"),
        finalStep("s3", "forty-two"),
        reviewStep(0.9),
        answerStep("The answer is forty-two."),
        // The fork: s2 and s3 again, then review and answer.
        finalStep("s2", "44", { contains: "21" }),
        finalStep("s3", "forty-four", { contains: "44" }),
        reviewStep(0.95),
        answerStep("The answer is forty-four."),
      ],
    });
    const troupe = await Troupe.create({ models: modelSetOf(model), dataDir: path.join(directory, "data"), workspace: path.join(directory, "ws") });
    try {
      const original = await troupe.run({ task: "double and describe" });
      expect(original.status).toBe("completed");
      const before = model.calls.length;
      const history = await troupe.history(original.threadId);
      expect(history.length).toBeGreaterThan(2);
      expect(history.some((entry) => entry.after.includes("review"))).toBe(true);
      const originalView = await troupe.show(original.runId);

      const fork = await troupe.fork(original.runId, { from: "s2" });
      expect(fork.status).toBe("completed");
      expect(fork.threadId).not.toBe(original.threadId);
      expect(fork.answer).toBe("The answer is forty-four.");
      // No model call for s1; s2 and s3 ran again.
      const forkCalls = model.calls.slice(before);
      expect(forkCalls.filter((call) => call.subtask === "s1")).toHaveLength(0);
      expect(forkCalls.filter((call) => call.subtask === "s2")).toHaveLength(1);
      expect(forkCalls.filter((call) => call.subtask === "s3")).toHaveLength(1);
      model.assertDone();
      expect(fork.metrics.llmCalls).toBe(4);
      // The fork's s1 result is its own (copied), so the original can go without taking it along.
      const s1 = fork.plan.find((view) => view.id === "s1");
      expect(s1?.ref).toBe(`stash:${fork.runId}/s1`);
      expect(await troupe.store.stash.get(s1?.ref as string)).toBe(21);
      // The original is untouched: its record, its thread's latest state.
      const after = await troupe.show(original.runId);
      expect(after.answer).toBe(originalView.answer);
      expect(after.plan.map((view) => view.summary)).toEqual(originalView.plan.map((view) => view.summary));
      const record = await troupe.store.runs.get(fork.runId);
      expect(record?.forkedFrom).toMatchObject({ runId: original.runId, threadId: original.threadId, subtaskId: "s2" });
    } finally {
      await troupe.shutdown();
    }
  });

  it("forks with an edited plan and new arguments: changed subtasks and their dependents run, a direct tool step upstream is not called again", async () => {
    const directory = tempDir();
    const model = new ScriptedChatModel({
      steps: [
        planStep([
          subtask("s1", "execute", "Compute the base", { tool: "calculator", args: { expression: { value: "6*7" } } }),
          subtask("s2", "execute", "Say it", { dependsOn: ["s1"], args: { n: { ref: "s1", path: "$" } } }),
          subtask("s3", "execute", "Unrelated note"),
        ]),
        finalStep("s2", "forty-two"),
        finalStep("s3", "a note"),
        reviewStep(0.9),
        answerStep("42"),
        // The fork: the edited s2 (and the new s4 after it) run; s1 and s3 keep their results.
        finalStep("s2", "FORTY-TWO", { contains: "Shout it" }),
        finalStep("s4", "done", { contains: "FORTY-TWO" }),
        reviewStep(0.9),
        answerStep("FORTY-TWO"),
      ],
    });
    const troupe = await Troupe.create({ models: modelSetOf(model), dataDir: path.join(directory, "data"), workspace: path.join(directory, "ws") });
    try {
      const original = await troupe.run({ task: "say 6*7" });
      expect(original.status).toBe("completed");
      const calculatorCalls = async (runId: string): Promise<number> => (await troupe.store.audit.list({ runId, tool: "calculator" })).length;
      expect(await calculatorCalls(original.runId)).toBe(1);
      const plan = original.plan.map(({ id, label, agent, dependsOn, args, tool }) => ({ id, label, agent, dependsOn, args, ...(tool ? { tool } : {}) }));
      const edited = [
        ...plan.map((item) => (item.id === "s2" ? { ...item, label: "Shout it" } : item)),
        { id: "s4", label: "Confirm it", agent: "execute", dependsOn: ["s2"], args: { said: { ref: "s2", path: "$" } } },
      ];
      await expect(troupe.fork(original.runId, { from: "s9" })).rejects.toMatchObject({ code: "unknown_fork_point" });
      await expect(troupe.fork(original.runId, { from: "s2", plan: [{ id: "x", label: "y", agent: "poet" }] })).rejects.toMatchObject({ code: "invalid_plan" });
      await expect(troupe.fork(original.runId, { from: "s2", args: { s7: { n: 1 } } })).rejects.toMatchObject({ code: "unknown_subtask" });
      const history = await troupe.history(original.threadId);
      const afterPlan = history.find((entry) => entry.runId === original.runId && entry.next.includes("critic"));
      expect(afterPlan).toBeDefined();
      const fork = await troupe.fork(original.runId, { from: "s2", plan: edited });
      expect(fork.status).toBe("completed");
      expect(fork.plan.map((view) => view.id)).toEqual(["s1", "s2", "s3", "s4"]);
      expect(fork.plan.find((view) => view.id === "s2")?.label).toBe("Shout it");
      expect(fork.plan.find((view) => view.id === "s3")?.summary).toBe("a note");
      expect(await calculatorCalls(fork.runId)).toBe(0);
      model.assertDone();
    } finally {
      await troupe.shutdown();
    }
  });

  it("forks from a checkpoint: what followed it runs again on a new thread", async () => {
    const directory = tempDir();
    const model = new ScriptedChatModel({
      steps: [
        planStep([subtask("s1", "execute", "One"), subtask("s2", "execute", "Two")]),
        finalStep("s1", "one"),
        finalStep("s2", "two"),
        reviewStep(0.9),
        answerStep("one and two"),
        // From the checkpoint after the subtasks ended: only the review and the answer again.
        reviewStep(0.8),
        answerStep("one and two, again"),
      ],
    });
    const troupe = await Troupe.create({ models: modelSetOf(model), dataDir: path.join(directory, "data"), workspace: path.join(directory, "ws") });
    try {
      const original = await troupe.run({ task: "one and two" });
      const history = await troupe.history(original.threadId);
      const point = history.find((entry) => entry.next.includes("critic"));
      expect(point?.after).toMatch(/s1 done, s2 done/);
      const ended = history.at(-1);
      await expect(troupe.fork(original.runId, { from: ended?.checkpointId as string })).rejects.toMatchObject({ code: "checkpoint_at_end" });
      const before = model.calls.length;
      const fork = await troupe.fork(original.runId, { from: point?.checkpointId as string });
      expect(fork.status).toBe("completed");
      expect(fork.answer).toBe("one and two, again");
      expect(model.calls.slice(before).map((call) => call.role)).toEqual(["critic", "synthesizer"]);
      const forkHistory = await troupe.history(fork.threadId);
      expect(forkHistory[0]?.source).toBe("update");
      expect(forkHistory[0]?.after).toContain("forked");
      model.assertDone();
    } finally {
      await troupe.shutdown();
    }
  });
});
