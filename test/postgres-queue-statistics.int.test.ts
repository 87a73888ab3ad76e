import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { NewRun } from "../src/store/index.js";
import { BULK_JOBS, MIN_CHANGES } from "../src/store/queue/job-statistics.js";
import type { PostgresStore } from "../src/store/postgres-store.js";
import { freshDatabase, postgresStores } from "./postgres.js";

// The fair take's plan is a few index lookups only while the planner knows how many jobs wait
// (issue 35: 4.3 s and 66 s per take at 10,000 waiting with the statistics a bulk insert left).
// The queue keeps the job table's statistics fresh: a bulk enqueue analyzes in its transaction, a
// take analyzes first when many small submissions grew the queue. Autovacuum is off on the job
// table here so only troupe's own ANALYZE can refresh them.

const openOn = postgresStores("troupe-pg-statistics-");

async function open(databaseUrl: string): Promise<PostgresStore> {
  const store = await openOn(databaseUrl);
  await store.pool.query("ALTER TABLE pgboss.job_common SET (autovacuum_enabled = false)");
  return store;
}

function newRun(owner: string): NewRun {
  return { id: `run-${randomUUID()}`, threadId: `thread-${randomUUID()}`, task: "a task", status: "queued", request: { task: "a task" }, pid: null, host: null, owner };
}

/** The waiting jobs the planner believes in, and when the job table was last analyzed (by anyone). */
async function plannerView(store: PostgresStore): Promise<{ estimatedWaiting: number; analyzedAt: Date | null }> {
  const statistics = store.queue.statistics;
  if (!statistics) throw new Error("the queue was not started");
  const client = await store.pool.connect();
  try {
    const { estimatedWaiting } = await statistics.state(client);
    const { rows } = await client.query<{ at: Date | null }>("SELECT GREATEST(last_analyze, last_autoanalyze) AS at FROM pg_stat_user_tables WHERE relid = 'pgboss.job_common'::regclass");
    return { estimatedWaiting, analyzedAt: rows[0]?.at ?? null };
  } finally {
    client.release();
  }
}

describe("the Postgres run queue keeps its job table's statistics fresh", () => {
  it("commits fresh statistics with a burst of submissions written in one batch, so the planner counts the waiting jobs", async () => {
    const store = await open(await freshDatabase("queue_statistics_bulk"));
    const before = await plannerView(store);
    expect(before.estimatedWaiting).toBeLessThan(50);

    // A burst of API submissions in one turn: the run store writes them and their jobs in one transaction.
    const count = BULK_JOBS * 3;
    const runs = await Promise.all(Array.from({ length: count }, (_, index) => store.runs.create(newRun(`key-${index % 30}`))));
    expect(runs).toHaveLength(count);
    expect(await store.queue.depth()).toBe(count);

    const after = await plannerView(store);
    expect(after.analyzedAt).not.toBeNull();
    expect(after.estimatedWaiting).toBeGreaterThan(count / 2);
    expect(after.estimatedWaiting).toBeLessThan(count * 2);
    // And the take hands the runs out, one per key first.
    const taken = await store.queue.take(3);
    const ownerOf = new Map(runs.map((run) => [run.id, run.owner]));
    expect(new Set(taken.map((job) => ownerOf.get(job.runId))).size).toBe(3);
  });

  it("analyzes before a take once many small enqueues grew the queue past what the planner knows, in one process only", async () => {
    const databaseUrl = await freshDatabase("queue_statistics_drip");
    const store = await open(databaseUrl);
    const other = await open(databaseUrl);
    const statistics = store.queue.statistics;
    if (!statistics) throw new Error("the queue was not started");
    // The statistics of a young deployment: the job table analyzed while nothing waited.
    await store.pool.query("ANALYZE pgboss.job_common");
    // Enqueues below the bulk size (no ANALYZE of their own) until the changes pass the threshold.
    const each = BULK_JOBS - 1;
    const rounds = Math.ceil((MIN_CHANGES + 500) / each);
    for (let round = 0; round < rounds; round += 1) {
      const client = await store.pool.connect();
      try {
        await client.query("BEGIN");
        await store.queue.sendMany(
          client,
          Array.from({ length: each }, (_, index) => ({ runId: `run-${round}-${index}`, threadId: `thread-${round}-${index}`, owner: `key-${index % 30}` })),
        );
        await client.query("COMMIT");
      } finally {
        client.release();
      }
    }
    const waiting = rounds * each;
    expect((await plannerView(store)).estimatedWaiting).toBeLessThan(waiting / 10);
    // Postgres's activity counters reach the shared statistics a moment after the commits.
    const reader = await store.pool.connect();
    try {
      for (let state = await statistics.state(reader); state.changedSinceAnalyze < MIN_CHANGES; state = await statistics.state(reader)) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      reader.release();
    }

    const [taken] = await store.queue.take(1);
    expect(taken?.runId).toMatch(/^run-0-/);
    expect(statistics.analyzed).toBe(1);
    const after = await plannerView(store);
    expect(after.analyzedAt).not.toBeNull();
    expect(after.estimatedWaiting).toBeGreaterThan(waiting / 2);

    // Fresh now: another process's take does not analyze again.
    await other.queue.take(1);
    expect(other.queue.statistics?.analyzed).toBe(0);
  });
});
