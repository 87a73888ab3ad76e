import { type ReflectionStats } from "../../core/reflection.js";
import type { Statement } from "better-sqlite3";
import { type Sqlite, prepared } from "../database/sqlite.js";
import { TurnBatch } from "../turn-batch.js";
import { type DurationStat, type ReflectionRecord, type RunStatsStore, reflectionStatsOf } from "./contract.js";

interface Writes {
  reflection: Statement<[string, number, string, number, number, number]>;
  duration: Statement<[string, string, number, number, number]>;
}

/**
 * The reflections and duration_stats tables in SQLite. The store opens them on the event log's
 * connection (`synchronous = NORMAL`): a figure is written beside a run, never in its way, so a
 * subtask's end costs no fsync of its own (it was a fifth of a zero-latency run); in WAL mode the
 * row survives a crash of the process, and the run's next checkpoint commit syncs it to disk.
 * Durations recorded in one turn of the event loop are summed by agent and tool and written in one
 * transaction on the next (a run's subtasks end in a handful of turns); a read writes them first.
 */
export class SqliteRunStatsStore implements RunStatsStore {
  readonly #db: Sqlite;
  /** Compiled on the first write (a read-only connection, `troupe` lookups, never writes). */
  #writes: Writes | undefined;
  /** Subtasks' durations recorded in one turn, written in one transaction on the next. */
  readonly #durations = new TurnBatch<{ agent: string; tool: string; durationMs: number }>((rows) => this.#writeDurations(rows));

  constructor(db: Sqlite) {
    this.#db = db;
  }

  #compiled(): Writes {
    this.#writes ??= {
      reflection: prepared(this.#db, "INSERT OR REPLACE INTO reflections (run_id, iteration, type, passed, confidence, at) VALUES (?, ?, ?, ?, ?, ?)"),
      duration: prepared(this.#db, 
        `INSERT INTO duration_stats (agent, tool, count, total_ms, updated_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (agent, tool) DO UPDATE SET count = count + excluded.count, total_ms = total_ms + excluded.total_ms, updated_at = excluded.updated_at`,
      ),
    };
    return this.#writes;
  }

  async recordReflection(record: ReflectionRecord): Promise<void> {
    this.#compiled().reflection.run(record.runId, record.iteration, record.type, record.passed ? 1 : 0, record.confidence, record.at);
  }

  async reflections(filter: { runId?: string; since?: number } = {}): Promise<ReflectionStats> {
    const clauses = [...(filter.runId !== undefined ? ["run_id = @runId"] : []), ...(filter.since !== undefined ? ["at >= @since"] : [])];
    const rows = prepared(this.#db, `SELECT type, COUNT(*) AS total, SUM(passed) AS passed, SUM(confidence) AS confidence_sum FROM reflections ${clauses.length ? `WHERE ${clauses.join(" AND ")}` : ""} GROUP BY type`)
      .all({ ...(filter.runId !== undefined ? { runId: filter.runId } : {}), ...(filter.since !== undefined ? { since: filter.since } : {}) }) as Array<{
      type: string;
      total: number;
      passed: number;
      confidence_sum: number;
    }>;
    return reflectionStatsOf(rows);
  }

  async recordDuration(agent: string, tool: string | null, durationMs: number): Promise<void> {
    return this.#durations.add({ agent, tool: tool ?? "", durationMs: Math.max(0, durationMs) });
  }

  /** Writes the durations recorded so far (synchronously: done before this returns). */
  flush(): Promise<void> {
    return this.#durations.flush();
  }

  /** One upsert per agent and tool, with the batch's count and total. */
  #writeDurations(rows: Array<{ agent: string; tool: string; durationMs: number }>): void {
    const sums = new Map<string, { agent: string; tool: string; count: number; totalMs: number }>();
    for (const { agent, tool, durationMs } of rows) {
      const key = `${agent}\u0000${tool}`;
      const sum = sums.get(key) ?? { agent, tool, count: 0, totalMs: 0 };
      sum.count += 1;
      sum.totalMs += durationMs;
      sums.set(key, sum);
    }
    const { duration } = this.#compiled();
    const now = Date.now();
    this.#db.transaction(() => {
      for (const sum of sums.values()) duration.run(sum.agent, sum.tool, sum.count, sum.totalMs, now);
    })();
  }

  async durations(): Promise<DurationStat[]> {
    void this.#durations.flush();
    const rows = prepared(this.#db, "SELECT agent, tool, count, total_ms FROM duration_stats ORDER BY agent, tool").all() as Array<{ agent: string; tool: string; count: number; total_ms: number }>;
    return rows.map((row) => ({ agent: row.agent, tool: row.tool === "" ? null : row.tool, count: row.count, meanMs: Math.round(row.total_ms / Math.max(1, row.count)) }));
  }
}
