import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { Logger } from "pino";
import { errorMessage } from "../core/errors.js";
import type { Troupe } from "../runtime/engine.js";
import { isConnectionError } from "../store/database/errors.js";
import type { RunJob, RunQueue, RunRecord } from "../store/index.js";
import type { EventHub } from "./event-hub.js";
import type { ServerMetrics } from "./metrics.js";
import { type DriveOutcome, type Origin, RunExecutor, TERMINAL } from "./run-executor.js";
import type { Telemetry } from "./telemetry.js";
import { failCrashedRun } from "./crashed-runs.js";

export interface RunDispatcherOptions {
  troupe: Troupe;
  /** Runs this worker drives at once. */
  concurrency: number;
  /** A run whose worker died this many times in a row while it ran is failed instead of taken over again. */
  maxCrashes: number;
  metrics: ServerMetrics;
  telemetry: Telemetry;
  hub: EventHub;
  logger: Logger;
  /** How long an idle worker waits for a job's notification before it looks anyway (ms). */
  pollMs?: number;
  /** The most runs of one owner (API key) held at once; the queue takes the others' first (SQLite's queue honours it). */
  maxRunningPerKey?: number;
}

/** A new worker's id: its host, pid and a few random characters (pids repeat across restarts). */
export function newWorkerId(): string {
  return `${hostname()}-${process.pid}-${randomBytes(3).toString("hex")}`;
}

/**
 * Takes runs from the store's run queue into this process's slots: a worker of a Postgres
 * deployment (`troupe worker`, or `troupe serve` with workers) from the shared queue, or a SQLite
 * server from its own (where the job of a run is its record's, and a drained run stays suspended
 * for the next server). It takes runs into its slots, drives them with a `RunExecutor`, and keeps each job's
 * heartbeat while it does. A job can come back because its run's worker died (its heartbeat
 * stopped): the run is taken over — resumed from its last checkpoint — unless its workers kept
 * dying (the crash count). A run whose thread another process still holds goes back to the queue.
 * Cancels reach it over the control channel (and as a flag checked with each heartbeat), and a
 * drain stops its runs at their next checkpoint and puts them back in the queue.
 */
export class RunDispatcher {
  readonly id: string;
  readonly executor: RunExecutor;
  readonly concurrency: number;
  readonly #troupe: Troupe;
  readonly #queue: RunQueue;
  readonly #maxCrashes: number;
  readonly #metrics: ServerMetrics;
  readonly #hub: EventHub;
  readonly #log: Logger;
  readonly #pollMs: number;
  readonly #perOwner: number | undefined;
  /** The job of each run taken, by run id (the latest attempt, when one came back while its run went on here). */
  readonly #held = new Map<string, RunJob>();
  readonly #handling = new Set<Promise<void>>();
  readonly #origins = new Map<string, Origin>();
  #waker = new AbortController();
  #loop: Promise<void> | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #unsubscribe: (() => void) | undefined;
  #stopping = false;
  #takeovers = 0;
  /** Called when the control channel asks this worker to drain. */
  onDrainRequested: (() => void) | undefined;

  constructor(options: RunDispatcherOptions) {
    this.id = newWorkerId();
    this.concurrency = options.concurrency;
    this.#troupe = options.troupe;
    this.#queue = options.troupe.store.runQueue;
    this.#perOwner = options.maxRunningPerKey;
    this.#maxCrashes = options.maxCrashes;
    this.#metrics = options.metrics;
    this.#hub = options.hub;
    // A SQLite server is no worker of a deployment: its runs and logs name none.
    const worker = this.#queue.shared ? this.id : undefined;
    this.#log = worker ? options.logger.child({ worker }) : options.logger;
    this.#pollMs = options.pollMs ?? 1_000;
    this.executor = new RunExecutor({ troupe: options.troupe, metrics: options.metrics, telemetry: options.telemetry, hub: options.hub, logger: options.logger, ...(worker ? { worker } : {}) });
  }

  /** Runs held now. */
  get held(): number {
    return this.#held.size;
  }

  /** Whether this dispatcher has taken a run's job (it may not have started driving it yet). */
  holds(runId: string): boolean {
    return this.#held.has(runId);
  }

  get takeovers(): number {
    return this.#takeovers;
  }

  get draining(): boolean {
    return this.#stopping;
  }

  /** The trace of a run submitted through this process, for when this worker takes it. */
  origin(runId: string, origin: Origin): void {
    if (this.#origins.size > 10_000) this.#origins.clear();
    this.#origins.set(runId, origin);
  }

  async start(): Promise<void> {
    if (this.#loop) return;
    this.#unsubscribe = this.#troupe.store.control?.subscribe((message) => {
      if (message.action === "cancel" && message.runId && this.executor.isActive(message.runId)) {
        this.#log.info({ taskId: message.runId }, "cancel received");
        void this.executor.cancel(message.runId);
      } else if (message.action === "drain" && message.worker === this.id) {
        this.#log.info("drain requested over the control channel");
        this.onDrainRequested?.();
      }
    });
    await this.#beat();
    const everyMs = Math.max(1_000, Math.floor((this.#queue.leaseSeconds * 1000) / 6));
    this.#heartbeat = setInterval(() => void this.#beat(), everyMs);
    this.#heartbeat.unref();
    this.#loop = this.#run();
    if (this.#queue.shared) this.#log.info({ concurrency: this.concurrency, leaseSeconds: this.#queue.leaseSeconds }, "worker taking runs from the queue");
  }

  /** The figures of this worker, for its heartbeat and /metrics. */
  info(): { id: string; host: string; pid: number; concurrency: number; held: number; takeovers: number; draining: boolean } {
    return { id: this.id, host: hostname(), pid: process.pid, concurrency: this.concurrency, held: this.#held.size, takeovers: this.#takeovers, draining: this.#stopping };
  }

  /** One heartbeat: the held jobs' leases renewed, the worker's row written, cancels asked for meanwhile applied. */
  async #beat(): Promise<void> {
    const jobs = [...this.#held.values()];
    try {
      await this.#queue.touch(jobs);
    } catch (error) {
      this.#log.warn({ err: error }, "the heartbeat of the runs held failed");
    }
    try {
      await this.#troupe.store.workers?.beat(this.info());
    } catch (error) {
      this.#log.warn({ err: error }, "the worker's heartbeat could not be written");
    }
    this.#metrics.workerRunsHeld.set({ worker: this.id }, this.#held.size);
    const running = this.executor.ids();
    if (running.length === 0) return;
    try {
      // A cancel whose message was missed (the listener was reconnecting) is on the run.
      for (const record of await this.#troupe.store.runs.getMany(running)) {
        if (record.cancelRequested && this.executor.isActive(record.id)) void this.executor.cancel(record.id);
      }
    } catch {
      // the next heartbeat looks again
    }
  }

  async #run(): Promise<void> {
    let backoffMs = 250;
    while (!this.#stopping) {
      const free = this.concurrency - this.#held.size;
      let taken: RunJob[] = [];
      if (free > 0) {
        try {
          taken = await this.#queue.take(free, this.#perOwner === undefined ? {} : { perOwner: this.#perOwner });
          backoffMs = 250;
        } catch (error) {
          this.#log.warn({ err: error, retryInMs: backoffMs }, "could not take runs from the queue");
          await new Promise((resolve) => setTimeout(resolve, backoffMs).unref());
          backoffMs = Math.min(5_000, backoffMs * 2);
          continue;
        }
      }
      for (const job of taken) {
        if (this.#held.has(job.runId)) {
          // The same run's job again while it goes on here (its heartbeat lapsed): the newest attempt is the one held.
          this.#held.set(job.runId, job);
          continue;
        }
        this.#held.set(job.runId, job);
        const handling: Promise<void> = this.#handle(job).finally(() => {
          this.#handling.delete(handling);
          this.#wake();
        });
        this.#handling.add(handling);
      }
      this.#metrics.workerRunsHeld.set({ worker: this.id }, this.#held.size);
      // A full batch may mean more is waiting: look again at once.
      if (free > 0 && taken.length === free) continue;
      this.#waker = new AbortController();
      await this.#queue.wait(this.#pollMs, this.#waker.signal);
    }
  }

  #wake(): void {
    this.#waker.abort();
  }

  /** What to do with a job, by its run's record. */
  async #handle(job: RunJob): Promise<void> {
    const log = this.#log.child({ taskId: job.runId, threadId: job.threadId, job: job.id, attempt: job.attempt });
    let settled = false;
    try {
      await this.executor.gate.pass();
      const record = await this.#troupe.store.runs.get(job.runId);
      let outcome: DriveOutcome | undefined;
      if (!record || TERMINAL.has(record.status)) {
        // Nothing to do: it ended (or was cancelled while queued).
      } else if (record.cancelRequested) {
        await this.#cancelInPlace(record);
      } else if (record.status === "queued" && this.#stopping) {
        // Taken while the worker began to drain: it stays queued, for another worker or the next server.
        await this.#queue.release(job, "the worker is draining");
        settled = true;
        return;
      } else if (record.status === "queued") {
        outcome = await this.executor.launch(record, { origin: this.#origins.get(record.id) ?? {} });
        this.#origins.delete(record.id);
      } else if (record.status === "running" || (record.status === "interrupted" && record.suspended !== null && record.interrupt === null)) {
        outcome = await this.#takeOver(record, log);
      }
      // Otherwise it waits for a person: a decision queues it again.
      if (outcome?.busy) {
        await this.#queue.release(this.#held.get(job.runId) ?? job, "another process holds the run's thread");
        settled = true;
        return;
      }
      if (outcome?.unreachable) {
        // The database went away under the run (or the session holding its thread did): once it
        // answers again, the run is marked suspended where its checkpoint left it and its job given
        // back, so the next worker resumes it without counting a crash. If the database stays away
        // past the lease, the job comes back by itself (and counts as a takeover).
        settled = true;
        void this.#suspendWhenBack(this.#held.get(job.runId) ?? job, log);
        return;
      }
      const after = outcome?.record;
      if (this.#queue.shared && after && after.status === "interrupted" && after.suspended !== null && after.interrupt === null) {
        // Drained (a shutdown, a drain): back to the queue at its last checkpoint, for any worker.
        await this.#troupe.store.runs.update(after.id, { status: "queued" }, { ifStatus: ["interrupted"] });
        log.info("task drained: back in the queue at its last checkpoint");
      }
      await this.#queue.complete(this.#held.get(job.runId) ?? job);
      settled = true;
    } catch (error) {
      log.error({ err: error }, "the job could not be handled");
      if (!settled && !isConnectionError(error)) await this.#queue.release(this.#held.get(job.runId) ?? job, errorMessage(error)).catch(() => {});
    } finally {
      if (!this.executor.isActive(job.runId)) this.#held.delete(job.runId);
    }
  }

  async #suspendWhenBack(job: RunJob, log: Logger): Promise<void> {
    const deadline = Date.now() + this.#queue.leaseSeconds * 1000;
    while (Date.now() < deadline && !this.#stopping) {
      try {
        await this.#troupe.store.runs.update(job.runId, { status: "interrupted", suspended: "database", pid: null, worker: null }, { ifStatus: ["running"] });
        await this.#queue.release(job, "the database went away while the run ran");
        log.warn("task suspended at its last checkpoint after the database came back; its job is back in the queue");
        return;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 1_000).unref());
      }
    }
  }

  /**
   * A job came back while its run was running (its worker died: the heartbeat stopped) or was
   * suspended: resume it from its checkpoint here — unless its thread is still held (its worker is
   * alive after all) or its workers kept dying while it ran (failed, naming the crashes).
   */
  async #takeOver(record: RunRecord, log: Logger): Promise<DriveOutcome> {
    if (record.status === "running") {
      const probe = await this.#troupe.store.threads.acquire(record.threadId, record);
      if (!probe) return { record: undefined, unreachable: false, busy: true };
      await probe.release();
      const crashes = await this.#troupe.store.runs.recordCrash(record.id);
      this.#takeovers += 1;
      this.#metrics.leaseTakeovers.inc({ worker: this.id });
      if (crashes >= this.#maxCrashes) {
        await failCrashedRun(this.#troupe, record, crashes, this.#maxCrashes, log, (event) => this.#hub.publish(event));
        this.#metrics.tasksTotal.inc({ status: "failed" });
        return { record: await this.#troupe.store.runs.get(record.id), unreachable: false, busy: false };
      }
      log.warn({ previousWorker: record.worker, crashes, maxCrashes: this.#maxCrashes }, "task's worker died while it ran; taking it over");
    }
    return this.executor.launch(record, { takeover: true });
  }

  /** A run asked to stop while no one drove it (its worker died meanwhile): cancelled where it stands. */
  async #cancelInPlace(record: RunRecord): Promise<void> {
    const stopped = await this.#troupe.store.runs.update(
      record.id,
      { status: "cancelled", stopReason: "cancelled", interrupt: null, suspended: null, pendingDecision: null, pid: null, worker: null, finishedAt: Date.now() },
      { ifStatus: ["queued", "running", "interrupted"] },
    );
    if (!stopped) return;
    this.#hub.publish(
      await this.#troupe.store.events.append(record.id, {
        type: "run-end",
        status: "cancelled",
        stopReason: "cancelled",
        metrics: record.metrics ?? { llmCalls: 0, toolCalls: 0, promptTokens: 0, completionTokens: 0, costUsd: 0, reflectionCount: 0, nodeVisits: 0, durationMs: record.activeMs },
      }),
    );
    this.#metrics.tasksTotal.inc({ status: "cancelled" });
  }

  /**
   * Stops taking runs, asks every run driven here to stop at its next checkpoint (after `graceMs`
   * they are stopped where they are), puts them back in the queue, and records that the worker left.
   */
  async drain(graceMs: number): Promise<{ drained: number; stopped: number }> {
    this.#stopping = true;
    this.#wake();
    const counts = await this.executor.drainAll(graceMs);
    await Promise.all([...this.#handling]);
    await this.#loop;
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    this.#unsubscribe?.();
    await this.#troupe.store.workers?.leave(this.id).catch(() => {});
    this.#log.info(counts, "worker drained");
    return counts;
  }
}
