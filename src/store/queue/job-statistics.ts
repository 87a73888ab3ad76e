/**
 * Fresh planner statistics for the queue's job table. The fair take (owner-levels.ts) is a few
 * index lookups only while Postgres's planner knows how many jobs are waiting: with the statistics
 * a burst of new jobs leaves (a table believed empty, or all completed), it picks an index that
 * matches the queue's name alone and checks every waiting job for each candidate — measured at
 * 10,000 waiting runs, 4.3 s for the nearest take and 66 s for the owner-by-owner one, against
 * 37 ms and 134 ms after ANALYZE. Autovacuum catches up only after its nap (a minute) and a
 * tenth of the table changed, so troupe analyzes the job table itself:
 *
 * - in the transaction of a bulk enqueue (`BULK_JOBS` jobs or more): ANALYZE counts the rows its own
 *   transaction inserted, so the statistics commit with the jobs and the first take sees both;
 * - before a take, at most every `CHECK_INTERVAL_MS` per process, when more rows changed since the
 *   last statistics than twice the waiting jobs the planner believes in (and at least
 *   `MIN_CHANGES`): the queue grew by a factor through many small submissions. One process of the
 *   deployment analyzes at a time (an advisory lock taken without waiting); the others go on.
 *
 * ANALYZE reads a fixed sample (30,000 rows by default), so its cost does not grow with the queue.
 * A role that does not own pg-boss's tables gets Postgres's warning and nothing is analyzed.
 */
import type pg from "pg";

/** Jobs enqueued in one statement from which the enqueue analyzes the job table in its transaction. */
export const BULK_JOBS = 100;
/** Rows changed since the last statistics below which a take never analyzes. */
export const MIN_CHANGES = 5_000;
/** How often a process looks at the job table's statistics before a take. */
export const CHECK_INTERVAL_MS = 2_000;
/** Only one process of the deployment analyzes the job table at a time. */
const ANALYZE_LOCK = "troupe.run-queue.analyze";

/** What the decision to analyze reads: rows changed since the last statistics, and the waiting jobs the planner believes in. */
export interface JobTableState {
  changedSinceAnalyze: number;
  estimatedWaiting: number;
}

/** Stale: more rows changed since the last statistics than twice the waiting jobs the planner counts on (and at least MIN_CHANGES). */
export function statisticsStale(state: JobTableState): boolean {
  return state.changedSinceAnalyze >= Math.max(MIN_CHANGES, 2 * state.estimatedWaiting);
}

/** Keeps the statistics of one queue's job table fresh (`schema.table`, names checked by the caller). */
export class JobTableStatistics {
  readonly #pool: pg.Pool;
  readonly #table: string;
  readonly #queue: string;
  readonly #now: () => number;
  #checkedAt = Number.NEGATIVE_INFINITY;
  #running: Promise<void> | undefined;
  /** How many times this process analyzed the table (for tests and the bench). */
  analyzed = 0;

  constructor(options: { pool: pg.Pool; schema: string; table: string; queue: string; now?: () => number }) {
    this.#pool = options.pool;
    this.#table = `${options.schema}.${options.table}`;
    this.#queue = options.queue;
    this.#now = options.now ?? Date.now;
  }

  /** The ANALYZE of the job table, for a bulk enqueue's own transaction. */
  get analyzeStatement(): string {
    return `ANALYZE ${this.#table}`;
  }

  /** Before a take: analyzes when the statistics are stale (at most one look per interval; concurrent takes share it). */
  async beforeTake(): Promise<void> {
    if (this.#running) return this.#running;
    const now = this.#now();
    if (now - this.#checkedAt < CHECK_INTERVAL_MS) return;
    this.#checkedAt = now;
    this.#running = this.#refresh().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  /** What the planner knows of the table against what changed since. */
  async state(client: pg.ClientBase): Promise<JobTableState> {
    const changed = await client.query<{ n: number }>("SELECT COALESCE(n_mod_since_analyze, 0)::float8 AS n FROM pg_stat_user_tables WHERE relid = $1::regclass", [this.#table]);
    // The planner's own estimate of the waiting jobs, from the statistics it has.
    const plan = await client.query<{ "QUERY PLAN": Array<{ Plan: { "Plan Rows": number } }> }>(
      `EXPLAIN (FORMAT JSON) SELECT 1 FROM ${this.#table} WHERE name = $1 AND state < 'active' AND NOT blocked`,
      [this.#queue],
    );
    return { changedSinceAnalyze: changed.rows[0]?.n ?? 0, estimatedWaiting: plan.rows[0]?.["QUERY PLAN"][0]?.Plan["Plan Rows"] ?? 0 };
  }

  async #refresh(): Promise<void> {
    const client = await this.#pool.connect();
    let broken: Error | undefined;
    try {
      if (!statisticsStale(await this.state(client))) return;
      const { rows } = await client.query<{ locked: boolean }>("SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked", [ANALYZE_LOCK]);
      if (!rows[0]?.locked) return;
      try {
        await client.query(this.analyzeStatement);
        this.analyzed += 1;
      } finally {
        await client.query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [ANALYZE_LOCK]);
      }
    } catch (error) {
      // A session that may still hold the lock is closed, not pooled; the take goes on with the statistics it has.
      broken = error instanceof Error ? error : new Error(String(error));
    } finally {
      client.release(broken);
    }
  }
}
