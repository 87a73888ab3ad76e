/**
 * Work waiting for a slot, grouped by who submitted it (an API key's name) and handed out
 * round-robin across them: a key that queued four hundred items does not make another key's one
 * item wait behind all of them, only behind the next slot to free. Within a key, first in first
 * out. A key may also be held to a number of items at once (`canStart`), and the slots it cannot
 * use go to the others.
 */
export class FairQueue<T> {
  readonly #waiting = new Map<string, T[]>();
  /** Keys with waiting items, in the order they are served next. */
  readonly #turns: string[] = [];
  #size = 0;

  get size(): number {
    return this.#size;
  }

  /** Adds an item for a key; `first` puts it at the head of its key's line (a run answered by a person goes on before new ones). */
  push(key: string, item: T, first = false): void {
    let line = this.#waiting.get(key);
    if (!line) {
      line = [];
      this.#waiting.set(key, line);
      this.#turns.push(key);
    }
    if (first) line.unshift(item);
    else line.push(item);
    this.#size += 1;
  }

  includes(item: T): boolean {
    for (const line of this.#waiting.values()) if (line.includes(item)) return true;
    return false;
  }

  /** Removes an item wherever it waits; whether it was there. */
  remove(item: T): boolean {
    for (const [key, line] of this.#waiting) {
      const index = line.indexOf(item);
      if (index < 0) continue;
      line.splice(index, 1);
      this.#size -= 1;
      if (line.length === 0) this.#drop(key);
      return true;
    }
    return false;
  }

  /**
   * The next item to start: the first key in turn that `canStart` lets go, whose turn then moves
   * to the back; undefined when no waiting key may start now.
   */
  take(canStart: (key: string) => boolean = () => true): { key: string; item: T } | undefined {
    for (let index = 0; index < this.#turns.length; index += 1) {
      const key = this.#turns[index] as string;
      if (!canStart(key)) continue;
      const line = this.#waiting.get(key) as T[];
      const item = line.shift() as T;
      this.#size -= 1;
      this.#turns.splice(index, 1);
      if (line.length === 0) this.#waiting.delete(key);
      else this.#turns.push(key);
      return { key, item };
    }
    return undefined;
  }

  #drop(key: string): void {
    this.#waiting.delete(key);
    const index = this.#turns.indexOf(key);
    if (index >= 0) this.#turns.splice(index, 1);
  }
}

/** How many items each key has started and not yet finished: what a per-key limit is checked against. */
export class KeyedCounts {
  readonly #counts = new Map<string, number>();

  count(key: string): number {
    return this.#counts.get(key) ?? 0;
  }

  start(key: string): void {
    this.#counts.set(key, this.count(key) + 1);
  }

  end(key: string): void {
    const left = this.count(key) - 1;
    if (left > 0) this.#counts.set(key, left);
    else this.#counts.delete(key);
  }
}

/** The key of work submitted without an API key (the open local API, a recovered run with no owner). */
export const NO_OWNER = "";
