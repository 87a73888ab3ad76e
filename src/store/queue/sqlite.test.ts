import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../../../test/wait.js";
import { type NewRun, type RunJob, type SqliteStore, openSqliteStore } from "../index.js";

// The SQLite run queue as the server's dispatcher uses it, fed by the run store on the same
// database: what `take` hands out after each kind of write.

const directories: string[] = [];
const stores: SqliteStore[] = [];

function open(directory?: string): SqliteStore {
  const dir = directory ?? mkdtempSync(path.join(tmpdir(), "troupe-queue-"));
  if (!directory) directories.push(dir);
  const store = openSqliteStore(dir);
  stores.push(store);
  return store;
}

afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  for (const dir of directories.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function newRun(owner: string | null, fields: Partial<NewRun> = {}): NewRun {
  return { id: `run-${randomUUID()}`, threadId: `thread-${randomUUID()}`, task: "a task", status: "queued", request: { task: "a task" }, pid: null, host: null, owner, ...fields };
}

async function submit(store: SqliteStore, owner: string | null, fields: Partial<NewRun> = {}): Promise<string> {
  return (await store.runs.create(newRun(owner, fields))).id;
}

const until = <T>(probe: () => Promise<T | undefined>, what: string): Promise<T> => waitFor(probe, what, 50);

describe("the SQLite run queue", () => {
  it("keeps nothing until a server opens it (a CLI process opening the store holds no runs in memory)", async () => {
    const store = open();
    await submit(store, "alice");
    expect(await store.runQueue.take(10)).toEqual([]);
    store.runQueue.open();
    const id = await submit(store, "alice");
    expect((await store.runQueue.take(10)).map((job) => job.runId)).toEqual([id]);
    expect(store.runQueue.shared).toBe(false);
  });

  it("takes round-robin across owners, first in first out within one: a flood does not hold up another owner's run", async () => {
    const store = open();
    store.runQueue.open();
    const alice = [await submit(store, "alice"), await submit(store, "alice"), await submit(store, "alice")];
    const bob = await submit(store, "bob");
    const open1 = await submit(store, null);
    const order: string[] = [];
    for (;;) {
      const [job] = await store.runQueue.take(1);
      if (!job) break;
      order.push(job.runId);
      await store.runQueue.complete(job);
    }
    expect(order).toEqual([alice[0], bob, open1, alice[1], alice[2]]);
    expect(await store.runQueue.depth()).toBe(0);
  });

  it("holds each owner to the per-key limit inside take; the slot it cannot use goes to another owner", async () => {
    const store = open();
    store.runQueue.open();
    const alice = [await submit(store, "alice"), await submit(store, "alice"), await submit(store, "alice")];
    const bob = await submit(store, "bob");
    const first = await store.runQueue.take(10, { perOwner: 1 });
    expect(first.map((job) => job.runId)).toEqual([alice[0], bob]);
    // Alice is at her limit: nothing more for her until one of hers completes.
    expect(await store.runQueue.take(10, { perOwner: 1 })).toEqual([]);
    expect(await store.runQueue.depth()).toBe(2);
    await store.runQueue.complete(first[0] as RunJob);
    expect((await store.runQueue.take(10, { perOwner: 1 })).map((job) => job.runId)).toEqual([alice[1]]);
  });

  it("parks a run waiting for another run of its thread, and hands it over once that run ends (here, or in another process)", async () => {
    const store = open();
    store.runQueue.open();
    const threadId = `thread-${randomUUID()}`;
    const first = await submit(store, "alice", { threadId });
    const [job] = await store.runQueue.take(1);
    expect(job?.runId).toBe(first);
    await store.runs.update(first, { status: "running", pid: process.pid });
    const second = await submit(store, "alice", { threadId, waitsFor: first });
    expect(await store.runQueue.take(10)).toEqual([]);
    await store.runs.update(first, { status: "completed", finishedAt: Date.now() });
    await store.runQueue.complete(job as RunJob);
    // Released by the same store: handed over in the change that ended the run.
    expect((await store.runQueue.take(10)).map((taken) => taken.runId)).toEqual([second]);

    // Released by another process's store on the same database: found on the next look.
    const third = await submit(store, "alice", { threadId, waitsFor: second });
    const other = open(store.directory);
    await other.runs.update(third, { waitsFor: null });
    const taken = await until(async () => {
      const jobs = await store.runQueue.take(10);
      return jobs.length > 0 ? jobs : undefined;
    }, "the released run");
    expect(taken.map((found) => found.runId)).toEqual([third]);
  });

  it("leaves a run another process queued to that process, even when this store releases it", async () => {
    const store = open();
    store.runQueue.open();
    const threadId = `thread-${randomUUID()}`;
    const first = await submit(store, "alice", { threadId });
    const [job] = await store.runQueue.take(1);
    await store.runs.update(first, { status: "running", pid: process.pid });
    // A `troupe run --on-busy enqueue` in another process waits for it, to start the run itself.
    const cli = open(store.directory);
    const waiter = await submit(cli, null, { threadId, waitsFor: first });
    await store.runs.update(first, { status: "completed", finishedAt: Date.now() });
    await store.runQueue.complete(job as RunJob);
    expect((await store.runs.get(waiter))?.waitsFor).toBeNull();
    expect(await store.runQueue.take(10)).toEqual([]);
  });

  it("never hands out a queued run that was cancelled", async () => {
    const store = open();
    store.runQueue.open();
    const cancelled = await submit(store, "alice");
    const kept = await submit(store, "alice");
    expect(await store.runs.update(cancelled, { status: "cancelled", stopReason: "cancelled", finishedAt: Date.now() }, { ifStatus: ["queued"] })).toBe(true);
    expect((await store.runQueue.take(10)).map((job) => job.runId)).toEqual([kept]);
    expect(await store.runQueue.take(10)).toEqual([]);
  });

  it("gives a released job back after a short wait, as a new attempt, ahead of its owner's newer runs", async () => {
    const store = open();
    store.runQueue.open();
    const busy = await submit(store, "alice");
    const [job] = await store.runQueue.take(1);
    const newer = await submit(store, "alice");
    await store.runQueue.release(job as RunJob, "another process holds the thread");
    // At once only the newer run is there; the released one comes back shortly after.
    const now = await store.runQueue.take(1);
    expect(now.map((taken) => taken.runId)).toEqual([newer]);
    const again = await until(async () => (await store.runQueue.take(1))[0], "the released job");
    expect(again).toMatchObject({ runId: busy, attempt: 1 });
  });

  it("wakes a waiting taker when a run is offered or a slot frees, and times out otherwise", async () => {
    const store = open();
    store.runQueue.open();
    expect(await store.runQueue.take(1)).toEqual([]);
    const started = Date.now();
    const waiting = store.runQueue.wait(30_000);
    await submit(store, "alice");
    await waiting;
    expect(Date.now() - started).toBeLessThan(30_000);
    await store.runQueue.take(1);
    await store.runQueue.wait(10);
  });

  it("a run a person answered goes before its owner's new runs", async () => {
    const store = open();
    store.runQueue.open();
    const answered = await submit(store, "alice");
    const [job] = await store.runQueue.take(1);
    await store.runs.update(answered, { status: "interrupted" });
    await store.runQueue.complete(job as RunJob);
    const newer = await submit(store, "alice");
    await store.runs.update(answered, { status: "queued" }, { ifStatus: ["interrupted"] });
    expect((await store.runQueue.take(2)).map((taken) => taken.runId)).toEqual([answered, newer]);
  });
});
