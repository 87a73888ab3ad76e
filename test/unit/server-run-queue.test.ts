import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { describe, expect, it } from "vitest";
import { makeApp, waitFor } from "../server-helpers.js";

// The SQLite server takes its runs through the same dispatcher as a Postgres worker, from its own
// run queue (src/store/queue/sqlite.test.ts has the queue's own behaviour): what a killed process
// left is offered to it again.

/** A pid no process has: the largest Linux allows, plus one. */
const DEAD_PID = 4_194_305;

describe("a SQLite server's run queue", () => {
  it("takes up a run a killed process left running, counts the crash, and fails it once it has crashed too often", async () => {
    const app = await makeApp({ config: { maxRunning: 1 } });
    const left = await app.troupe.store.runs.create({ id: `run-${randomUUID()}`, threadId: `thread-${randomUUID()}`, task: "compute 2 + 3", status: "running", request: { task: "compute 2 + 3" }, pid: DEAD_PID, host: hostname(), owner: "" });
    expect(await app.tasks.recover()).toEqual({ resumed: 1, queued: 0, crashed: 0 });
    const done = await waitFor(async () => {
      const record = await app.troupe.store.runs.get(left.id);
      return record?.status === "completed" ? record : undefined;
    }, "the run taken up to complete");
    expect(done.crashes).toBe(0);
    expect(done.answer).not.toBeNull();

    // One that already died once while it ran (TROUPE_MAX_CRASHES 2): failed, naming the crashes, never driven again.
    const doomed = await app.troupe.store.runs.create({ id: `run-${randomUUID()}`, threadId: `thread-${randomUUID()}`, task: "compute 1 + 1", status: "running", request: { task: "compute 1 + 1" }, pid: DEAD_PID, host: hostname(), owner: "" });
    await app.troupe.store.runs.recordCrash(doomed.id);
    expect(await app.tasks.recover()).toEqual({ resumed: 0, queued: 0, crashed: 1 });
    expect((await app.troupe.store.runs.get(doomed.id))?.status).toBe("failed");
  });
});
