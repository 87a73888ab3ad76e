import { RUN_STATUSES } from "../../core/run.js";
import type { Sqlite } from "../database/sqlite.js";
import type { QueuedRun, RunJob, RunQueue, TakeOptions } from "./contract.js";
import { FairQueue, KeyedCounts, NO_OWNER } from "./fair-queue.js";

/** How long a run given back (its thread held by another process) waits before it may be taken again. */
const RETRY_MS = 500;
/** How often runs waiting for another run of their thread are looked at (that run may end in another process). */
const PARKED_POLL_MS = 500;
/** Up to this many parked runs, a look reads them by id; more, it reads what changed since the last look. */
const PARKED_BY_ID = 500;

interface ParkedRow {
  id: string;
  thread_id: string;
  owner: string | null;
  status: string;
  waits_for: string | null;
}

interface Waiting {
  run: QueuedRun;
  attempt: number;
}

/**
 * The run queue of a SQLite server, the only process that drives the API's runs. It lives in
 * memory: what it holds is also in the runs table as `queued`, and a server that starts again
 * offers those to it (`TaskService.recover`). The run store hands it every run written queued
 * (created so, answered by a person, released by the run it waited for) once the write committed,
 * and withdraws a run that stops being queued (cancelled), so a cancelled run is never taken.
 *
 * `take` goes round-robin across owners (API keys), first in first out within one, and holds each
 * owner to `perOwner` runs taken and not completed: the slots one owner cannot use go to the others.
 * A run waiting for another run of its thread is parked until its record says it was released —
 * by this process's store at once, or by another process (a `troupe run` on the same thread) on the
 * next look. Until `open()` (a server takes from it) offers are ignored: a CLI process that opens
 * the same store keeps nothing in memory.
 */
export class SqliteRunQueue implements RunQueue {
  readonly shared = false;
  /** No other process takes over a job here: the lease only paces the dispatcher's heartbeat. */
  readonly leaseSeconds = 60;
  readonly #db: Sqlite;
  readonly #waiting = new FairQueue<string>();
  /** What each run waiting or held was offered with. */
  readonly #runs = new Map<string, Waiting>();
  /** Jobs taken and not completed or released, by job id (the run id). */
  readonly #held = new Map<string, RunJob & { owner: string }>();
  readonly #perOwner = new KeyedCounts();
  readonly #parked = new Set<string>();
  readonly #retries = new Set<NodeJS.Timeout>();
  #parkedTimer: NodeJS.Timeout | undefined;
  /** When the parked runs were last looked at (ms): a look by change reads what changed since. */
  #lastLook = 0;
  #wakers = new Set<() => void>();
  /** Changes (offers, slots freed) so far, and how many the last `take` or `wait` saw: `wait` returns at once after one they missed. */
  #changes = 0;
  #seen = 0;
  #open = false;

  constructor(db: Sqlite) {
    this.#db = db;
  }

  /** Runs waiting to be taken (not parked, not held). */
  get size(): number {
    return this.#waiting.size;
  }

  /** Starts keeping what is offered: this process takes runs from the queue. */
  open(): void {
    this.#open = true;
  }

  /** Stops keeping runs and forgets those kept; their records stay queued for the next server. */
  close(): void {
    this.#open = false;
    for (const timer of this.#retries) clearTimeout(timer);
    this.#retries.clear();
    if (this.#parkedTimer) clearInterval(this.#parkedTimer);
    this.#parkedTimer = undefined;
    this.#parked.clear();
    for (const id of [...this.#runs.keys()]) if (!this.#held.has(id)) this.withdraw(id);
    this.#wake();
  }

  /**
   * A run written queued: to be taken, or parked while it waits for another run of its thread.
   * `first` puts it at the head of its owner's line (a run a person answered goes on before new ones).
   */
  offer(run: QueuedRun & { waitsFor?: string | null }, first = false): void {
    if (!this.#open || this.#runs.has(run.runId) || this.#held.has(run.runId)) return;
    if (run.waitsFor) {
      this.#park(run.runId);
      return;
    }
    this.#parked.delete(run.runId);
    this.#push({ run: { runId: run.runId, threadId: run.threadId, owner: run.owner ?? NO_OWNER }, attempt: 0 }, first);
  }

  /**
   * A queued run no longer waits for another run of its thread: taken from now on, if this queue
   * parked it. A run another process queued (a `troupe run` waiting for the same thread) is that
   * process's to start, even when this process's store released it.
   */
  released(run: QueuedRun): void {
    if (this.#parked.has(run.runId)) this.offer(run);
  }

  /** A run that is no longer queued (cancelled, started elsewhere): it is not taken. */
  withdraw(runId: string): void {
    this.#parked.delete(runId);
    if (this.#held.has(runId)) return;
    this.#runs.delete(runId);
    if (this.#waiting.remove(runId)) this.#wake();
  }

  async take(limit: number, options: TakeOptions = {}): Promise<RunJob[]> {
    const perOwner = options.perOwner ?? Number.POSITIVE_INFINITY;
    const jobs: RunJob[] = [];
    this.#seen = this.#changes;
    while (jobs.length < limit) {
      const next = this.#waiting.take((owner) => this.#perOwner.count(owner) < perOwner);
      if (!next) break;
      const waiting = this.#runs.get(next.item) as Waiting;
      this.#runs.delete(next.item);
      const job = { id: next.item, attempt: waiting.attempt, runId: waiting.run.runId, threadId: waiting.run.threadId, owner: next.key };
      this.#held.set(job.id, job);
      this.#perOwner.start(next.key);
      jobs.push({ id: job.id, attempt: job.attempt, runId: job.runId, threadId: job.threadId });
    }
    return jobs;
  }

  async touch(): Promise<void> {}

  async complete(job: RunJob): Promise<void> {
    this.#let(job);
  }

  /** Gives a job back: taken again after a short wait (its thread is held by another process now). */
  async release(job: RunJob, _reason?: string): Promise<void> {
    const held = this.#let(job);
    if (!held || !this.#open) return;
    const timer = setTimeout(() => {
      this.#retries.delete(timer);
      if (!this.#open || this.#runs.has(held.runId) || this.#held.has(held.runId)) return;
      this.#push({ run: { runId: held.runId, threadId: held.threadId, owner: held.owner }, attempt: held.attempt + 1 }, true);
    }, RETRY_MS);
    timer.unref();
    this.#retries.add(timer);
  }

  wait(pollMs: number, signal?: AbortSignal): Promise<void> {
    // Runs waiting whose owners are at their limit do not count: a slot freed or an offer wakes it.
    if (signal?.aborted) return Promise.resolve();
    if (this.#changes !== this.#seen) {
      // Once per change: a taker with no free slot (it does not take) must not spin on it.
      this.#seen = this.#changes;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        this.#wakers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, pollMs);
      timer.unref();
      signal?.addEventListener("abort", done, { once: true });
      this.#wakers.add(done);
    });
  }

  async depth(): Promise<number> {
    return this.#waiting.size;
  }

  async ping(): Promise<void> {
    this.#db.prepare("SELECT 1").get();
  }

  #push(waiting: Waiting, first: boolean): void {
    this.#runs.set(waiting.run.runId, waiting);
    this.#waiting.push(waiting.run.owner ?? NO_OWNER, waiting.run.runId, first);
    this.#wake();
  }

  /** The job's slot is free again (its owner's count too). */
  #let(job: RunJob): (RunJob & { owner: string }) | undefined {
    const held = this.#held.get(job.id);
    if (!held) return undefined;
    this.#held.delete(job.id);
    this.#perOwner.end(held.owner);
    this.#wake();
    return held;
  }

  #wake(): void {
    this.#changes += 1;
    for (const waker of [...this.#wakers]) waker();
  }

  #park(runId: string): void {
    this.#parked.add(runId);
    if (this.#parkedTimer) return;
    this.#lastLook = Date.now();
    this.#parkedTimer = setInterval(() => this.#lookAtParked(), PARKED_POLL_MS);
    this.#parkedTimer.unref();
  }

  /**
   * Offers the parked runs released meanwhile, and forgets those that will never start. A few are
   * read by id; many (a deep queue of turns on busy threads) by what changed since the last look,
   * so a look costs what changed, not what is parked.
   */
  #lookAtParked(): void {
    if (this.#parked.size > 0 && this.#db.open) {
      const since = this.#lastLook;
      this.#lastLook = Date.now();
      let rows: ParkedRow[];
      if (this.#parked.size <= PARKED_BY_ID) {
        const ids = [...this.#parked];
        rows = this.#db.prepare(`SELECT id, thread_id, owner, status, waits_for FROM runs WHERE id IN (${ids.map(() => "?").join(", ")})`).all(...ids) as ParkedRow[];
        const found = new Set(rows.map((row) => row.id));
        for (const id of ids) if (!found.has(id)) this.#parked.delete(id);
      } else {
        // Changed since the last look (a second's margin for another process's clock and commit), through the (status, updated_at) index.
        rows = (
          this.#db
            .prepare(`SELECT id, thread_id, owner, status, waits_for FROM runs WHERE status IN (${RUN_STATUSES.map(() => "?").join(", ")}) AND updated_at >= ?`)
            .all(...RUN_STATUSES, since - 1_000) as ParkedRow[]
        ).filter((row) => this.#parked.has(row.id));
      }
      for (const row of rows) {
        if (row.status !== "queued") this.#parked.delete(row.id);
        else if (row.waits_for === null) this.released({ runId: row.id, threadId: row.thread_id, owner: row.owner });
      }
    }
    if ((this.#parked.size === 0 || !this.#db.open) && this.#parkedTimer) {
      clearInterval(this.#parkedTimer);
      this.#parkedTimer = undefined;
    }
  }
}
