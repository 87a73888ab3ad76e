import { hostname } from "node:os";
import type { RunRecord } from "../runs/contract.js";

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


