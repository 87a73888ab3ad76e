/**
 * gc's VACUUM on Postgres costs what it collected, not what the tables hold: the tables are
 * vacuumed after every collection (their space reusable at once), and analyzed only when the runs
 * collected were a tenth of the table or more (a sample of 30,000 pages a big table, seconds, for
 * statistics a small delete leaves as they were). Read from Postgres's own counters.
 */
import path from "node:path";
import { describe, expect, it } from "vitest";
import { Troupe } from "../src/runtime/engine.js";
import type { PostgresStore } from "../src/store/postgres-store.js";
import { tempDir } from "./helpers.js";
import { freshDatabase } from "./postgres.js";
import { until } from "./scale-out-helpers.js";

const RUNS = 1_000;
const DAY = 24 * 60 * 60 * 1000;

interface Counters {
  vacuums: number;
  analyzes: number;
}

async function counters(store: PostgresStore, table: string): Promise<Counters> {
  await store.pool.query("SELECT pg_stat_clear_snapshot()");
  const { rows } = await store.pool.query<{ vacuums: string; analyzes: string }>(
    "SELECT vacuum_count AS vacuums, analyze_count AS analyzes FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname = $1",
    [table],
  );
  return { vacuums: Number(rows[0]?.vacuums ?? 0), analyzes: Number(rows[0]?.analyzes ?? 0) };
}

describe("gc's reclaim on Postgres", () => {
  it("vacuums after every collection and analyzes only after one of a tenth of the runs or more", async () => {
    const directory = tempDir();
    const troupe = await Troupe.create({ provider: "offline", databaseUrl: await freshDatabase("gc_reclaim"), dataDir: path.join(directory, "data"), workspace: path.join(directory, "ws") });
    const store = troupe.store as PostgresStore;
    try {
      // Finished runs a day apart going back (the n-th n days old), three events each.
      const now = Date.now();
      await store.pool.query(
        `INSERT INTO runs (id, thread_id, task, status, request, owner, created_at, updated_at)
         SELECT 'run-' || n, 'thread-' || n, 'task ' || n, 'completed', '{}', 'local', $1::bigint - n * $2::bigint, $1::bigint - n * $2::bigint FROM generate_series(1, $3::int) AS n`,
        [now, DAY, RUNS],
      );
      await store.pool.query("INSERT INTO events (run_id, seq, type, at, data) SELECT 'run-' || n, s, 'log', $1::bigint, '{}' FROM generate_series(1, $2::int) AS n, generate_series(1, 3) AS s", [now, RUNS]);
      await store.pool.query("ANALYZE runs");
      await store.pool.query("ANALYZE events");
      const before = { runs: await counters(store, "runs"), events: await counters(store, "events") };

      // 2 % of the runs: vacuumed, statistics left as they were.
      const small = await troupe.gc({ cutoff: now - (RUNS - 20) * DAY });
      expect(small.runs).toBe(20);
      expect(small.events).toBe(60);
      const afterSmall = {
        runs: await until(async () => ((await counters(store, "runs")).vacuums > before.runs.vacuums ? counters(store, "runs") : undefined), "runs vacuumed"),
        events: await until(async () => ((await counters(store, "events")).vacuums > before.events.vacuums ? counters(store, "events") : undefined), "events vacuumed"),
      };
      expect(afterSmall.runs.analyzes).toBe(before.runs.analyzes);
      expect(afterSmall.events.analyzes).toBe(before.events.analyzes);

      // The rest (98 %): vacuumed and analyzed.
      const large = await troupe.gc({ cutoff: now });
      expect(large.runs).toBe(RUNS - 20);
      const analyzed = await until(async () => {
        const runs = await counters(store, "runs");
        const events = await counters(store, "events");
        return runs.analyzes > afterSmall.runs.analyzes && events.analyzes > afterSmall.events.analyzes ? { runs, events } : undefined;
      }, "runs and events analyzed");
      expect(analyzed.runs.vacuums).toBeGreaterThan(afterSmall.runs.vacuums);
      expect((await store.pool.query<{ n: number }>("SELECT COUNT(*)::int AS n FROM events")).rows[0]?.n).toBe(0);
    } finally {
      await troupe.shutdown();
    }
  });
});
