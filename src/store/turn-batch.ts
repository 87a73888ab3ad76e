interface Waiting<T> {
  row: T;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/**
 * Rows added during one turn of the event loop, written together on the next (or earlier, by
 * `flush`, before a read). `add` resolves once its row's batch is written and rejects with the
 * batch's error: a writer learns its row is committed before it goes on, and a burst of rows
 * (the items of a map finishing together) costs one transaction instead of one each.
 */
export class TurnBatch<T> {
  readonly #write: (rows: T[]) => void;
  #waiting: Array<Waiting<T>> = [];
  #scheduled: NodeJS.Immediate | undefined;

  /** `write` writes a batch in one transaction, and throws when it cannot. */
  constructor(write: (rows: T[]) => void) {
    this.#write = write;
  }

  add(row: T): Promise<void> {
    return new Promise<void>((resolve, reject) => {
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
    try {
      this.#write(batch.map((waiting) => waiting.row));
    } catch (error) {
      for (const waiting of batch) waiting.reject(error);
      return;
    }
    for (const waiting of batch) waiting.resolve();
  }
}
