import { hostname } from "node:os";
import type { RunRecord } from "./run-store.js";

/** A thread held by this process while it drives a run on it. */
export interface ThreadLease {
  /** Aborted when the hold is lost (Postgres: its session ended): the run must stop at once, another process may take it. Absent where it cannot be lost. */
  readonly lost?: AbortSignal;
  release(): Promise<void>;
}

/**
 * Who may drive a thread: at most one drive at a time, across every process that shares the
 * store. SQLite: this process's own drives, and the owning process's pid and host recorded on a
 * running run. Postgres: a session advisory lock per thread, released when its session ends (a
 * killed worker's locks go with its connection).
 */
export interface ThreadLocks {
  /**
   * Holds the thread for this process; null when another drive holds it. `latest` is the thread's
   * latest run, whose record tells (SQLite) whether another process runs it.
   */
  acquire(threadId: string, latest?: RunRecord): Promise<ThreadLease | null>;
  /**
   * Whether a run recorded as running may still be going on somewhere (so its thread is busy):
   * SQLite, while its process is alive; Postgres, always (its holder, or the worker that takes it
   * over, goes on with it).
   */
  mayBeRunning(record: RunRecord): boolean;
}

/** Whether the process that owns a run (by its pid and host) is alive; this process counts. */
export function isAlive(pid: number | null, host: string | null): boolean {
  if (pid === null || host !== hostname()) return false;
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** A lease that is never lost. */
function localLease(release: () => void): ThreadLease {
  return { release: async () => release() };
}

/** The threads this process drives, per database (every store opened on one database in this process shares them). */
const HELD = new Map<string, Set<string>>();

/** Thread locks of one process on a SQLite store: its own drives, and other processes by the pid and host on the record. */
export class ProcessThreadLocks implements ThreadLocks {
  readonly #held: Set<string>;
  /** The threads held through this store (released when it closes). */
  readonly #mine = new Set<string>();

  /** `database` names the database the locks are for (its file). */
  constructor(database: string) {
    let held = HELD.get(database);
    if (!held) {
      held = new Set();
      HELD.set(database, held);
    }
    this.#held = held;
  }

  async acquire(threadId: string, latest?: RunRecord): Promise<ThreadLease | null> {
    if (this.#held.has(threadId)) return null;
    if (latest?.status === "running" && latest.pid !== process.pid && isAlive(latest.pid, latest.host)) return null;
    this.#held.add(threadId);
    this.#mine.add(threadId);
    return localLease(() => {
      if (!this.#mine.delete(threadId)) return;
      this.#held.delete(threadId);
    });
  }

  /** Releases every thread held through this store (it is closing). */
  releaseAll(): void {
    for (const threadId of this.#mine) this.#held.delete(threadId);
    this.#mine.clear();
  }

  mayBeRunning(record: RunRecord): boolean {
    return record.status === "running" && isAlive(record.pid, record.host);
  }
}
