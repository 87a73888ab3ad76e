import { PgBoss } from "pg-boss";
import type pg from "pg";
import type { RunJob, RunQueue } from "./contract.js";
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
 */
export class PgBossRunQueue implements RunQueue {
  readonly shared = true;
  readonly leaseSeconds: number;
  readonly #boss: PgBoss;
  readonly #pool: pg.Pool;
  readonly #notifications: Notifications;
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
  async send(client: pg.ClientBase, runId: string, threadId: string): Promise<void> {
    await this.sendMany(client, [{ runId, threadId }]);
  }

  /** Makes the jobs of several runs in one statement, in the caller's transaction, and one announcement. */
  async sendMany(client: pg.ClientBase, runs: Array<{ runId: string; threadId: string }>): Promise<void> {
    if (runs.length === 0) return;
    const jobs = runs.map((run) => ({ data: { runId: run.runId, threadId: run.threadId } satisfies JobData, singletonKey: run.threadId }));
    if (jobs.length === 1) {
      const [job] = jobs as [(typeof jobs)[0]];
      await this.#boss.send(RUN_QUEUE, job.data, { singletonKey: job.singletonKey, db: onClient(client) });
    } else {
      await this.#boss.insert(RUN_QUEUE, jobs, { db: onClient(client) });
    }
    await client.query("SELECT pg_notify($1, $2)", [JOBS_CHANNEL, runs[0]?.runId ?? ""]);
  }

  async take(limit: number): Promise<RunJob[]> {
    if (limit <= 0) return [];
    const jobs = await this.#boss.fetch<JobData>(RUN_QUEUE, { batchSize: limit });
    return jobs.map((job) => ({ id: job.id, attempt: job.retryCount, runId: job.data.runId, threadId: job.data.threadId }));
  }

  async touch(jobs: RunJob[]): Promise<void> {
    if (jobs.length === 0) return;
    await this.#boss.touch(
      RUN_QUEUE,
      jobs.map((job) => ({ id: job.id, retryCount: job.attempt })),
    );
  }

  async complete(job: RunJob): Promise<void> {
    await this.#boss.complete(RUN_QUEUE, { id: job.id, retryCount: job.attempt });
  }

  async release(job: RunJob, reason: string): Promise<void> {
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
