/**
 * Queue depth: how long a freed slot waits for the next run as the queue grows. Runs are bulk
 * written as waiting (across `keys` API keys, half of them turns of a busy thread), then a real
 * `troupe serve` with one slot drives them on a zero-latency scripted model. With one slot the runs
 * go one after another, so each gap between a run's finish and the next run's start (both
 * stamped by the server in its records) is a slot freeing to the next run starting: the queue's
 * take and what the dispatcher does around it. Measured right after the bulk insert (Postgres:
 * before any ANALYZE, as a burst of submissions leaves the statistics) and in steady state (after
 * the statistics caught up: ANALYZE, as autovacuum would run it).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import Database from "better-sqlite3";
import pg from "pg";
import type { PlannedSubtask } from "../../src/core/plan.js";
import { DATABASE_FILE } from "../../src/store/database/sqlite.js";
import { openStore, type SqliteStore } from "../../src/store/index.js";
import type { PostgresStore } from "../../src/store/postgres-store.js";
import { subtask } from "../../src/testing/script.js";
import { scriptFor } from "../scripts.js";
import { startServer } from "../server.js";
import { percentile, SCRIPTED_PROVIDER_MODULE, withTempDir } from "../support.js";
import { loadQueuedPostgres, loadQueuedSqlite, queuedRuns } from "./bulk-load.js";

const PLAN: PlannedSubtask[] = [subtask("s1", "research", "Look the figure up"), subtask("s2", "execute", "Use the figure", { dependsOn: ["s1"] })];

export interface PickupFigures {
  depth: number;
  phase: "after bulk insert" | "steady state";
  pickups: number;
  p50Ms: number;
  p95Ms: number;
}

export interface QueueDepthOptions {
  backend: "sqlite" | "postgres";
  depths: number[];
  keys: number;
  /** Pickups measured per phase. */
  pickups: number;
  /** Postgres: a database URL by name, and a way to drop it once measured. */
  database: (name: string) => Promise<string>;
  drop: (name: string) => Promise<void>;
  log: (line: string) => void;
}

interface Finished {
  id: string;
  started_at: number;
  finished_at: number;
}

/** Reads the finished runs of the benchmark (a fresh connection each time: the server writes). */
interface Reader {
  finished(): Promise<Finished[]>;
  analyze(): Promise<void>;
  close(): Promise<void>;
}

function sqliteReader(directory: string): Reader {
  const db = new Database(path.join(directory, DATABASE_FILE), { readonly: true });
  db.pragma("busy_timeout = 5000");
  return {
    finished: async () => db.prepare("SELECT id, started_at, finished_at FROM runs WHERE finished_at IS NOT NULL AND started_at IS NOT NULL ORDER BY started_at").all() as Finished[],
    analyze: async () => {},
    close: async () => {
      db.close();
    },
  };
}

function postgresReader(url: string): Reader {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  return {
    finished: async () =>
      (await pool.query<Finished>("SELECT id, started_at::float8 AS started_at, finished_at::float8 AS finished_at FROM runs WHERE finished_at IS NOT NULL AND started_at IS NOT NULL ORDER BY started_at")).rows,
    // What autovacuum does once enough rows changed: every table the take reads gets fresh statistics.
    analyze: async () => {
      await pool.query("ANALYZE");
    },
    close: () => pool.end(),
  };
}

/** The gaps (ms) between each run's finish and the next run's start, for runs starting after `since`, at most `count`. */
function gaps(runs: Finished[], since: number, count: number): number[] {
  const result: number[] = [];
  for (let index = 1; index < runs.length && result.length < count; index += 1) {
    const previous = runs[index - 1] as Finished;
    const next = runs[index] as Finished;
    if (previous.started_at < since) continue;
    result.push(Math.max(0, next.started_at - previous.finished_at));
  }
  return result;
}

async function waitFor(reader: Reader, enough: (runs: Finished[]) => boolean, what: string, timeoutMs: number): Promise<Finished[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const runs = await reader.finished();
    if (enough(runs)) return runs;
    if (Date.now() > deadline) throw new Error(`scale/queue: ${what}: only ${runs.length} runs finished in ${timeoutMs / 1000} s`);
    await sleep(200);
  }
}

function figures(depth: number, phase: PickupFigures["phase"], values: number[]): PickupFigures {
  const sorted = [...values].sort((a, b) => a - b);
  return { depth, phase, pickups: sorted.length, p50Ms: percentile(sorted, 0.5), p95Ms: percentile(sorted, 0.95) };
}

/** The pickup curve of one backend over the depths. */
export async function measureQueueDepth(options: QueueDepthOptions): Promise<PickupFigures[]> {
  const points: PickupFigures[] = [];
  for (const depth of options.depths) {
    await withTempDir(`troupe-bench-scale-queue-${options.backend}-`, async (directory) => {
      const dataDir = path.join(directory, "data");
      mkdirSync(dataDir, { recursive: true });
      const name = `scale_queue_${depth}`;
      const url = options.backend === "postgres" ? await options.database(name) : undefined;
      options.log(`  ${options.backend}: ${depth.toLocaleString("en-US")} runs waiting across ${options.keys} keys…`);
      const store = await openStore({ dataDir, ...(url ? { databaseUrl: url } : {}) });
      const started = performance.now();
      try {
        const runs = queuedRuns(depth, options.keys, "q", Date.now());
        if (store.kind === "sqlite") {
          const db = (store as SqliteStore).db;
          db.pragma("synchronous = OFF");
          loadQueuedSqlite(db, runs);
          db.pragma("synchronous = FULL");
        } else {
          await loadQueuedPostgres(store as PostgresStore, runs);
        }
      } finally {
        await store.close();
      }
      options.log(`    written in ${((performance.now() - started) / 1000).toFixed(1)} s; one slot takes them…`);
      const script = path.join(directory, "script.json");
      writeFileSync(script, JSON.stringify(scriptFor(PLAN, { runs: options.pickups * 2 + 50 })));
      const server = await startServer(directory, {
        TROUPE_PROVIDER: "scripted",
        TROUPE_PROVIDER_MODULES: SCRIPTED_PROVIDER_MODULE,
        TROUPE_SCRIPT: script,
        TROUPE_DATA_DIR: dataDir,
        TROUPE_MAX_RUNNING: "1",
        ...(url ? { TROUPE_DATABASE_URL: url, TROUPE_WORKERS: "1" } : {}),
      });
      const reader = url ? postgresReader(url) : sqliteReader(dataDir);
      try {
        const first = await waitFor(reader, (runs) => runs.length > options.pickups, "right after the bulk insert", 600_000);
        points.push(figures(depth, "after bulk insert", gaps(first, 0, options.pickups)));
        await reader.analyze();
        const since = Date.now();
        const steady = await waitFor(reader, (runs) => runs.filter((run) => run.started_at >= since).length > options.pickups, "in steady state", 600_000);
        points.push(figures(depth, "steady state", gaps(steady, since, options.pickups)));
      } finally {
        await reader.close();
        await server.stop();
        if (url) await options.drop(name);
      }
    });
  }
  return points;
}
