import path from "node:path";
import { describe, expect, it } from "vitest";
import { Troupe } from "../src/runtime/engine.js";
import { modelSetOf } from "../src/testing/model-set.js";
import { ScriptedChatModel } from "../src/testing/scripted-chat-model.js";
import { tempDir } from "./helpers.js";
import { finalStep, planStep, reviewStep, subtask } from "../src/testing/script.js";
import { envelope, makeApp, waitFor, waitForStatus } from "./server-helpers.js";

const submit = async (app: Awaited<ReturnType<typeof makeApp>>, body: Record<string, unknown>) => {
  const response = await app.app.inject({ method: "POST", url: "/api/v1/execute", payload: body });
  return { status: response.statusCode, body: envelope<{ task_id: string; thread_id: string; status: string }>(response) };
};

describe("busy threads: a new task on a thread whose run is running or waiting", () => {
  // Each plan has one worker subtask: the critic reviews it and its result is the answer (the fast route, no synthesizer).
  it("reject refuses it; enqueue (the default) runs it once the run in the way has ended", async () => {
    const app = await makeApp({
      steps: [
        planStep([subtask("s1", "execute", "First")], { contains: "first task" }),
        finalStep("s1", "one", { contains: "First" }),
        reviewStep(0.9, {}, { contains: "first task" }),
        planStep([subtask("s1", "execute", "Second")], { contains: "second task" }),
        finalStep("s1", "two", { contains: "Second" }),
        reviewStep(0.9, {}, { contains: "second task" }),
      ],
    });
    const first = await submit(app, { task: "the first task", thread_id: "t1", approve_plan: true });
    await waitForStatus(app, first.body.data.task_id, ["interrupted"]);
    const refused = await submit(app, { task: "the second task", thread_id: "t1", on_busy: "reject" });
    expect([refused.status, refused.body.code]).toEqual([409, "thread_busy"]);
    const second = await submit(app, { task: "the second task", thread_id: "t1" });
    expect(second.status).toBe(202);
    const waiting = await app.troupe.store.runs.get(second.body.data.task_id);
    expect(waiting).toMatchObject({ status: "queued", waitsFor: first.body.data.task_id });
    // It stays queued while the first waits for a person…
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(await app.troupe.store.runs.get(second.body.data.task_id)).toMatchObject({ status: "queued" });
    // …and runs once the first has ended.
    await app.app.inject({ method: "POST", url: `/api/v1/tasks/${first.body.data.task_id}/resume`, payload: { decision: "approve" } });
    await waitForStatus(app, first.body.data.task_id, ["completed"]);
    const done = await waitForStatus(app, second.body.data.task_id, ["completed"]);
    expect((done.result as { answer: string }).answer).toBe("two");
    const [a, b] = [await app.troupe.store.runs.get(first.body.data.task_id), await app.troupe.store.runs.get(second.body.data.task_id)];
    expect((b?.startedAt ?? 0) >= (a?.finishedAt ?? Infinity)).toBe(true);
    app.model?.assertDone();
  });

  it("interrupt stops the running run at its next superstep boundary and starts the new one on the thread's state", async () => {
    const app = await makeApp({
      steps: [
        planStep([subtask("s1", "execute", "Slow first step"), subtask("s2", "execute", "Never reached", { dependsOn: ["s1"] })], { contains: "long task" }),
        finalStep("s1", "slow one", { contains: "Slow first step", delayMs: 1_500 }),
        planStep([subtask("s1", "execute", "Quick")], { contains: "urgent task" }),
        finalStep("s1", "quick", { contains: "Quick" }),
        reviewStep(0.9, {}, { contains: "urgent task" }),
      ],
    });
    const first = await submit(app, { task: "the long task", thread_id: "t2", approve_plan: true });
    await waitForStatus(app, first.body.data.task_id, ["interrupted"]);
    await app.app.inject({ method: "POST", url: `/api/v1/tasks/${first.body.data.task_id}/resume`, payload: { decision: "approve" } });
    await waitFor(() => app.model?.calls.some((call) => call.subtask === "s1" && call.lastMessage.includes("Slow")) || undefined, "the slow step to start");
    const second = await submit(app, { task: "the urgent task", thread_id: "t2", on_busy: "interrupt" });
    expect(second.status).toBe(202);
    const stopped = await waitForStatus(app, first.body.data.task_id, ["cancelled"]);
    expect(stopped.error).toContain(`make way for run ${second.body.data.task_id}`);
    const done = await waitForStatus(app, second.body.data.task_id, ["completed"]);
    expect((done.result as { answer: string }).answer).toBe("quick");
    // The slow step finished (its superstep was let end), s2 never started.
    expect(app.model?.calls.filter((call) => call.lastMessage.includes("Never reached"))).toHaveLength(0);
    expect((await app.troupe.store.runs.get(first.body.data.task_id))?.supersededBy).toBe(second.body.data.task_id);
    app.model?.assertDone();
  });

  it("rollback discards the run in the way and starts from the thread's state before it", async () => {
    const app = await makeApp({
      steps: [
        planStep([subtask("s1", "execute", "Base")], { contains: "base task" }),
        finalStep("s1", "base", { contains: "Base" }),
        reviewStep(0.9, {}, { contains: "base task" }),
        planStep([subtask("s1", "execute", "Wrong turn")], { contains: "mistaken task" }),
        finalStep("s1", "wrong", { contains: "Wrong turn", delayMs: 3_000 }),
        planStep([subtask("s1", "execute", "Right turn")], { contains: "corrected task" }),
        finalStep("s1", "right", { contains: "Right turn" }),
        reviewStep(0.9, {}, { contains: "corrected task" }),
      ],
    });
    const base = await submit(app, { task: "the base task", thread_id: "t3" });
    await waitForStatus(app, base.body.data.task_id, ["completed"]);
    const mistaken = await submit(app, { task: "the mistaken task", thread_id: "t3" });
    await waitFor(() => app.model?.calls.some((call) => call.lastMessage.includes("Wrong turn")) || undefined, "the mistaken run to work");
    const corrected = await submit(app, { task: "the corrected task", thread_id: "t3", on_busy: "rollback" });
    expect(corrected.status).toBe(202);
    const done = await waitForStatus(app, corrected.body.data.task_id, ["completed"]);
    expect((done.result as { answer: string }).answer).toBe("right");
    // The mistaken run is gone, with its checkpoints; the thread's history is the base run's, then the corrected one's.
    expect(await app.troupe.store.runs.get(mistaken.body.data.task_id)).toBeUndefined();
    const owners = new Set((await app.troupe.history("t3")).map((entry) => entry.runId));
    expect(owners).toEqual(new Set([base.body.data.task_id, corrected.body.data.task_id]));
    // The corrected run saw the base run as its conversation, not the mistaken one.
    const planner = app.model?.calls.find((call) => call.role === "planner" && call.lastMessage.includes("corrected task"));
    expect(planner?.lastMessage).toContain("base task");
    expect(planner?.lastMessage).not.toContain("mistaken task");
  });

  it("in the library and CLI path: interrupt cancels a run waiting for a person, and the new run starts on the thread's state", async () => {
    const directory = tempDir();
    const model = new ScriptedChatModel({
      steps: [
        planStep([subtask("s1", "execute", "Wait for me")], { contains: "waiting task" }),
        planStep([subtask("s1", "execute", "Now")], { contains: "replacing task" }),
        finalStep("s1", "now", { contains: "Now" }),
        reviewStep(0.9, {}, { contains: "replacing task" }),
      ],
    });
    const troupe = await Troupe.create({ models: modelSetOf(model), dataDir: path.join(directory, "data"), workspace: path.join(directory, "ws") });
    try {
      const waiting = await troupe.run({ task: "the waiting task", threadId: "lib", approvePlan: true });
      expect(waiting.status).toBe("interrupted");
      await expect(troupe.run({ task: "x", threadId: "lib", onBusy: "reject" })).rejects.toMatchObject({ code: "thread_busy" });
      const replacing = await troupe.run({ task: "the replacing task", threadId: "lib", onBusy: "interrupt" });
      expect(replacing).toMatchObject({ status: "completed", answer: "now" });
      expect(await troupe.store.runs.get(waiting.runId)).toMatchObject({ status: "cancelled", supersededBy: replacing.runId });
      // The waiting run's pending approval was left behind: the new run planned and ran its own plan.
      expect(replacing.plan.map((view) => view.label)).toEqual(["Now"]);
      model.assertDone();
    } finally {
      await troupe.shutdown();
    }
  });
});
