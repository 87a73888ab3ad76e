import type { Clock } from "../core/clock.js";

/**
 * A clock that moves only when told (`advance`, `set`): what waits on it (a schedule's timer,
 * retention's next tick) wakes as its time is passed, so a test sees an hourly or daily tick at
 * once. Waits are woken in the order they fall due.
 */
export class ManualClock implements Clock {
  #now: number;
  readonly #waits = new Set<{ at: number; wake: () => void }>();

  constructor(start = Date.now()) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason as Error);
      const wait = {
        at: this.#now + Math.max(0, ms),
        wake: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      const onAbort = (): void => {
        this.#waits.delete(wait);
        reject(signal?.reason as Error);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      if (wait.at <= this.#now) wait.wake();
      else this.#waits.add(wait);
    });
  }

  /** Moves the clock on by `ms` and wakes what was due by then. */
  advance(ms: number): void {
    this.set(this.#now + ms);
  }

  /** Moves the clock to `at` (never back) and wakes what was due by then. */
  set(at: number): void {
    this.#now = Math.max(this.#now, at);
    for (const wait of [...this.#waits].sort((a, b) => a.at - b.at)) {
      if (wait.at > this.#now) continue;
      this.#waits.delete(wait);
      wait.wake();
    }
  }

  /** How many waits are pending (a test can tell that a timer went back to sleep). */
  get waiting(): number {
    return this.#waits.size;
  }
}
