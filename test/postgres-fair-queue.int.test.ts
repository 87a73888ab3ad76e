import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { NewRun } from "../src/store/index.js";
import { fairTake, NEAREST_WINDOW } from "../src/store/queue/owner-levels.js";
import { RUN_QUEUE } from "../src/store/queue/postgres.js";
import type { PostgresStore } from "../src/store/postgres-store.js";
import { freshDatabase, postgresStores } from "./postgres.js";

// The Postgres run queue (pg-boss) hands runs out round-robin by API key across the processes of a
// deployment: two stores on one database stand for two worker processes, fed by the run store as
// the API writes runs.

const open = postgresStores("troupe-pg-fair-");

function newRun(owner: string | null, fields: Partial<NewRun> = {}): NewRun {
  return { id: `run-${randomUUID()}`, threadId: `thread-${randomUUID()}`, task: "a task", status: "queued", request: { task: "a task" }, pid: null, host: null, owner, ...fields };
}

async function submit(store: PostgresStore, owner: string | null, count = 1, fields: Partial<NewRun> = {}): Promise<string[]> {
  const ids: string[] = [];
  for (let index = 0; index < count; index += 1) ids.push((await store.runs.create(newRun(owner, fields))).id);
  return ids;
}

describe("the Postgres run queue takes round-robin by key", () => {
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

  it("fills every free slot of one owner in one take, oldest first, and a later take the rest", async () => {
    const databaseUrl = await freshDatabase("fair_alone");
    const store = await open(databaseUrl);
    const alice = await submit(store, "alice", 12);
    const taken = await store.queue.take(8);
    expect(taken.map((job) => job.runId)).toEqual(alice.slice(0, 8));
    expect((await store.queue.take(8)).map((job) => job.runId)).toEqual(alice.slice(8));
    expect(await store.queue.take(8)).toEqual([]);
  });

  it("keeps three owners level over many takes of one slot, whoever floods", async () => {
    const databaseUrl = await freshDatabase("fair_level");
    const store = await open(databaseUrl);
    const runs = { alice: await submit(store, "alice", 9), bob: await submit(store, "bob", 3), carol: await submit(store, "carol", 3) };
    const ownerOf = (runId: string) => (Object.entries(runs).find(([, ids]) => ids.includes(runId)) as [string, string[]])[0];
    const order: string[] = [];
    for (let index = 0; index < 9; index += 1) order.push(...(await store.queue.take(1)).map((job) => ownerOf(job.runId)));
    // Nobody completes: each take goes to an owner with the fewest going, so no owner is two ahead.
    for (let index = 1; index <= order.length; index += 1) {
      const counts = ["alice", "bob", "carol"].map((owner) => order.slice(0, index).filter((name) => name === owner).length);
      expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
    }
    expect(order.filter((owner) => owner === "alice")).toHaveLength(3);
  });

  it("brings the owner with fewer going up to the others before they get more (a water level), in one take of several", async () => {
    const databaseUrl = await freshDatabase("fair_water");
    const store = await open(databaseUrl);
    const alice = await submit(store, "alice", 10);
    await store.queue.take(3);
    const bob = await submit(store, "bob", 10);
    // alice has 3 going: bob's first 3 come before any more of alice's, then they alternate.
    const taken = (await store.queue.take(5)).map((job) => job.runId);
    expect(taken.filter((id) => bob.includes(id))).toEqual(bob.slice(0, 4));
    expect(taken.filter((id) => alice.includes(id))).toEqual([alice[3]]);
  });

  it("still takes jobs made before runs had owners, after the owners' own", async () => {
    const databaseUrl = await freshDatabase("fair_legacy");
    const store = await open(databaseUrl);
    const legacy = await submit(store, null, 2);
    // A job made before owners had groups: its group cleared, as pg-boss kept it then.
    await store.pool.query("UPDATE pgboss.job SET group_id = NULL WHERE name = $1 AND data->>'runId' = ANY($2)", [RUN_QUEUE, legacy]);
    const [bob] = await submit(store, "bob");
    const taken = (await store.queue.take(5)).map((job) => job.runId);
    expect(taken).toHaveLength(3);
    expect(taken[0]).toBe(bob);
    expect(taken.slice(1).sort()).toEqual([...legacy].sort());
  });

  it("takes a job given back again once due, as its next attempt, and keeps its thread's later run waiting behind it", async () => {
    const databaseUrl = await freshDatabase("fair_retry");
    const store = await open(databaseUrl);
    const [first] = await submit(store, "alice", 1, { threadId: "line" });
    const [job] = await store.queue.take(1);
    expect(job?.runId).toBe(first);
    if (!job) throw new Error("nothing taken");
    await store.queue.release(job, "given back");
    // Given back: due a second later; meanwhile nothing of its thread is taken.
    const [second] = await submit(store, "alice", 1, { threadId: "line" });
    expect(await store.queue.take(2)).toEqual([]);
    await store.pool.query("UPDATE pgboss.job SET start_after = now() - interval '1 second' WHERE name = $1 AND state = 'retry'", [RUN_QUEUE]);
    const again = await store.queue.take(2);
    expect(again.map((taken) => [taken.runId, taken.attempt])).toEqual([[first, 1]]);
    if (!again[0]) throw new Error("nothing taken again");
    await store.queue.complete(again[0]);
    expect((await store.queue.take(2)).map((taken) => taken.runId)).toEqual([second]);
  });

  it("finds the keys behind a flood deeper than the window it reads from the oldest end, in the same take, a share each", async () => {
    const databaseUrl = await freshDatabase("fair_deep");
    const store = await open(databaseUrl);
    const client = await store.pool.connect();
    const deep = NEAREST_WINDOW + 200;
    try {
      // alice's flood fills the oldest end past the window; ten other keys, one run each, behind it.
      await client.query("BEGIN");
      await store.queue.sendMany(client, Array.from({ length: deep }, (_, index) => ({ runId: `alice-${index}`, threadId: `alice-thread-${index}`, owner: "alice" })));
      await client.query("COMMIT");
      for (let index = 0; index < 10; index += 1) {
        await client.query("BEGIN");
        await store.queue.sendMany(client, [{ runId: `other-${index}`, threadId: `other-thread-${index}`, owner: `key-${index}` }]);
        await client.query("COMMIT");
      }
    } finally {
      client.release();
    }
    // One of alice's (hers share one insert's time), then the four oldest of the keys with nothing going, not four more of hers.
    const taken = (await store.queue.take(5)).map((job) => job.runId);
    expect(taken[0]).toMatch(/^alice-/);
    expect(taken.slice(1)).toEqual(["other-0", "other-1", "other-2", "other-3"]);
    // The next take serves the six keys still at nothing going first, then alice one more (every key one up).
    const next = (await store.queue.take(7)).map((job) => job.runId);
    expect(next.slice(0, 6)).toEqual(["other-4", "other-5", "other-6", "other-7", "other-8", "other-9"]);
    expect(next[6]).toMatch(/^alice-/);
    expect(next[6]).not.toBe(taken[0]);
  });

  it("never hands one job to two processes taking at once, and every waiting job is taken once", async () => {
    const databaseUrl = await freshDatabase("fair_race");
    const first = await open(databaseUrl);
    const second = await open(databaseUrl);
    const submitted = (await Promise.all(["alice", "bob", "carol", "dave"].map((owner) => submit(first, owner, 10)))).flat();
    const takes = await Promise.all(Array.from({ length: 16 }, (_, index) => (index % 2 === 0 ? first : second).queue.take(3)));
    const taken = takes.flat().map((job) => job.runId);
    expect(new Set(taken).size).toBe(taken.length);
    expect(taken.sort()).toEqual([...submitted].sort());
    expect(await second.queue.take(3)).toEqual([]);
  });

  it("checks each candidate's thread by an index lookup, with the statistics many small enqueues leave and with fresh ones (no scan or hash of the waiting jobs)", async () => {
    const databaseUrl = await freshDatabase("fair_plan");
    const store = await open(databaseUrl);
    const client = await store.pool.connect();
    try {
      // The statistics of a young deployment (analyzed while nothing waited, autovacuum off here),
      // then 5,000 waiting jobs across 50 owners in enqueues too small to analyze on their own.
      await client.query("ALTER TABLE pgboss.job_common SET (autovacuum_enabled = false)");
      await client.query("ANALYZE pgboss.job_common");
      for (let start = 0; start < 5_000; start += 50) {
        await client.query("BEGIN");
        await store.queue.sendMany(
          client,
          Array.from({ length: 50 }, (_, offset) => ({ runId: `run-${start + offset}`, threadId: `thread-${start + offset}`, owner: `key-${(start + offset) % 50}` })),
        );
        await client.query("COMMIT");
      }
      const { rows } = await client.query<{ table_name: string }>("SELECT table_name FROM pgboss.queue WHERE name = $1", [RUN_QUEUE]);
      const statements = fairTake("pgboss", rows[0]?.table_name ?? "");
      for (const statistics of ["stale", "fresh"]) {
        if (statistics === "fresh") await client.query("ANALYZE pgboss.job_common");
        for (const [statement, values, job] of [
          [statements.nearest, [RUN_QUEUE, 4, [], NEAREST_WINDOW], "o"],
          [statements.byOwner, [RUN_QUEUE, 4, [], "{}", 4], "j"],
        ] as const) {
          const plan = (await client.query<{ "QUERY PLAN": string }>(`EXPLAIN ${statement}`, [...values])).rows.map((row) => row["QUERY PLAN"]).join("\n");
          expect(plan, `${statistics} statistics`).not.toMatch(/Seq Scan on job|Hash Anti Join/);
          // The thread checks are lookups of the candidate's thread, not a pass over every waiting job.
          expect(plan.match(new RegExp(`Index Cond: \\(\\(name = 'troupe-runs'::text\\) AND \\(singleton_key = ${job}(_\\d+)?\\.singleton_key\\)\\)`, "g"))?.length ?? 0, `${statistics} statistics`).toBeGreaterThanOrEqual(2);
        }
      }
    } finally {
      client.release();
    }
    expect(await store.queue.take(4)).toHaveLength(4);
  });
});
