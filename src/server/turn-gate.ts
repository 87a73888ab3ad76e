/**
 * Lets one run step start per turn of the event loop. A run on a model that answers at once
 * (offline, scripted, a cache) never waits on I/O: its steps chain as microtasks, and a hundred
 * such runs released together would hold the loop for as long as all their steps take, while
 * HTTP requests wait. Each node start passes through here, so between two steps the loop polls
 * for I/O and a request is answered in about one step's time, however many runs there are.
 *
 * With `yieldTo`, a turn on which it says requests wait for work queued behind the gate's (the
 * submissions of this turn, whose group commit is a later immediate of the same turn) lets that
 * work go first: the step starts on the next turn instead — never two turns in a row, so runs are
 * never starved.
 */
export class TurnGate {
  readonly #waiting: Array<() => void> = [];
  readonly #yieldTo: (() => boolean) | undefined;
  #scheduled = false;
  /** The last turn let other work go first: this one passes whatever `yieldTo` says. */
  #yielded = false;

  constructor(options: { yieldTo?: () => boolean } = {}) {
    this.#yieldTo = options.yieldTo;
  }

  /** Resolves on a later turn of the event loop, in arrival order, one per turn. */
  pass(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#waiting.push(resolve);
      this.#schedule();
    });
  }

  get waiting(): number {
    return this.#waiting.length;
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    // An immediate queued from inside an immediate runs on the next turn, after the poll phase.
    setImmediate(() => {
      this.#scheduled = false;
      if (!this.#yielded && this.#yieldTo?.() === true) {
        this.#yielded = true;
        this.#schedule();
        return;
      }
      this.#yielded = false;
      this.#waiting.shift()?.();
      if (this.#waiting.length > 0) this.#schedule();
    });
  }
}
