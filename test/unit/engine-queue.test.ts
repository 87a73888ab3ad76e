import path from "node:path";
import { RunControl } from "@langchain/langgraph";
import { describe, expect, it } from "vitest";
import type { StoredEvent } from "../../src/core/events.js";
import { Troupe } from "../../src/runtime/engine.js";
import { reconcileRun } from "../../src/runtime/reconcile.js";
import { modelSetOf } from "../../src/testing/model-set.js";
import { answerStep, finalStep, planStep, reviewStep, subtask } from "../../src/testing/script.js";
import { type ScriptStep, ScriptedChatModel } from "../../src/testing/scripted-chat-model.js";
import { tempDir } from "../helpers.js";

async function engine(steps: ScriptStep[], directory = tempDir()): Promise<{ troupe: Troupe; model: ScriptedChatModel; directory: string }> {
  const model = new ScriptedChatModel({ steps });
  const troupe = await Troupe.create({ models: modelSetOf(model), dataDir: path.join(directory, "data"), workspace: path.join(directory, "workspace") });
  return { troupe, model, directory };
}

describe("queued runs (what the server builds on)", () => {
  it("records a run as queued with its owner, starts it later, and refuses a second run on its thread meanwhile", async () => {
    // One subtask: its worker's result is the answer (the fast route), no synthesizer call.
    const { troupe, model } = await engine([planStep([subtask("s1", "research", "Look")]), finalStep("s1", "found"), reviewStep(0.9)]);
    try {
      const record = await troupe.enqueue({ task: "look", threadId: "shared", approvePlan: false }, { owner: "alice", idempotencyKey: "k1", requestHash: "h1" });
      expect(await troupe.store.runs.get(record.id)).toMatchObject({ status: "queued", owner: "alice", idempotencyKey: "k1", requestHash: "h1", startedAt: null });
      await expect(troupe.enqueue({ task: "other", threadId: "shared", onBusy: "reject" }, { owner: "alice" })).rejects.toThrow(/thread shared has a run that is queued/);
      // The name is alice's: her run is kept on her key's thread, and another owner's `shared` is another thread.
      expect(record.threadId).toBe("alice/shared");
      expect(record.request.threadId).toBe("shared");
      await expect(troupe.enqueue({ task: "x", tools: ["calculator", "teleport"] })).rejects.toThrow(/unknown tool: teleport/);
      const result = await troupe.start(record.id);
      expect(result.status).toBe("completed");
      expect((await troupe.store.runs.get(record.id))?.startedAt).toEqual(expect.any(Number));
      await expect(troupe.start(record.id)).rejects.toThrow(/has already started/);
      model.assertDone();
    } finally {
      troupe.close();
    }
  });

  it("keeps the request's settings when it starts (approval, review rounds)", async () => {
    const { troupe } = await engine([planStep([subtask("s1", "research", "Look")])]);
    try {
      const record = await troupe.enqueue({ task: "look", approvePlan: true, maxIterations: 7 });
      const result = await troupe.start(record.id);
      expect(result.status).toBe("interrupted");
      expect(result.interrupt?.kind).toBe("plan-approval");
      const snapshot = await troupe.graph.getState({ configurable: { thread_id: record.threadId } });
      expect((snapshot.values as { settings: { maxIterations: number } }).settings.maxIterations).toBe(7);
    } finally {
      troupe.close();
    }
  });

  it("drains at the next superstep boundary when asked, records the run as suspended, and resumes it without redoing finished work", async () => {
    const plan = planStep([subtask("s1", "research", "First"), subtask("s2", "research", "Second", { dependsOn: ["s1"] })]);
    const { troupe, model, directory } = await engine([plan, finalStep("s1", "first result", { delayMs: 200 })]);
    const record = await troupe.enqueue({ task: "two steps" });
    const control = new RunControl();
    const events: StoredEvent[] = [];
    const result = await troupe.start(record.id, {
      control,
      onEvent: (event) => {
        events.push(event);
        // Asked while s1 runs: s1 finishes, its checkpoint is saved, s2 never starts.
        if (event.type === "subtask-start") control.requestDrain("shutdown");
      },
    });
    expect(result.status).toBe("interrupted");
    expect(result.interrupt).toBeUndefined();
    expect(await troupe.store.runs.get(record.id)).toMatchObject({ status: "interrupted", suspended: "shutdown", finishedAt: null });
    expect(events.filter((event) => event.type === "subtask-end").map((event) => (event as { subtaskId: string }).subtaskId)).toEqual(["s1"]);
    troupe.close();

    const { troupe: next, model: nextModel } = await engine([finalStep("s2", "second result"), reviewStep(0.9), answerStep("both")], directory);
    try {
      const resumed = await next.resume(record.threadId, undefined);
      expect(resumed.status).toBe("completed");
      expect(resumed.plan.map((item) => [item.id, item.attempts])).toEqual([
        ["s1", 1],
        ["s2", 1],
      ]);
      expect((await next.store.runs.get(record.id))?.suspended).toBeNull();
      expect(model.callsFor("research", "s1")).toHaveLength(1);
      expect(nextModel.callsFor("research", "s1")).toHaveLength(0);
      nextModel.assertDone();
    } finally {
      next.close();
    }
  });

  it("starts over a run that died before its first checkpoint, even on a thread with an earlier run", async () => {
    const { troupe, model } = await engine([
      planStep([subtask("s1", "research", "Earlier")], { contains: "earlier task" }),
      finalStep("s1", "earlier result"),
      // Each run reviewed once; one subtask each, so its worker's result is the answer (the fast route, no synthesizer).
      reviewStep(0.9, {}, { times: 2 }),
      planStep([subtask("s1", "research", "Later")], { contains: "later task" }),
      finalStep("s1", "later result"),
    ]);
    try {
      expect((await troupe.run({ task: "the earlier task", threadId: "t1" })).status).toBe("completed");
      const record = await troupe.enqueue({ task: "the later task", threadId: "t1" });
      // As if a server had marked it running and died before LangGraph wrote anything.
      await troupe.store.runs.update(record.id, { status: "running", startedAt: Date.now(), pid: 999_999_999, host: "another-host" });
      const result = await troupe.resume("t1", undefined);
      expect(result.runId).toBe(record.id);
      expect(result.status).toBe("completed");
      expect(result.answer).toBe("later result");
      model.assertDone();
    } finally {
      troupe.close();
    }
  });

  it("settles a record from its checkpoint when its process died after an interrupt was saved", async () => {
    const { troupe } = await engine([planStep([subtask("s1", "research", "Look")])]);
    try {
      const record = await troupe.enqueue({ task: "look", approvePlan: true });
      await troupe.start(record.id);
      // The process died between the checkpoint and the record update.
      await troupe.store.runs.update(record.id, { status: "running", interrupt: null, pid: 999_999_999, host: "another-host" });
      await expect(troupe.resume(record.threadId, undefined)).rejects.toThrow(/waiting for plan-approval/);
      const events = await reconcileRun(troupe, record.id);
      expect(events.map((event) => event.type)).toEqual(["approval-request", "run-end"]);
      expect(await troupe.store.runs.get(record.id)).toMatchObject({ status: "interrupted", interrupt: { kind: "plan-approval" } });
    } finally {
      troupe.close();
    }
  });

  it("records a run cancelled as it starts, before the graph wrote its first checkpoint, as cancelled; the drive says when it writes the end", async () => {
    const { troupe, model } = await engine([planStep([subtask("s1", "research", "Look")]), finalStep("s1", "found"), reviewStep(0.9)]);
    try {
      const record = await troupe.enqueue({ task: "look" });
      // The cancel came once the run said running: its drive stops before the graph's first checkpoint.
      const controller = new AbortController();
      controller.abort();
      const seen: string[] = [];
      const result = await troupe.start(record.id, {
        signal: controller.signal,
        onEnding: (ending) => seen.push(`ending ${ending.status}`),
        onEvent: (event) => seen.push(event.type),
      });
      expect(result.status).toBe("cancelled");
      expect(await troupe.store.runs.get(record.id)).toMatchObject({ status: "cancelled", stopReason: "cancelled" });
      // The end is written (onEnding) before its event is told.
      expect(seen.at(-2)).toBe("ending cancelled");
      expect(seen.at(-1)).toBe("run-end");
      expect(model.calls).toHaveLength(0);
    } finally {
      troupe.close();
    }
  });
});
