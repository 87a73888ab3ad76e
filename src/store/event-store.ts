import type { Statement } from "better-sqlite3";
import type { RunEvent, StoredEvent } from "../core/events.js";
import type { Sqlite } from "./database.js";

type Row = [runId: string, seq: number, type: string, at: number, data: string];

/** An event of any stream (a run's, an eval's) as stored: numbered per stream, with a timestamp. */
export type Sequenced<Event> = Event & { seq: number; at: number };

/**
 * The events of each run (and of each eval, under its id), numbered from 1, so readers can
 * resume after the last one they saw.
 * Numbers are given at once; rows are written in one transaction per burst (the events a step
 * emits together), on the next turn of the event loop or before any read.
 */
export class EventStore {
  readonly #db: Sqlite;
  readonly #next = new Map<string, number>();
  readonly #insert: Statement<Row>;
  readonly #maxSeq: Statement<[string], { seq: number | null }>;
  readonly #writeAll: (rows: Row[]) => void;
  #pending: Row[] = [];
  #scheduled: NodeJS.Immediate | undefined;

  constructor(db: Sqlite) {
    this.#db = db;
    this.#insert = db.prepare<Row>("INSERT INTO events (run_id, seq, type, at, data) VALUES (?, ?, ?, ?, ?)");
    this.#maxSeq = db.prepare<[string], { seq: number | null }>("SELECT MAX(seq) AS seq FROM events WHERE run_id = ?");
    this.#writeAll = db.transaction((rows: Row[]) => {
      for (const row of rows) this.#insert.run(...row);
    });
  }

  append(runId: string, event: RunEvent): StoredEvent {
    return { ...this.appendTo(runId, event), runId };
  }

  /** Appends an event of any kind to a stream (a run's id, an eval's id). */
  appendTo<Event extends { type: string }>(streamId: string, event: Event): Sequenced<Event> {
    let seq = this.#next.get(streamId);
    if (seq === undefined) {
      this.flush();
      seq = (this.#maxSeq.get(streamId)?.seq ?? 0) + 1;
    }
    const at = Date.now();
    this.#pending.push([streamId, seq, event.type, at, JSON.stringify(event)]);
    this.#next.set(streamId, seq + 1);
    this.#scheduled ??= setImmediate(() => this.flush());
    return { ...event, seq, at };
  }

  /** Writes the events not yet written. */
  flush(): void {
    if (this.#scheduled) {
      clearImmediate(this.#scheduled);
      this.#scheduled = undefined;
    }
    if (this.#pending.length === 0 || !this.#db.open) return;
    const rows = this.#pending;
    this.#pending = [];
    this.#writeAll(rows);
  }

  /** The events of a run after `afterSeq` (all of them by default). */
  list(runId: string, afterSeq = 0, limit = 10_000): StoredEvent[] {
    return this.listOf<RunEvent>(runId, afterSeq, limit).map((event) => ({ ...event, runId }));
  }

  /** The events of a stream after `afterSeq`, read back as the kind its writer appended. */
  listOf<Event>(streamId: string, afterSeq = 0, limit = 10_000): Array<Sequenced<Event>> {
    this.flush();
    const rows = this.#db
      .prepare("SELECT seq, at, data FROM events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?")
      .all(streamId, afterSeq, limit) as Array<{ seq: number; at: number; data: string }>;
    return rows.map((row) => ({ ...(JSON.parse(row.data) as Event), seq: row.seq, at: row.at }));
  }
}
