/**
 * The job queue comparison behind issue 16's choice: pg-boss against graphile-worker on troupe's
 * workload — runs are jobs that last seconds to minutes, one at a time per thread, enqueued in
 * the same transaction as the run's row, and taken over from a worker that died. Each library is
 * used the way its documentation sets it up (pg-boss `work()`, graphile-worker `run()`), plus
 * troupe's own dispatcher on pg-boss (`fetch()` with its slots, src/server/pg-run-queue.ts) when
 * it is given. Measured on a throwaway cluster, one database per library.
 */
import { spawn } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { Notifications } from "../src/store/database/postgres-notifications.js";
import { PgBossRunQueue } from "../src/store/queue/postgres.js";
import type { RunJob } from "../src/store/queue/contract.js";
import { type Summary, summarize } from "./support.js";

export interface QueueFigures {
  library: string;
  /** INSERT of a run-like row and the job's enqueue, in one transaction, one at a time. */
  enqueueMs: Summary;
  /** From the enqueue's commit to the handler's start, on an idle worker (one job at a time). */
  pickupMs: Summary;
  /** Completed jobs per second, each job sleeping `jobMs`, at `concurrency` per worker instance. */
  throughput: Array<{ instances: number; perSecond: number; ofIdeal: number }>;
  /** The most jobs of one key (thread) that ran at once: 1 means serialised per thread. */
  maxPerKey: number;
  /** From the SIGKILL of a worker holding a job to another worker starting it; null when not within the bound. */
  takeoverMs: number | null;
  notes: string[];
}

export interface QueueCompareReport {
  jobMs: number;
  concurrency: number;
  jobs: number;
  takeoverBoundMs: number;
  results: QueueFigures[];
}

export interface QueueCompareOptions {
  /** A database per library is made from this one. */
  database: (name: string) => Promise<string>;
  jobMs?: number;
  concurrency?: number;
  jobs?: number;
  /** How long the takeover trial waits before it gives up. */
  takeoverBoundMs?: number;
  /** Progress lines (stderr). */
  log?: (line: string) => void;
}

interface Library {
  name: string;
  /** The takeover trial's own setup (troupe's queue): the job to take over, and the survivor. */
  enqueueTakeover?(client: pg.PoolClient): Promise<void>;
  takeoverSurvivor?(url: string, onTaken: () => void): Promise<{ stop(): Promise<void> }>;
  /** The child process's library argument. */
  childLibrary?: string;
  setup(url: string): Promise<void>;
  /** Enqueues a job inside the transaction of `client`. */
  enqueue(client: pg.PoolClient, key: string, payload: Record<string, unknown>): Promise<void>;
  /** Starts a worker instance with this many slots; `handler` runs each job. */
  startWorker(url: string, concurrency: number, handler: (payload: { key: string; n: number }) => Promise<void>): Promise<{ stop(): Promise<void> }>;
  notes: string[];
}

const CHILD = fileURLToPath(new URL("./queue-child.js", import.meta.url));

function pgBoss(): Library {
  return {
    name: "pg-boss 12 (work())",
    notes: [
      "a job heartbeat (heartbeatSeconds ≥ 10) is the lease: the monitor fails a silent job and it is retried",
      "key_strict_fifo runs one job per singletonKey (the thread) at a time",
      "send() takes the caller's transaction ({ db }), so the run's row and its job commit together",
      "work() sleeps pollingIntervalSeconds minus the job's duration after each job, so short jobs leave slots idle",
      "with notify on, a worker polls only every notifyPollingIntervalSeconds (30 s): a backlog queued before it started drains one job per slot per 30 s unless that is lowered",
    ],
    async setup(url) {
      const { PgBoss } = await import("pg-boss");
      const boss = new PgBoss({ connectionString: url, registerInstance: false });
      boss.on("error", () => {});
      await boss.start();
      for (const name of ["bench", "takeover"]) {
        await boss.createQueue(name, { policy: "key_strict_fifo", heartbeatSeconds: 10, retryLimit: 100, retryDelay: 0, notify: true });
      }
      // Kept started to build the SQL of send(); each statement runs on the caller's transaction.
      sender = boss;
    },
    async enqueue(client, key, payload) {
      await (sender as { send: (name: string, data: object, options: object) => Promise<unknown> }).send("bench", payload, { singletonKey: key, db: transactionOf(client) });
    },
    async startWorker(url, concurrency, handler) {
      const { PgBoss } = await import("pg-boss");
      const boss = new PgBoss({ connectionString: url, useListenNotify: true, registerInstance: false, max: concurrency + 4 });
      boss.on("error", () => {});
      await boss.start();
      await boss.work<{ key: string; n: number }>("bench", { localConcurrency: concurrency, pollingIntervalSeconds: 0.5, notifyPollingIntervalSeconds: 0.5 }, async ([job]) => {
        if (job) await handler(job.data);
      });
      return { stop: () => boss.stop({ graceful: true, timeout: 5_000 }) };
    },
  };
}
let sender: unknown;
const transactionOf = (client: pg.PoolClient) => ({ executeSql: (text: string, values?: unknown[]) => client.query(text, values) });

/**
 * The loop troupe's workers run (src/server/run-dispatcher.ts) on its queue class: `fetch()` as
 * many jobs as slots are free, a slot freed fetches at once, an idle worker waits for a job's
 * notification (or polls each second), heartbeats for every held job in one statement.
 */
export function runQueueLoop(queue: PgBossRunQueue, concurrency: number, handler: (job: RunJob) => Promise<void>): { stop(): Promise<void> } {
  const held = new Set<string>();
  let stopping = false;
  let waker = new AbortController();
  const heartbeat = setInterval(() => void queue.touch([...held].map((id) => ({ id, attempt: 0, runId: "", threadId: "" }))).catch(() => {}), 2_000);
  const loop = (async () => {
    while (!stopping) {
      const free = concurrency - held.size;
      const jobs = free > 0 ? await queue.take(free).catch(() => [] as RunJob[]) : [];
      for (const job of jobs) {
        held.add(job.id);
        void handler(job)
          .then(() => queue.complete(job))
          .catch(() => {})
          .finally(() => {
            held.delete(job.id);
            waker.abort();
          });
      }
      if (free > 0 && jobs.length === free) continue;
      waker = new AbortController();
      await queue.wait(1_000, waker.signal);
    }
  })();
  return {
    stop: async () => {
      stopping = true;
      waker.abort();
      clearInterval(heartbeat);
      await loop;
      while (held.size > 0) await new Promise((resolve) => setTimeout(resolve, 20));
    },
  };
}

/** troupe's own use of pg-boss: PgBossRunQueue (its queue settings) and the dispatcher's loop. */
function troupeQueue(): Library {
  let sending: { queue: PgBossRunQueue; pool: pg.Pool; notifications: Notifications } | undefined;
  const open = async (url: string, leaseSeconds = 15) => {
    const pool = new pg.Pool({ connectionString: url, max: 10 });
    const notifications = new Notifications(url);
    const queue = new PgBossRunQueue({ url, pool, notifications, leaseSeconds, supervise: true });
    await queue.start();
    return { queue, pool, notifications };
  };
  const close = async (parts: { queue: PgBossRunQueue; pool: pg.Pool; notifications: Notifications }) => {
    await parts.queue.stop();
    await parts.notifications.close();
    await parts.pool.end();
  };
  return {
    name: "pg-boss 12 (troupe: fetch() into slots)",
    notes: [
      "src/store/postgres/run-queue.ts and the dispatcher's loop: a freed slot fetches at once, idle workers wake on a NOTIFY sent in the job's transaction",
      "heartbeats of every held job in one touch() per interval; the lease (TROUPE_LEASE_SECONDS, 15 here) sets heartbeatSeconds",
    ],
    async setup(url) {
      sending = await open(url);
    },
    async enqueue(client, key, payload) {
      await sending?.queue.send(client, { runId: JSON.stringify(payload), threadId: key, owner: null });
    },
    async startWorker(url, concurrency, handler) {
      const parts = await open(url);
      const loop = runQueueLoop(parts.queue, concurrency, (job) => handler(JSON.parse(job.runId) as { key: string; n: number }));
      return {
        stop: async () => {
          await loop.stop();
          await close(parts);
        },
      };
    },
    async takeoverSurvivor(url, onTaken) {
      const parts = await open(url);
      const loop = runQueueLoop(parts.queue, 1, async () => onTaken());
      return {
        stop: async () => {
          await loop.stop();
          await close(parts);
          if (sending) await close(sending);
        },
      };
    },
    async enqueueTakeover(client) {
      await sending?.queue.send(client, { runId: JSON.stringify({ key: "k", n: 0 }), threadId: "k", owner: null });
    },
    childLibrary: "troupe",
  };
}

function graphile(): Library {
  return {
    name: "graphile-worker 0.18 (run())",
    notes: [
      "no lease: a dead worker's jobs stay locked until locked_at + 4 h, or until something else decides it is dead and calls force_unlock_workers",
      "queue_name runs one job per named queue (the thread) at a time",
      "add_job() is SQL, so it commits with the run's row",
      "LISTEN/NOTIFY wakes a free worker at once, and a worker fetches again as soon as its job ends",
    ],
    async setup(url) {
      const { runMigrations, Logger } = await import("graphile-worker");
      await runMigrations({ connectionString: url, logger: new Logger(() => () => {}) });
    },
    async enqueue(client, key, payload) {
      await client.query("SELECT graphile_worker.add_job('bench', $1::json, queue_name := $2)", [JSON.stringify(payload), key]);
    },
    async startWorker(url, concurrency, handler) {
      const { run, Logger } = await import("graphile-worker");
      const runner = await run({
        connectionString: url,
        concurrency,
        maxPoolSize: concurrency + 4,
        noHandleSignals: true,
        pollInterval: 500,
        logger: new Logger(() => () => {}),
        taskList: { bench: async (payload) => handler(payload as { key: string; n: number }) },
      });
      return { stop: () => runner.stop() };
    },
  };
}

async function measureLibrary(library: Library, url: string, options: Required<Omit<QueueCompareOptions, "database">>): Promise<QueueFigures> {
  const log = (line: string): void => options.log(`  ${library.name}: ${line}`);
  await library.setup(url);
  log("set up");
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  await pool.query("CREATE TABLE IF NOT EXISTS bench_runs (id serial PRIMARY KEY, thread text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())");
  const client = await pool.connect();
  const enqueueOne = async (key: string, payload: Record<string, unknown>): Promise<number> => {
    const started = performance.now();
    await client.query("BEGIN");
    await client.query("INSERT INTO bench_runs (thread) VALUES ($1)", [key]);
    await library.enqueue(client, key, payload);
    await client.query("COMMIT");
    return performance.now() - started;
  };
  try {
    // Enqueue latency (no worker running), then a drain so the next trials start empty.
    const enqueueMs: number[] = [];
    for (let index = 0; index < 300; index += 1) enqueueMs.push(await enqueueOne(`e${index}`, { key: `e${index}`, n: -1 }));
    log("enqueued 300");
    let drained = 0;
    const drainer = await library.startWorker(url, 20, async () => {
      drained += 1;
    });
    while (drained < 300) await sleep(50);
    await drainer.stop();

    log("drained");
    // Pickup latency on an idle worker.
    const pickups: number[] = [];
    let picked: ((at: number) => void) | undefined;
    const idle = await library.startWorker(url, 1, async () => picked?.(performance.now()));
    await sleep(1_000);
    for (let index = 0; index < 20; index += 1) {
      const arrived = new Promise<number>((resolve) => (picked = resolve));
      await enqueueOne(`p${index}`, { key: `p${index}`, n: index });
      const committed = performance.now();
      pickups.push((await arrived) - committed);
      await sleep(100);
    }
    await idle.stop();
    log("pickups measured");

    // Throughput with one and two instances, and the most jobs of one key at once.
    const throughput: QueueFigures["throughput"] = [];
    let maxPerKey = 0;
    for (const instances of [1, 2]) {
      const running = new Map<string, number>();
      let done = 0;
      let first = 0;
      let last = 0;
      const handler = async (payload: { key: string; n: number }): Promise<void> => {
        if (first === 0) first = performance.now();
        const now = (running.get(payload.key) ?? 0) + 1;
        running.set(payload.key, now);
        maxPerKey = Math.max(maxPerKey, now);
        await sleep(options.jobMs);
        running.set(payload.key, (running.get(payload.key) ?? 1) - 1);
        done += 1;
        last = performance.now();
      };
      const workers = [];
      for (let index = 0; index < instances; index += 1) workers.push(await library.startWorker(url, options.concurrency, handler));
      await sleep(500);
      const jobs = options.jobs * instances;
      // Every fifth job shares a key with four others: five runs on one thread, queued together.
      for (let index = 0; index < jobs; index += 1) {
        const key = `t${instances}-${index % (jobs / 5)}`;
        await enqueueOne(key, { key, n: index });
      }
      while (done < jobs) await sleep(20);
      for (const worker of workers) await worker.stop();
      const perSecond = (jobs - 1) / ((last - first) / 1000);
      const ideal = (instances * options.concurrency * 1000) / options.jobMs;
      throughput.push({ instances, perSecond, ofIdeal: perSecond / ideal });
      log(`throughput with ${instances}: ${perSecond.toFixed(1)}/s`);
    }

    // Takeover: a child worker takes a job and is killed with SIGKILL; how long until another starts it?
    const child = spawn(process.execPath, [CHILD, library.childLibrary ?? (library.name.startsWith("pg-boss") ? "pg-boss" : "graphile-worker"), url], { stdio: ["ignore", "pipe", "ignore"] });
    let childOut = "";
    child.stdout.on("data", (chunk: Buffer) => (childOut += chunk.toString()));
    const deadline = Date.now() + 30_000;
    while (!childOut.includes("ready")) {
      if (Date.now() > deadline) throw new Error(`${library.name}: the takeover child did not start`);
      await sleep(50);
    }
    await client.query("BEGIN");
    if (library.enqueueTakeover) {
      await library.enqueueTakeover(client);
    } else if (library.name.startsWith("pg-boss")) {
      await (sender as { send: (name: string, data: object, options: object) => Promise<unknown> }).send("takeover", { key: "k", n: 0 }, { singletonKey: "k", db: transactionOf(client) });
    } else {
      await client.query("SELECT graphile_worker.add_job('takeover', '{}'::json, queue_name := 'k')");
    }
    await client.query("COMMIT");
    while (!childOut.includes("started")) {
      if (Date.now() > deadline) throw new Error(`${library.name}: the takeover child never took its job`);
      await sleep(20);
    }
    log("child holds its job; SIGKILL");
    child.kill("SIGKILL");
    const killed = performance.now();
    let takenAt: number | undefined;
    let survivor: { stop(): Promise<void> };
    if (library.takeoverSurvivor) {
      survivor = await library.takeoverSurvivor(url, () => {
        takenAt ??= performance.now();
      });
    } else if (library.name.startsWith("pg-boss")) {
      const { PgBoss } = await import("pg-boss");
      const boss = new PgBoss({ connectionString: url, monitorIntervalSeconds: 1, superviseIntervalSeconds: 1, useListenNotify: true, registerInstance: false });
      boss.on("error", () => {});
      await boss.start();
      await boss.work("takeover", { localConcurrency: 1, pollingIntervalSeconds: 0.5, notifyPollingIntervalSeconds: 0.5 }, async () => {
        takenAt ??= performance.now();
      });
      survivor = { stop: () => boss.stop({ graceful: false }) };
    } else {
      const { run, Logger } = await import("graphile-worker");
      const runner = await run({
        connectionString: url,
        concurrency: 1,
        noHandleSignals: true,
        pollInterval: 500,
        logger: new Logger(() => () => {}),
        taskList: {
          takeover: async () => {
            takenAt ??= performance.now();
          },
        },
      });
      survivor = { stop: () => runner.stop() };
    }
    while (takenAt === undefined && performance.now() - killed < options.takeoverBoundMs) await sleep(50);
    await survivor.stop();
    if (library.name.startsWith("pg-boss") && !library.takeoverSurvivor) await (sender as { stop: (options: object) => Promise<void> }).stop({ graceful: false });
    return {
      library: library.name,
      enqueueMs: summarize(enqueueMs),
      pickupMs: summarize(pickups),
      throughput,
      maxPerKey,
      takeoverMs: takenAt === undefined ? null : takenAt - killed,
      notes: library.notes,
    };
  } finally {
    client.release();
    await pool.end();
  }
}

/** Measures both libraries on the same workload, one database each. */
export async function measureQueues(options: QueueCompareOptions): Promise<QueueCompareReport> {
  const settings = { jobMs: options.jobMs ?? 200, concurrency: options.concurrency ?? 10, jobs: options.jobs ?? 200, takeoverBoundMs: options.takeoverBoundMs ?? 40_000, log: options.log ?? (() => {}) };
  const results: QueueFigures[] = [];
  results.push(await measureLibrary(pgBoss(), await options.database("bench_pgboss"), settings));
  results.push(await measureLibrary(graphile(), await options.database("bench_graphile"), settings));
  results.push(await measureLibrary(troupeQueue(), await options.database("bench_troupe"), settings));
  const { log: _log, ...figures } = settings;
  return { ...figures, results };
}
