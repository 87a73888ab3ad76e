import type { RunEvent, StoredEvent } from "../core/events.js";
import type { Sqlite } from "./database.js";

/** The events of each run, numbered from 1, so readers can resume after the last one they saw. */
export class EventStore {
  readonly #db: Sqlite;
  readonly #next = new Map<string, number>();

  constructor(db: Sqlite) {
    this.#db = db;
  }

  append(runId: string, event: RunEvent): StoredEvent {
    let seq = this.#next.get(runId);
    if (seq === undefined) {
      const row = this.#db.prepare("SELECT MAX(seq) AS seq FROM events WHERE run_id = ?").get(runId) as { seq: number | null };
      seq = (row.seq ?? 0) + 1;
    }
    const at = Date.now();
    this.#db.prepare("INSERT INTO events (run_id, seq, type, at, data) VALUES (?, ?, ?, ?, ?)").run(runId, seq, event.type, at, JSON.stringify(event));
    this.#next.set(runId, seq + 1);
    return { ...event, seq, at, runId };
  }

  /** The events of a run after `afterSeq` (all of them by default). */
  list(runId: string, afterSeq = 0, limit = 10_000): StoredEvent[] {
    const rows = this.#db
      .prepare("SELECT seq, at, data FROM events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?")
      .all(runId, afterSeq, limit) as Array<{ seq: number; at: number; data: string }>;
    return rows.map((row) => ({ ...(JSON.parse(row.data) as RunEvent), seq: row.seq, at: row.at, runId }));
  }
}
