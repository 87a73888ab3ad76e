import { PgBoss } from "pg-boss";
import type pg from "pg";
import type { QueuedRun, RunJob, RunQueue, TakeOptions } from "./contract.js";
import { NO_OWNER } from "./fair-queue.js";
import { BULK_JOBS, JobTableStatistics } from "./job-statistics.js";
import { fairTake, type FairTake, NEAREST_WINDOW, waitingByOwnerIndex } from "./owner-levels.js";
import type { Notifications } from "../database/postgres-notifications.js";

/** The pg-boss queue of runs. */
export const RUN_QUEUE = "troupe-runs";
/** The channel a new or released job is announced on (in the transaction that makes it). */
export const JOBS_CHANNEL = "troupe_jobs";

/** How often pg-boss's monitor looks for jobs whose heartbeat stopped (and does its upkeep). */
const MONITOR_SECONDS = 2;

interface JobData {
  runId: string;
  threadId: string;
}

/** A job as a take's statement returns it. */
interface TakenRow {
  id: string;
  retry_count: number;
  data: JobData;
  group_id: string | null;
}

/** A job's group in pg-boss: its run's owner (pg-boss wants a non-empty id; a run without a key is `key:`). */
function groupOf(owner: string | null): string {
  return `key:${owner ?? NO_OWNER}`;
}

/** Taking serializes on this lock across processes, so the owners' counts a take reads stay true while it takes. */
const TAKE_LOCK = "troupe.run-queue.take";
/** pg-boss's schema (the default). */
const SCHEMA = "pgboss";

/** Runs statements of pg-boss on a transaction's client. */
export function onClient(client: pg.ClientBase): { executeSql: (text: string, values?: unknown[]) => Promise<{ rows: unknown[] }> } {
  return { executeSql: (text, values) => client.query(text, values) };
}

/** The heartbeat interval behind a lease: the monitor and a fetch must fit in what is left. */
export function heartbeatSecondsFor(leaseSeconds: number): number {
  return Math.max(10, leaseSeconds - MONITOR_SECONDS - 3);
}

/**
 * Troupe's run queue on pg-boss (see src/store/run-queue.ts for the contract). One queue,
 * `key_strict_fifo` by thread id (one job per thread active at a time, in order), a heartbeat
 * per job (`heartbeatSeconds`: the lease; pg-boss's monitor fails a silent job and it is retried
 * at once), retries without a limit that matters (a run that keeps killing its workers is stopped
 * by troupe's crash count instead), and jobs announced on `troupe_jobs` in the transaction that
 * makes them, so idle workers wake at once. Workers take jobs with `fetch()` into their own slots
 * rather than pg-boss's `work()` loop, which waits out its polling interval after every job.
 *
 * Fair across keys: each job's pg-boss group is its run's owner, and `take` hands out jobs
 * round-robin by owner across the whole deployment, in troupe's own statement on pg-boss's job
 * table (owner-levels.ts): the oldest takeable job of each owner with the fewest jobs active in
 * every process, marked active as pg-boss's fetch marks it, so an owner with fewer runs going is
 * served before one with more, and a key that floods the queue does not hold back another's first
 * run. Its cost follows the owners and the jobs taken, not the depth of the queue, while the
 * planner's statistics of the job table are fresh: a bulk enqueue analyzes it in its transaction
 * and a take first analyzes it when the queue grew by a factor since (job-statistics.ts). Takes of
 * all processes serialize on an advisory lock so the active counts stay true while a take runs.
 * `perOwner` caps one owner's jobs held in this process (`--max-running-per-key` is per process).
 */
export class PgBossRunQueue implements RunQueue {
  readonly shared = true;
  readonly leaseSeconds: number;
  readonly #boss: PgBoss;
  readonly #pool: pg.Pool;
  readonly #notifications: Notifications;
  /** The group of each run this process holds a job of (taken, not completed or released). */
  readonly #held = new Map<string, string>();
  #started = false;
  /** The statements of a take, on the queue's job table (known once started). */
  #take: FairTake | undefined;
  /** The planner statistics of the queue's job table, kept fresh (job-statistics.ts; known once started). */
  #statistics: JobTableStatistics | undefined;

  constructor(options: { url: string; pool: pg.Pool; notifications: Notifications; leaseSeconds: number; supervise: boolean }) {
    this.leaseSeconds = options.leaseSeconds;
    this.#pool = options.pool;
    this.#notifications = options.notifications;
    this.#boss = new PgBoss({
      connectionString: options.url,
      max: 4,
      application_name: "troupe-queue",
      supervise: options.supervise,
      schedule: false,
      migrate: true,
      monitorIntervalSeconds: MONITOR_SECONDS,
      superviseIntervalSeconds: MONITOR_SECONDS,
      registerInstance: false,
      openTelemetry: { enabled: false },
    });
    // Connection errors of its timers (the database restarted) are retried on the next pass.
    this.#boss.on("error", () => {});
  }

  /** The pg-boss instance, for the other queues on the same schema (webhook deliveries). */
  get boss(): PgBoss {
    return this.#boss;
  }

  /** Installs or migrates pg-boss's schema and the runs queue (its settings from the lease). */
  async start(): Promise<void> {
    if (this.#started) return;
    await this.#boss.start();
    this.#started = true;
    const settings = {
      heartbeatSeconds: heartbeatSecondsFor(this.leaseSeconds),
      expireInSeconds: 24 * 60 * 60,
      retryLimit: 1_000_000,
      retryDelay: 1,
      retryBackoff: false,
      deleteAfterSeconds: 24 * 60 * 60,
      retentionSeconds: 14 * 24 * 60 * 60,
    };
    const existing = await this.#boss.getQueue(RUN_QUEUE);
    if (!existing) {
      await this.#boss.createQueue(RUN_QUEUE, { policy: "key_strict_fifo", ...settings }).catch(async (error: unknown) => {
        // Another process made it meanwhile.
        if (!(await this.#boss.getQueue(RUN_QUEUE))) throw error;
      });
    } else if (existing.heartbeatSeconds !== settings.heartbeatSeconds) {
      // The lease is the deployment's: the heartbeat is fixed when the queue is made.
      process.emitWarning(`troupe: the run queue's heartbeat is ${existing.heartbeatSeconds} s, made for another lease than ${this.leaseSeconds} s; it stays`);
    }
    // The table holding the queue's jobs (pg-boss's shared job_common, or the queue's own partition).
    const { rows } = await this.#pool.query<{ table_name: string }>(`SELECT table_name FROM ${SCHEMA}.queue WHERE name = $1`, [RUN_QUEUE]);
    const table = rows[0]?.table_name;
    if (!table || !/^[a-z_][a-z0-9_]*$/.test(table)) throw new Error(`pg-boss keeps the run queue in a table troupe does not recognize: ${String(table)}`);
    await this.#pool.query(waitingByOwnerIndex(SCHEMA, table));
    this.#take = fairTake(SCHEMA, table);
    this.#statistics = new JobTableStatistics({ pool: this.#pool, schema: SCHEMA, table, queue: RUN_QUEUE });
  }

  /** The job table's statistics keeper (once started). */
  get statistics(): JobTableStatistics | undefined {
    return this.#statistics;
  }

  /** Makes a job for a run, in the caller's transaction, and announces it when that commits. */
  async send(client: pg.ClientBase, run: QueuedRun): Promise<void> {
    await this.sendMany(client, [run]);
  }

  /** Makes the jobs of several runs in one statement, in the caller's transaction, and one announcement. */
  async sendMany(client: pg.ClientBase, runs: QueuedRun[]): Promise<void> {
    if (runs.length === 0) return;
    const jobs = runs.map((run) => ({
      data: { runId: run.runId, threadId: run.threadId } satisfies JobData,
      singletonKey: run.threadId,
      group: { id: groupOf(run.owner) },
    }));
    if (jobs.length === 1) {
      const [job] = jobs as [(typeof jobs)[0]];
      await this.#boss.send(RUN_QUEUE, job.data, { singletonKey: job.singletonKey, group: job.group, db: onClient(client) });
    } else {
      await this.#boss.insert(RUN_QUEUE, jobs, { db: onClient(client) });
      // A bulk enqueue commits fresh statistics with its jobs, so the next take's plan knows them.
      if (jobs.length >= BULK_JOBS && this.#statistics) await client.query(this.#statistics.analyzeStatement);
    }
    await client.query("SELECT pg_notify($1, $2)", [JOBS_CHANNEL, runs[0]?.runId ?? ""]);
  }

  async take(limit: number, options: TakeOptions = {}): Promise<RunJob[]> {
    if (limit <= 0) return [];
    // Statistics a burst of submissions left stale would turn the take's lookups into scans.
    await this.#statistics?.beforeTake();
    const client = await this.#pool.connect();
    let broken: Error | undefined;
    try {
      await client.query("SELECT pg_advisory_lock(hashtextextended($1, 0))", [TAKE_LOCK]);
      try {
        return await this.#takeLocked(client, limit, options.perOwner ?? Number.POSITIVE_INFINITY);
      } finally {
        await client.query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [TAKE_LOCK]);
      }
    } catch (error) {
      // A session that may still hold the lock is closed, not pooled: closing it frees the lock.
      broken = error instanceof Error ? error : new Error(String(error));
      throw error;
    } finally {
      client.release(broken);
    }
  }

  /**
   * Takes up to `limit` jobs, a statement at a time: each hands out one job to each of the owners
   * with the fewest active (those with nothing going found among the oldest jobs first), so owners
   * rise level by level until the slots are filled or nothing takeable is left.
   */
  async #takeLocked(client: pg.PoolClient, limit: number, perOwner: number): Promise<RunJob[]> {
    const statements = this.#take;
    if (!statements) throw new Error("the run queue was not started");
    const heldHere = new Map<string, number>();
    for (const group of this.#held.values()) heldHere.set(group, (heldHere.get(group) ?? 0) + 1);
    const taken: RunJob[] = [];
    while (taken.length < limit) {
      const full = [...heldHere].filter(([, held]) => held >= perOwner).map(([group]) => group);
      const room = Number.isFinite(perOwner) ? Object.fromEntries([...heldHere].map(([group, held]) => [group, Math.max(0, perOwner - held)])) : {};
      const want = limit - taken.length;
      let { rows } = await client.query<TakenRow>(statements.nearest, [RUN_QUEUE, want, full, NEAREST_WINDOW]);
      if (rows.length === 0) ({ rows } = await client.query<TakenRow>(statements.byOwner, [RUN_QUEUE, want, full, JSON.stringify(room), Number.isFinite(perOwner) ? perOwner : want]));
      if (rows.length === 0) break;
      for (const row of rows) {
        if (row.group_id !== null) {
          this.#held.set(row.data.runId, row.group_id);
          heldHere.set(row.group_id, (heldHere.get(row.group_id) ?? 0) + 1);
        }
        taken.push({ id: row.id, attempt: row.retry_count, runId: row.data.runId, threadId: row.data.threadId });
      }
    }
    return taken;
  }

  async touch(jobs: RunJob[]): Promise<void> {
    if (jobs.length === 0) return;
    await this.#boss.touch(
      RUN_QUEUE,
      jobs.map((job) => ({ id: job.id, retryCount: job.attempt })),
    );
  }

  async complete(job: RunJob): Promise<void> {
    this.#held.delete(job.runId);
    await this.#boss.complete(RUN_QUEUE, { id: job.id, retryCount: job.attempt });
  }

  async release(job: RunJob, reason: string): Promise<void> {
    this.#held.delete(job.runId);
    await this.#boss.fail(RUN_QUEUE, { id: job.id, retryCount: job.attempt }, { reason });
    await this.#pool.query("SELECT pg_notify($1, $2)", [JOBS_CHANNEL, job.runId]).catch(() => {});
  }

  wait(pollMs: number, signal?: AbortSignal): Promise<void> {
    return this.#notifications.next(JOBS_CHANNEL, pollMs, signal);
  }


  async depth(): Promise<number> {
    const { rows } = await this.#pool.query<{ n: number }>("SELECT COUNT(*)::int AS n FROM pgboss.job WHERE name = $1 AND state IN ('created', 'retry')", [RUN_QUEUE]);
    return rows[0]?.n ?? 0;
  }

  async ping(): Promise<void> {
    await this.#pool.query("SELECT 1 FROM pgboss.queue WHERE name = $1", [RUN_QUEUE]);
  }

  async stop(): Promise<void> {
    if (!this.#started) return;
    this.#started = false;
    await this.#boss.stop({ graceful: false, close: true, timeout: 5_000 }).catch(() => {});
  }
}
