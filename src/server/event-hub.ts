import type { StoredEvent } from "../core/events.js";

/**
 * Hands the events this server produces to the SSE streams watching them, as they happen: a
 * run's events by run id (the default), or another stream's (an eval's) by the key `keyOf` reads.
 */
export class EventHub<Event = StoredEvent> {
  readonly #listeners = new Map<string, Set<(event: Event) => void>>();
  readonly #keyOf: (event: Event) => string;
  readonly #all = new Set<(event: Event) => void>();

  constructor(keyOf: (event: Event) => string = (event) => (event as StoredEvent).runId) {
    this.#keyOf = keyOf;
  }

  subscribe(key: string, listener: (event: Event) => void): () => void {
    let listeners = this.#listeners.get(key);
    if (!listeners) {
      listeners = new Set();
      this.#listeners.set(key, listeners);
    }
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
      if (listeners.size === 0) this.#listeners.delete(key);
    };
  }

  /** Listens to every event, whatever its key (background work that follows every run). */
  subscribeAll(listener: (event: Event) => void): () => void {
    this.#all.add(listener);
    return () => this.#all.delete(listener);
  }

  publish(event: Event): void {
    for (const listener of this.#all) {
      try {
        listener(event);
      } catch {
        // a listener's failure must not stop the streams
      }
    }
    const listeners = this.#listeners.get(this.#keyOf(event));
    if (!listeners) return;
    for (const listener of [...listeners]) {
      try {
        listener(event);
      } catch {
        // one stream's failure must not stop the others
      }
    }
  }

  /** How many streams watch a key (for tests and shutdown). */
  watchers(key?: string): number {
    if (key !== undefined) return this.#listeners.get(key)?.size ?? 0;
    let total = 0;
    for (const listeners of this.#listeners.values()) total += listeners.size;
    return total;
  }
}
