import type { Sqlite } from "../store/database/sqlite.js";

interface Pending {
  write: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit: the writes requested during one turn of the event loop run in one transaction
 * on the next, so a burst of submissions costs one fsync instead of one each (the database
 * syncs every commit). A write that throws fails alone; the others commit. Each caller learns
 * its result only once the transaction is on disk.
 */
export class GroupCommit {
  readonly #db: Sqlite;
  #pending: Pending[] = [];
  #scheduled = false;

  constructor(db: Sqlite) {
    this.#db = db;
  }

  run<T>(write: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#pending.push({ write, resolve: resolve as (value: unknown) => void, reject });
      if (this.#scheduled) return;
      this.#scheduled = true;
      setImmediate(() => this.#flush());
    });
  }

  #flush(): void {
    this.#scheduled = false;
    const batch = this.#pending;
    this.#pending = [];
    const outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
    try {
      this.#db.transaction(() => {
        for (const item of batch) {
          try {
            outcomes.push({ ok: true, value: item.write() });
          } catch (error) {
            // A failed statement is undone alone; the transaction goes on.
            outcomes.push({ ok: false, error });
          }
        }
      })();
    } catch (error) {
      for (const item of batch) item.reject(error);
      return;
    }
    batch.forEach((item, index) => {
      const outcome = outcomes[index];
      if (outcome?.ok) item.resolve(outcome.value);
      else item.reject(outcome?.error);
    });
  }
}
