interface Waiting<T, R> {
  row: T;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

/** A row of a batch that failed on its own (the others were written): its writer's promise rejects with `error`. */
export class RowFailure {
  constructor(readonly error: unknown) {}
}

/** What a batch's write returns: nothing, or one result per row (a `RowFailure` for a row that failed alone). */
export type BatchResults<R> = Array<R | RowFailure> | void;

/**
 * Rows added during one turn of the event loop, written together on the next (or earlier, by
 * `flush`, before a read). `add` resolves once its row's batch is written — with what the write
 * returned for that row, when it returns anything — and rejects with the batch's error, or the
 * row's own: a writer learns its row is committed before it goes on, and a burst of rows (the
 * items of a map finishing together) costs one transaction instead of one each.
 *
 * The write may be synchronous (SQLite: a flush writes before it returns) or asynchronous
 * (Postgres: rows added while a batch is being written wait for the next one). Asynchronous
 * batches may be written side by side on several connections, and then commit in any order;
 * `serial` writes one batch at a time, so rows commit in the order they were added (an event log,
 * whose readers stop at a run's last event, needs that).
 */
export class TurnBatch<T, R = void> {
  readonly #write: (rows: T[]) => BatchResults<R> | Promise<BatchResults<R>>;
  #waiting: Array<Waiting<T, R>> = [];
  #scheduled: NodeJS.Immediate | undefined;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #serial: boolean;
  /** Serial: the flush waiting for the batch being written. */
  #next: Promise<void> | undefined;

  /** `write` writes a batch in one transaction, and throws when it cannot; it may return one result per row. */
  constructor(write: (rows: T[]) => BatchResults<R> | Promise<BatchResults<R>>, options: { serial?: boolean } = {}) {
    this.#write = write;
    this.#serial = options.serial ?? false;
  }

  add(row: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#waiting.push({ row, resolve, reject });
      this.#scheduled ??= setImmediate(() => void this.flush());
    });
  }

  /** Rows waiting to be written. */
  get pending(): number {
    return this.#waiting.length;
  }

  /**
   * Writes the rows waiting, and tells their writers. A synchronous write is done before this
   * returns; the promise resolves once every batch started so far has been written (or failed).
   */
  flush(): Promise<void> {
    if (this.#scheduled) {
      clearImmediate(this.#scheduled);
      this.#scheduled = undefined;
    }
    if (this.#serial && this.#inFlight.size > 0 && this.#waiting.length > 0) {
      // The rows wait for the batch being written (and join those added meanwhile): one batch at a time.
      this.#next ??= this.#settled().then(() => {
        this.#next = undefined;
        return this.flush();
      });
      return this.#next;
    }
    const batch = this.#waiting;
    if (batch.length > 0) {
      this.#waiting = [];
      let outcome: BatchResults<R> | Promise<BatchResults<R>>;
      try {
        outcome = this.#write(batch.map((waiting) => waiting.row));
      } catch (error) {
        for (const waiting of batch) waiting.reject(error);
        return this.#settled();
      }
      if (outcome instanceof Promise) {
        const done = outcome.then(
          (results) => settle(batch, results),
          (error: unknown) => {
            for (const waiting of batch) waiting.reject(error);
          },
        );
        this.#inFlight.add(done);
        void done.finally(() => this.#inFlight.delete(done));
      } else {
        settle(batch, outcome);
      }
    }
    return this.#settled();
  }

  #settled(): Promise<void> {
    return this.#inFlight.size === 0 ? Promise.resolve() : Promise.all([...this.#inFlight]).then(() => undefined);
  }
}

function settle<T, R>(batch: Array<Waiting<T, R>>, results: BatchResults<R>): void {
  batch.forEach((waiting, index) => {
    const result = results ? results[index] : undefined;
    if (result instanceof RowFailure) waiting.reject(result.error);
    else waiting.resolve(result as R);
  });
}
