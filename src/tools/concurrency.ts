/** A counting semaphore: at most `limit` holders at once; waiters are served in order and can give up on abort. */
export class Semaphore {
  #limit: number;
  #active = 0;
  readonly #waiting: Array<{ grant: () => void; cancel: () => void }> = [];

  constructor(limit: number) {
    this.#limit = Math.max(1, Math.floor(limit));
  }

  get limit(): number {
    return this.#limit;
  }

  get active(): number {
    return this.#active;
  }

  set limit(value: number) {
    this.#limit = Math.max(1, Math.floor(value));
    this.#drain();
  }

  /** Waits for a slot; returns the function that frees it. Rejects with the signal's reason if aborted while waiting. */
  acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      let released = false;
      const release = (): void => {
        if (released) return;
        released = true;
        this.#active -= 1;
        this.#drain();
      };
      const waiter = {
        grant: () => {
          signal?.removeEventListener("abort", onAbort);
          this.#active += 1;
          resolve(release);
        },
        cancel: () => reject(signal?.reason),
      };
      const onAbort = (): void => {
        const index = this.#waiting.indexOf(waiter);
        if (index >= 0) this.#waiting.splice(index, 1);
        waiter.cancel();
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push(waiter);
      this.#drain();
    });
  }

  #drain(): void {
    while (this.#active < this.#limit && this.#waiting.length > 0) this.#waiting.shift()?.grant();
  }
}

/** Waits `ms`, or less if the signal aborts (then rejects with its reason). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
