import { PgBoss } from "pg-boss";
import type pg from "pg";
import type { QueuedRun, RunJob, RunQueue, TakeOptions } from "./contract.js";
import { NO_OWNER } from "./fair-queue.js";
import { takeRound, type OwnerLoad } from "./owner-levels.js";
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

/** A job's group in pg-boss: its run's owner (pg-boss wants a non-empty id; a run without a key is `key:`). */
function groupOf(owner: string | null): string {
  return `key:${owner ?? NO_OWNER}`;
}

/** Taking serializes on this lock across processes, so the owners' counts a take reads stay true while it takes. */
const TAKE_LOCK = "troupe.run-queue.take";

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
 * round-robin by owner across the whole deployment — it reads how many jobs each owner has active
 * in every process, then fetches with pg-boss's `groupConcurrency` raised one level at a time
 * (`takeRound`), so an owner with fewer runs going is served before one with more, and a key that
 * floods the queue does not hold back another's first run. Takes of all processes serialize on an
 * advisory lock so those counts stay true while a take runs. `perOwner` caps one owner's jobs held
 * in this process (`--max-running-per-key` is per process), by pg-boss's `ignoreGroups`.
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
    }
    await client.query("SELECT pg_notify($1, $2)", [JOBS_CHANNEL, runs[0]?.runId ?? ""]);
  }

  async take(limit: number, options: TakeOptions = {}): Promise<RunJob[]> {
    if (limit <= 0) return [];
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

  async #takeLocked(client: pg.PoolClient, limit: number, perOwner: number): Promise<RunJob[]> {
    const heldHere = new Map<string, number>();
    for (const group of this.#held.values()) heldHere.set(group, (heldHere.get(group) ?? 0) + 1);
    const taken = await takeRound({
      limit,
      owners: await this.#owners(client),
      perOwner,
      heldHere: (group) => heldHere.get(group) ?? 0,
      fetch: async (batchSize, level, ignore) => {
        const jobs = await this.#boss.fetch<JobData>(RUN_QUEUE, {
          batchSize,
          groupConcurrency: level,
          ...(ignore.length > 0 ? { ignoreGroups: ignore } : {}),
          db: onClient(client),
        });
        return jobs.map((job) => ({ job, group: job.groupId ?? null }));
      },
    });
    for (const { job, group } of taken) if (group !== null) this.#held.set(job.data.runId, group);
    return taken.map(({ job }) => ({ id: job.id, attempt: job.retryCount, runId: job.data.runId, threadId: job.data.threadId }));
  }

  /** Each owner's jobs active (in any process) and waiting. */
  async #owners(client: pg.PoolClient): Promise<OwnerLoad[]> {
    const { rows } = await client.query<OwnerLoad>(
      `SELECT group_id AS "group",
              COUNT(*) FILTER (WHERE state = 'active')::int AS active,
              COUNT(*) FILTER (WHERE state < 'active')::int AS waiting
         FROM pgboss.job WHERE name = $1 AND state <= 'active' GROUP BY group_id`,
      [RUN_QUEUE],
    );
    return rows;
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
