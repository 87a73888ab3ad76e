import type { Statement } from "better-sqlite3";
import type { RunEvent, StoredEvent } from "../../core/events.js";
import type { Sqlite } from "../database/sqlite.js";
import { type EventStore, type Sequenced } from "./contract.js";

type Row = [runId: string, seq: number, type: string, at: number, data: string];

/**
 * The event log in SQLite, on its own connection with `synchronous = NORMAL`. Numbers are given
 * at once (this process is the only writer of its runs); rows are written in one transaction per
 * burst (the events a step emits together), on the next turn of the event loop or before any read.
 */
export class SqliteEventStore implements EventStore {
  readonly #db: Sqlite;
  /** The next number of each stream written to since its last `run-end` (a run's events). */
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

  async append(runId: string, event: RunEvent): Promise<StoredEvent> {
    return { ...this.#appendNow(runId, event), runId };
  }

  async appendTo<Event extends { type: string }>(streamId: string, event: Event): Promise<Sequenced<Event>> {
    return this.#appendNow(streamId, event);
  }

  #appendNow<Event extends { type: string }>(streamId: string, event: Event): Sequenced<Event> {
    let seq = this.#next.get(streamId);
    if (seq === undefined) {
      this.#write();
      seq = (this.#maxSeq.get(streamId)?.seq ?? 0) + 1;
    }
    const at = Date.now();
    this.#pending.push([streamId, seq, event.type, at, JSON.stringify(event)]);
    // A run's numbers are kept while it is driven: after its `run-end` the next event (a resumed
    // drive's, a cancel's) reads where the log stands, so the map does not grow with every run.
    if (event.type === "run-end") this.#next.delete(streamId);
    else this.#next.set(streamId, seq + 1);
    this.#scheduled ??= setImmediate(() => this.#write());
    return { ...event, seq, at };
  }

  async flush(): Promise<void> {
    this.#write();
  }

  #write(): void {
    if (this.#scheduled) {
      clearImmediate(this.#scheduled);
      this.#scheduled = undefined;
    }
    if (this.#pending.length === 0 || !this.#db.open) return;
    const rows = this.#pending;
    this.#pending = [];
    this.#writeAll(rows);
  }

  async list(runId: string, afterSeq = 0, limit = 10_000): Promise<StoredEvent[]> {
    return (await this.listOf<RunEvent>(runId, afterSeq, limit)).map((event) => ({ ...event, runId }));
  }

  async listOf<Event>(streamId: string, afterSeq = 0, limit = 10_000): Promise<Array<Sequenced<Event>>> {
    this.#write();
    const rows = this.#db
      .prepare("SELECT seq, at, data FROM events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?")
      .all(streamId, afterSeq, limit) as Array<{ seq: number; at: number; data: string }>;
    return rows.map((row) => ({ ...(JSON.parse(row.data) as Event), seq: row.seq, at: row.at }));
  }
}
