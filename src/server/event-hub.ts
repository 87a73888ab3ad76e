import type { StoredEvent } from "../core/events.js";

type Listener = (event: StoredEvent) => void;

/** Hands the events of the runs this server executes to the SSE streams watching them, as they happen. */
export class EventHub {
  readonly #listeners = new Map<string, Set<Listener>>();

  subscribe(runId: string, listener: Listener): () => void {
    let listeners = this.#listeners.get(runId);
    if (!listeners) {
      listeners = new Set();
      this.#listeners.set(runId, listeners);
    }
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
      if (listeners.size === 0) this.#listeners.delete(runId);
    };
  }

  publish(event: StoredEvent): void {
    const listeners = this.#listeners.get(event.runId);
    if (!listeners) return;
    for (const listener of [...listeners]) {
      try {
        listener(event);
      } catch {
        // one stream's failure must not stop the others
      }
    }
  }

  /** How many streams watch a run (for tests and shutdown). */
  watchers(runId?: string): number {
    if (runId !== undefined) return this.#listeners.get(runId)?.size ?? 0;
    let total = 0;
    for (const listeners of this.#listeners.values()) total += listeners.size;
    return total;
  }
}
