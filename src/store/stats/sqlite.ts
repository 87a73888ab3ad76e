import { type ReflectionStats } from "../../core/reflection.js";
import type { Sqlite } from "../database/sqlite.js";
import { type DurationStat, type ReflectionRecord, type RunStatsStore, reflectionStatsOf } from "./contract.js";

/** The reflections and duration_stats tables in SQLite. */
export class SqliteRunStatsStore implements RunStatsStore {
  readonly #db: Sqlite;

  constructor(db: Sqlite) {
    this.#db = db;
  }

  async recordReflection(record: ReflectionRecord): Promise<void> {
    this.#db
      .prepare("INSERT OR REPLACE INTO reflections (run_id, iteration, type, passed, confidence, at) VALUES (?, ?, ?, ?, ?, ?)")
      .run(record.runId, record.iteration, record.type, record.passed ? 1 : 0, record.confidence, record.at);
  }

  async reflections(filter: { runId?: string; since?: number } = {}): Promise<ReflectionStats> {
    const clauses = [...(filter.runId !== undefined ? ["run_id = @runId"] : []), ...(filter.since !== undefined ? ["at >= @since"] : [])];
    const rows = this.#db
      .prepare(`SELECT type, COUNT(*) AS total, SUM(passed) AS passed, SUM(confidence) AS confidence_sum FROM reflections ${clauses.length ? `WHERE ${clauses.join(" AND ")}` : ""} GROUP BY type`)
      .all({ ...(filter.runId !== undefined ? { runId: filter.runId } : {}), ...(filter.since !== undefined ? { since: filter.since } : {}) }) as Array<{
      type: string;
      total: number;
      passed: number;
      confidence_sum: number;
    }>;
    return reflectionStatsOf(rows);
  }

  async recordDuration(agent: string, tool: string | null, durationMs: number): Promise<void> {
    this.#db
      .prepare(
        `INSERT INTO duration_stats (agent, tool, count, total_ms, updated_at) VALUES (?, ?, 1, ?, ?)
         ON CONFLICT (agent, tool) DO UPDATE SET count = count + 1, total_ms = total_ms + excluded.total_ms, updated_at = excluded.updated_at`,
      )
      .run(agent, tool ?? "", Math.max(0, durationMs), Date.now());
  }

  async durations(): Promise<DurationStat[]> {
    const rows = this.#db.prepare("SELECT agent, tool, count, total_ms FROM duration_stats ORDER BY agent, tool").all() as Array<{ agent: string; tool: string; count: number; total_ms: number }>;
    return rows.map((row) => ({ agent: row.agent, tool: row.tool === "" ? null : row.tool, count: row.count, meanMs: Math.round(row.total_ms / Math.max(1, row.count)) }));
  }
}
