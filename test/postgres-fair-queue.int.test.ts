import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type NewRun, openStore } from "../src/store/index.js";
import type { PostgresStore } from "../src/store/postgres-store.js";
import { freshDatabase } from "./postgres.js";

// The Postgres run queue (pg-boss) hands runs out round-robin by API key across the processes of a
// deployment: two stores on one database stand for two worker processes, fed by the run store as
// the API writes runs.

const directories: string[] = [];
const stores: PostgresStore[] = [];

async function open(databaseUrl: string): Promise<PostgresStore> {
  const dataDir = mkdtempSync(path.join(tmpdir(), "troupe-pg-fair-"));
  directories.push(dataDir);
  const store = (await openStore({ dataDir, databaseUrl })) as PostgresStore;
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

async function submit(store: PostgresStore, owner: string | null, count = 1, fields: Partial<NewRun> = {}): Promise<string[]> {
  const ids: string[] = [];
  for (let index = 0; index < count; index += 1) ids.push((await store.runs.create(newRun(owner, fields))).id);
  return ids;
}

describe("the Postgres run queue takes round-robin by key", { timeout: 60_000 }, () => {
  it("gives a key behind another key's flood its first run in the same take, and across processes serves the key with fewer runs going", async () => {
    const databaseUrl = await freshDatabase("fair_queue");
    const first = await open(databaseUrl);
    const second = await open(databaseUrl);
    const alice = await submit(first, "alice", 12);
    const [bob] = await submit(first, "bob");
    const ownerOf = (runId: string) => (alice.includes(runId) ? "alice" : runId === bob ? "bob" : "carol");

    // Before: pg-boss's own order handed out alice's four oldest.
    const taken = await first.queue.take(4);
    expect(taken.map((job) => ownerOf(job.runId)).sort()).toEqual(["alice", "alice", "alice", "bob"]);

    // Another process: alice has three going (in the first), carol none — carol's run goes first.
    const [carol] = await submit(second, "carol");
    const next = await second.queue.take(1);
    expect(next.map((job) => job.runId)).toEqual([carol]);
    // Then alice's, first in first out.
    const after = await second.queue.take(2);
    expect(after.map((job) => job.runId)).toEqual(alice.filter((id) => !taken.some((job) => job.runId === id)).slice(0, 2));
  });

  it("holds one key to --max-running-per-key in this process, and frees the slot when a run ends", async () => {
    const databaseUrl = await freshDatabase("fair_cap");
    const store = await open(databaseUrl);
    await submit(store, "alice", 6);
    await submit(store, "bob", 1);
    const taken = await store.queue.take(10, { perOwner: 2 });
    expect(taken).toHaveLength(3);
    const held = await store.runs.getMany(taken.map((job) => job.runId));
    expect(held.filter((run) => run.owner === "alice")).toHaveLength(2);
    expect(await store.queue.take(10, { perOwner: 2 })).toEqual([]);
    const aliceJob = taken.find((job) => held.find((run) => run.id === job.runId)?.owner === "alice");
    if (!aliceJob) throw new Error("no job of alice's taken");
    await store.queue.complete(aliceJob);
    expect(await store.queue.take(10, { perOwner: 2 })).toHaveLength(1);
  });

  it("keeps one run per thread at a time: a key whose waiting runs are all on busy threads is passed over, not waited for", async () => {
    const databaseUrl = await freshDatabase("fair_threads");
    const store = await open(databaseUrl);
    const [head] = await submit(store, "alice", 1, { threadId: "busy" });
    const [firstTake] = await store.queue.take(1);
    expect(firstTake?.runId).toBe(head);
    // Two more on the busy thread (the second waits in pg-boss behind the first), one of bob's.
    await submit(store, "alice", 1, { threadId: "busy" });
    const [bob] = await submit(store, "bob");
    const taken = await store.queue.take(5);
    expect(taken.map((job) => job.runId)).toEqual([bob]);
    if (!firstTake) throw new Error("nothing taken");
    await store.queue.complete(firstTake);
    expect(await store.queue.take(5)).toHaveLength(1);
  });
});
