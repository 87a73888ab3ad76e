import type pg from "pg";
import { createClient } from "./postgres.js";

type Listener = (payload: string) => void;

/**
 * One LISTEN connection per process, for every channel troupe uses (events, control, new jobs).
 * It reconnects by itself (backing off up to 5 s) when the connection drops — the database
 * restarted — and then calls the `onReconnect` listeners, since notifications sent meanwhile
 * are lost: readers catch up from the tables.
 */
export class Notifications {
  readonly #url: string;
  readonly #listeners = new Map<string, Set<Listener>>();
  readonly #reconnected = new Set<() => void>();
  #client: pg.Client | undefined;
  #connecting: Promise<void> | undefined;
  #closed = false;
  #retryMs = 100;
  #timer: NodeJS.Timeout | undefined;

  constructor(url: string) {
    this.#url = url;
  }

  /** Listens on `channel`; returns the unsubscribe. The connection is made on the first subscription. */
  subscribe(channel: string, listener: Listener): () => void {
    let listeners = this.#listeners.get(channel);
    if (!listeners) {
      listeners = new Set();
      this.#listeners.set(channel, listeners);
      if (this.#client) void this.#client.query(`LISTEN ${channel}`).catch(() => {});
    }
    listeners.add(listener);
    void this.ready();
    return () => listeners.delete(listener);
  }

  /** Resolves on the next notification on `channel`, after `pollMs`, or when `signal` aborts, whichever comes first. */
  next(channel: string, pollMs: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      let done = false;
      const finish = (): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        unsubscribe();
        signal?.removeEventListener("abort", finish);
        resolve();
      };
      const timer = setTimeout(finish, pollMs);
      const unsubscribe = this.subscribe(channel, finish);
      signal?.addEventListener("abort", finish, { once: true });
      if (signal?.aborted) finish();
    });
  }

  /** Called after each reconnection (notifications may have been missed). */
  onReconnect(listener: () => void): () => void {
    this.#reconnected.add(listener);
    return () => this.#reconnected.delete(listener);
  }

  /** Resolves once the connection listens (it keeps trying in the background when it cannot). */
  ready(): Promise<void> {
    if (this.#client || this.#closed) return Promise.resolve();
    this.#connecting ??= this.#connect().finally(() => (this.#connecting = undefined));
    return this.#connecting;
  }

  async #connect(): Promise<void> {
    const client = createClient(this.#url, "troupe-listen");
    client.on("notification", (message) => {
      for (const listener of this.#listeners.get(message.channel) ?? []) {
        try {
          listener(message.payload ?? "");
        } catch {
          // one listener's failure must not stop the others
        }
      }
    });
    const lost = (): void => {
      if (this.#client !== client) return;
      this.#client = undefined;
      void client.end().catch(() => {});
      this.#schedule();
    };
    client.on("error", lost);
    client.on("end", lost);
    try {
      await client.connect();
      for (const channel of this.#listeners.keys()) await client.query(`LISTEN ${channel}`);
    } catch {
      void client.end().catch(() => {});
      this.#schedule();
      return;
    }
    if (this.#closed) {
      await client.end().catch(() => {});
      return;
    }
    const wasLost = this.#retryMs > 100;
    this.#client = client;
    this.#retryMs = 100;
    if (wasLost) for (const listener of this.#reconnected) listener();
  }

  #schedule(): void {
    if (this.#closed || this.#timer) return;
    this.#retryMs = Math.min(5_000, this.#retryMs * 2);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.ready();
    }, this.#retryMs);
    this.#timer.unref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => {});
  }
}
