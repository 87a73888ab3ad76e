import type pg from "pg";
import type { RunEvent, StoredEvent } from "../../core/events.js";
import type { EventStore, Sequenced } from "./contract.js";
import { TurnBatch } from "../turn-batch.js";
import type { Notifications } from "../database/postgres-notifications.js";

/** The channel `troupe_append_events` notifies with a stream's id. */
export const EVENTS_CHANNEL = "troupe_events";

interface Append {
  streamId: string;
  type: string;
  at: number;
  data: string;
}

/**
 * The event log on Postgres. The events appended in one turn of the event loop go in one call of
 * `troupe_append_events` (one round trip; one call at a time, so a process's events are numbered
 * in the order it appended them): the database numbers each stream's events under a lock per stream — so an API process may append to a run a worker drives — and notifies each stream
 * on commit, which is how other processes' SSE streams hear of them (`follow`).
 *
 * Appends go on their own connection with `synchronous_commit = off` (`appends`), as SQLite's event
 * log has its own connection with `synchronous = NORMAL`: an event is not waited for on its way
 * to disk, and the next synced commit (a checkpoint's, a run's record) flushes the log with it, so
 * what a crash can lose is only events written after the last state that was kept. A watcher hears
 * of an event as soon as it is committed, not a disk flush later.
 */
export class PostgresEventStore implements EventStore {
  readonly #pool: pg.Pool;
  readonly #appends: pg.Pool;
  readonly #notifications: Notifications;
  readonly #batch: TurnBatch<Append, number>;

  constructor(pool: pg.Pool, notifications: Notifications, appends: pg.Pool = pool) {
    this.#pool = pool;
    this.#appends = appends;
    this.#notifications = notifications;
    this.#batch = new TurnBatch<Append, number>(async (rows) => {
      const { rows: numbered } = await this.#appends.query<{ out_stream: string; out_seq: number }>("SELECT out_stream, out_seq FROM troupe_append_events($1, $2, $3, $4)", [
        rows.map((row) => row.streamId),
        rows.map((row) => row.type),
        rows.map((row) => row.at),
        rows.map((row) => row.data),
      ]);
      // Each stream's numbers come back in the order of its rows in the batch.
      const byStream = new Map<string, number[]>();
      for (const row of numbered) {
        const list = byStream.get(row.out_stream) ?? [];
        list.push(row.out_seq);
        byStream.set(row.out_stream, list);
      }
      for (const list of byStream.values()) list.sort((a, b) => a - b);
      return rows.map((row) => byStream.get(row.streamId)?.shift() as number);
      // One call at a time: a stream's events are numbered in the order they were appended (readers stop at a run's last event).
    }, { serial: true });
  }

  async append(runId: string, event: RunEvent): Promise<StoredEvent> {
    return { ...(await this.appendTo(runId, event)), runId };
  }

  async appendTo<Event extends { type: string }>(streamId: string, event: Event): Promise<Sequenced<Event>> {
    const at = Date.now();
    const seq = await this.#batch.add({ streamId, type: event.type, at, data: JSON.stringify(event) });
    return { ...event, seq, at };
  }

  flush(): Promise<void> {
    return this.#batch.flush();
  }

  async list(runId: string, afterSeq = 0, limit = 10_000): Promise<StoredEvent[]> {
    return (await this.listOf<RunEvent>(runId, afterSeq, limit)).map((event) => ({ ...event, runId }));
  }

  async listOf<Event>(streamId: string, afterSeq = 0, limit = 10_000): Promise<Array<Sequenced<Event>>> {
    await this.flush();
    const { rows } = await this.#pool.query<{ seq: number; at: number; data: string }>("SELECT seq, at, data FROM events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3", [streamId, afterSeq, limit]);
    return rows.map((row) => sequencedOf<Event>(row));
  }

  async listMany(after: ReadonlyMap<string, number>, limit: number): Promise<Map<string, StoredEvent[]>> {
    const found = new Map<string, StoredEvent[]>();
    if (after.size === 0) return found;
    await this.flush();
    // One statement for every run: each run's events after its own seq, by the primary key (run_id, seq).
    const { rows } = await this.#pool.query<{ run_id: string; seq: number; at: number; data: string }>(
      `SELECT e.run_id, e.seq, e.at, e.data FROM unnest($1::text[], $2::bigint[]) AS wanted(run_id, after_seq)
       CROSS JOIN LATERAL (SELECT run_id, seq, at, data FROM events WHERE run_id = wanted.run_id AND seq > wanted.after_seq ORDER BY seq LIMIT $3) AS e
       ORDER BY e.run_id, e.seq`,
      [[...after.keys()], [...after.values()], limit],
    );
    for (const row of rows) {
      const list = found.get(row.run_id) ?? [];
      list.push({ ...sequencedOf<RunEvent>(row), runId: row.run_id });
      found.set(row.run_id, list);
    }
    return found;
  }

  follow(listener: (streamId: string) => void): () => void {
    const unsubscribe = this.#notifications.subscribe(EVENTS_CHANNEL, listener);
    // After a reconnection, every stream may have missed events: an empty id asks followers to re-read all they follow.
    const unhook = this.#notifications.onReconnect(() => listener(""));
    return () => {
      unsubscribe();
      unhook();
    };
  }
}

/** An event as a row of `events` holds it: its JSON, with the number and moment the store gave it (BIGINTs read as numbers by the pool). */
function sequencedOf<Event>(row: { seq: number; at: number; data: string }): Sequenced<Event> {
  return { ...(JSON.parse(row.data) as Event), seq: row.seq, at: row.at };
}
