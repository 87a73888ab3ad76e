interface Waiting<T, R> {
  row: T;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

/**
 * Rows added during one turn of the event loop, written together on the next (or earlier, by
 * `flush`, before a read). `add` resolves once its row's batch is written — with what the write
 * returned for that row, when it returns anything — and rejects with the batch's error: a writer
 * learns its row is committed before it goes on, and a burst of rows (the items of a map
 * finishing together) costs one transaction instead of one each.
 */
export class TurnBatch<T, R = void> {
  readonly #write: (rows: T[]) => R[] | void;
  #waiting: Array<Waiting<T, R>> = [];
  #scheduled: NodeJS.Immediate | undefined;

  /** `write` writes a batch in one transaction, and throws when it cannot; it may return one result per row. */
  constructor(write: (rows: T[]) => R[] | void) {
    this.#write = write;
  }

  add(row: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.#waiting.push({ row, resolve, reject });
      this.#scheduled ??= setImmediate(() => this.flush());
    });
  }

  /** Writes the rows waiting, and tells their writers. */
  flush(): void {
    if (this.#scheduled) {
      clearImmediate(this.#scheduled);
      this.#scheduled = undefined;
    }
    const batch = this.#waiting;
    if (batch.length === 0) return;
    this.#waiting = [];
    let results: R[] | void;
    try {
      results = this.#write(batch.map((waiting) => waiting.row));
    } catch (error) {
      for (const waiting of batch) waiting.reject(error);
      return;
    }
    batch.forEach((waiting, index) => waiting.resolve((results ? results[index] : undefined) as R));
  }
}
