import type { RunRecord } from "../runs/contract.js";
import { type ThreadLease, type ThreadLocks, isAlive } from "./contract.js";

/** The threads this process drives, per database (every store opened on one database in this process shares them). */
const HELD = new Map<string, Set<string>>();

/** A lease that is never lost. */
function localLease(release: () => void): ThreadLease {
  return { release: async () => release() };
}

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
