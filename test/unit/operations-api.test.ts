import { describe, expect, it } from "vitest";
import { answerStep, finalStep, planStep, reviewStep, subtask } from "../../src/testing/script.js";
import { envelope, makeApp, waitForStatus } from "../server-helpers.js";

describe("forks, history and deletes over HTTP", () => {
  it("forks a task from a subtask (owner only), lists a thread's history, and deletes tasks and threads that have stopped", async () => {
    const app = await makeApp({
      config: { apiKeys: "alice:a-key,bob:b-key" },
      steps: [
        planStep([subtask("s1", "execute", "First"), subtask("s2", "execute", "Second", { dependsOn: ["s1"] })]),
        finalStep("s1", "one"),
        finalStep("s2", "two"),
        reviewStep(0.9),
        answerStep("one, two"),
        finalStep("s2", "two again"),
        reviewStep(0.9),
        answerStep("one, two again"),
      ],
    });
    const alice = { authorization: "Bearer a-key" };
    const bob = { authorization: "Bearer b-key" };
    const submitted = envelope<{ task_id: string; thread_id: string }>(await app.app.inject({ method: "POST", url: "/api/v1/execute", headers: alice, payload: { task: "two steps", thread_id: "alice-thread" } })).data;
    await waitForStatus(app, submitted.task_id, ["completed"], alice);
    // Another key's task is as good as missing: no fork, no history, no delete.
    expect((await app.app.inject({ method: "POST", url: `/api/v1/tasks/${submitted.task_id}/fork`, headers: bob, payload: { from: "s2" } })).statusCode).toBe(404);
    expect((await app.app.inject({ method: "GET", url: "/api/v1/threads/alice-thread/history", headers: bob })).statusCode).toBe(404);
    expect((await app.app.inject({ method: "DELETE", url: `/api/v1/tasks/${submitted.task_id}`, headers: bob })).statusCode).toBe(404);
    const history = envelope<{ checkpoints: Array<{ checkpoint_id: string; after: string; task_id: string }> }>(await app.app.inject({ method: "GET", url: "/api/v1/threads/alice-thread/history", headers: alice })).data;
    expect(history.checkpoints.some((entry) => entry.after.includes("review round 1: passed"))).toBe(true);
    expect(history.checkpoints.every((entry) => entry.task_id === submitted.task_id)).toBe(true);
    const bad = await app.app.inject({ method: "POST", url: `/api/v1/tasks/${submitted.task_id}/fork`, headers: alice, payload: { from: "s9" } });
    expect([bad.statusCode, envelope(bad).code]).toEqual([404, "unknown_fork_point"]);
    const forked = await app.app.inject({ method: "POST", url: `/api/v1/tasks/${submitted.task_id}/fork`, headers: alice, payload: { from: "s2" } });
    expect(forked.statusCode).toBe(202);
    const fork = envelope<{ task_id: string; thread_id: string; forked_from: { task_id: string; subtask_id: string } }>(forked).data;
    expect(fork.forked_from).toMatchObject({ task_id: submitted.task_id, subtask_id: "s2" });
    const done = await waitForStatus(app, fork.task_id, ["completed"], alice);
    expect((done.result as { answer: string }).answer).toBe("one, two again");
    // A task that has not stopped is not deleted; stopped ones are, their thread with them.
    const deleted = await app.app.inject({ method: "DELETE", url: `/api/v1/tasks/${submitted.task_id}`, headers: alice });
    expect(envelope<{ runs: number; threads_deleted: number }>(deleted).data).toMatchObject({ runs: 1, threads_deleted: 1 });
    expect((await app.app.inject({ method: "GET", url: `/api/v1/tasks/${submitted.task_id}`, headers: alice })).statusCode).toBe(404);
    // The fork does not need the original: its results were copied.
    expect((await app.app.inject({ method: "GET", url: `/api/v1/tasks/${fork.task_id}`, headers: alice })).statusCode).toBe(200);
    const thread = await app.app.inject({ method: "DELETE", url: `/api/v1/threads/${fork.thread_id}`, headers: alice });
    expect(envelope<{ runs: number }>(thread).data.runs).toBe(1);
    expect((await app.app.inject({ method: "DELETE", url: `/api/v1/threads/${fork.thread_id}`, headers: alice })).statusCode).toBe(404);
    app.model?.assertDone();
  });
});
