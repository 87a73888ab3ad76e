import type { Statement } from "better-sqlite3";
import type { RunEvent, StoredEvent } from "../core/events.js";
import type { Sqlite } from "./database.js";

type Row = [runId: string, seq: number, type: string, at: number, data: string];

/**
 * The events of each run, numbered from 1, so readers can resume after the last one they saw.
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
    let seq = this.#next.get(runId);
    if (seq === undefined) {
      this.flush();
      seq = (this.#maxSeq.get(runId)?.seq ?? 0) + 1;
    }
    const at = Date.now();
    this.#pending.push([runId, seq, event.type, at, JSON.stringify(event)]);
    this.#next.set(runId, seq + 1);
    this.#scheduled ??= setImmediate(() => this.flush());
    return { ...event, seq, at, runId };
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
    this.flush();
    const rows = this.#db
      .prepare("SELECT seq, at, data FROM events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?")
      .all(runId, afterSeq, limit) as Array<{ seq: number; at: number; data: string }>;
    return rows.map((row) => ({ ...(JSON.parse(row.data) as RunEvent), seq: row.seq, at: row.at, runId }));
  }
}
