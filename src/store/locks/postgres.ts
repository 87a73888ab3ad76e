import type pg from "pg";
import { SystemError } from "../../core/errors.js";
import type { RunRecord } from "../runs/contract.js";
import type { ThreadLease, ThreadLocks } from "./contract.js";
import { createClient } from "../database/postgres.js";

interface Held {
  controller: AbortController;
}

/**
 * Thread locks on Postgres: a session advisory lock per thread (a 64-bit hash of its id), all
 * of this process's on one dedicated connection. A lock lives as long as that session: when the
 * process dies — even by SIGKILL — the server ends the session and the lock is free for the
 * worker that takes the run over. When the connection drops while the process lives (the
 * database restarted), every lease is lost at once: its runs must stop, since another process may
 * now take them.
 */
export class PgThreadLocks implements ThreadLocks {
  readonly #url: string;
  readonly #held = new Map<string, Held>();
  #client: pg.Client | undefined;
  #connecting: Promise<pg.Client> | undefined;
  /** Lock statements run one at a time on the shared session. */
  #queue: Promise<unknown> = Promise.resolve();
  #closed = false;

  constructor(url: string) {
    this.#url = url;
  }

  async #session(): Promise<pg.Client> {
    if (this.#client) return this.#client;
    this.#connecting ??= (async () => {
      const client = createClient(this.#url, "troupe-locks");
      const lost = (): void => {
        if (this.#client !== client) return;
        this.#client = undefined;
        void client.end().catch(() => {});
        // Every lock went with the session.
        for (const [threadId, held] of this.#held) {
          held.controller.abort(new SystemError("thread_lease_lost", `the database session holding thread ${threadId} ended (the database restarted, or the connection broke)`, { threadId }));
        }
        this.#held.clear();
      };
      client.on("error", lost);
      client.on("end", lost);
      await client.connect();
      this.#client = client;
      return client;
    })().finally(() => (this.#connecting = undefined));
    return this.#connecting;
  }

  #serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.#queue.then(work, work);
    this.#queue = next.catch(() => {});
    return next;
  }

  acquire(threadId: string): Promise<ThreadLease | null> {
    return this.#serial(async () => {
      if (this.#closed) throw new Error("the store is closed");
      if (this.#held.has(threadId)) return null;
      const client = await this.#session();
      const { rows } = await client.query<{ got: boolean }>("SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS got", [`troupe.thread:${threadId}`]);
      if (!rows[0]?.got) return null;
      const controller = new AbortController();
      const held: Held = { controller };
      this.#held.set(threadId, held);
      let released = false;
      return {
        lost: controller.signal,
        release: () =>
          this.#serial(async () => {
            if (released) return;
            released = true;
            if (this.#held.get(threadId) !== held) return;
            this.#held.delete(threadId);
            if (this.#client === client) await client.query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [`troupe.thread:${threadId}`]).catch(() => {});
          }),
      };
    });
  }

  mayBeRunning(record: RunRecord): boolean {
    return record.status === "running";
  }

  /** Whether some session holds the thread's lock now (for tests and checks; this process's count). */
  async isHeld(pool: pg.Pool, threadId: string): Promise<boolean> {
    const { rows } = await pool.query<{ held: boolean }>(
      "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND ((classid::bigint << 32) | objid::bigint) = hashtextextended($1, 0)) AS held",
      [`troupe.thread:${threadId}`],
    );
    return rows[0]?.held ?? false;
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const held of this.#held.values()) held.controller.abort(new SystemError("thread_lease_lost", "the store closed while it held the thread"));
    this.#held.clear();
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => {});
  }
}
