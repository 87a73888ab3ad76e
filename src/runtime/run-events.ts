import type { RunEvent, StoredEvent } from "../core/events.js";
import { errorMessage } from "../core/errors.js";
import type { Store } from "../store/index.js";

/**
 * The events of one drive of a run: numbered and stored in the order emitted (a turn's share one
 * write), and handed to `onEvent` in that order once stored. A store that fails loses the
 * event, never the run: the first failure is kept and warned about when the drive ends.
 */
export class RunEventLog {
  readonly #store: Store;
  readonly #runId: string;
  readonly #onEvent: ((event: StoredEvent) => void) | undefined;
  readonly #listeners: Array<(event: RunEvent) => void>;
  #delivered: Promise<void> = Promise.resolve();
  #failure: unknown;

  constructor(store: Store, runId: string, onEvent: ((event: StoredEvent) => void) | undefined, listeners: Array<(event: RunEvent) => void> = []) {
    this.#store = store;
    this.#runId = runId;
    this.#onEvent = onEvent;
    this.#listeners = listeners;
  }

  emit(event: RunEvent): void {
    for (const listener of this.#listeners) listener(event);
    const stored = this.#store.events.append(this.#runId, event);
    this.#delivered = this.#delivered.then(
      () =>
        stored.then(
          (value) => this.#onEvent?.(value),
          (error: unknown) => {
            this.#failure ??= error;
          },
        ),
      () => {},
    );
  }

  /** Waits until every event emitted so far is stored and delivered. */
  delivered(): Promise<void> {
    return this.#delivered;
  }

  /** Once the drive is over: says (as a process warning) when some events could not be stored. */
  warnIfLost(): void {
    if (this.#failure !== undefined) process.emitWarning(`troupe: some events of run ${this.#runId} could not be stored: ${errorMessage(this.#failure)}`);
  }
}
