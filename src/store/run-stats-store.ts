import { REFLECTION_TYPES, type ReflectionStats, type ReflectionType, reflectionCounts } from "../core/reflection.js";
import type { Sqlite } from "./database.js";

/** One critic verdict, for the reflection statistics. */
export interface ReflectionRecord {
  runId: string;
  iteration: number;
  type: ReflectionType;
  passed: boolean;
  confidence: number;
  at: number;
}

/** How long an agent's subtasks (with a direct tool, or a worker's) took in earlier runs: plan estimates start from it. */
export interface DurationStat {
  agent: string;
  /** The direct tool, or null for a worker subtask. */
  tool: string | null;
  count: number;
  meanMs: number;
}

/**
 * Figures kept across runs: each critic verdict (reflection statistics, seed 001 §3.1) and the
 * durations of finished subtasks by agent and tool (the plan's time estimates, seed 001 §2.2).
 */
export interface RunStatsStore {
  /** Keeps a verdict (a verdict recorded again for the same run and round replaces it). */
  recordReflection(record: ReflectionRecord): Promise<void>;
  reflections(filter?: { runId?: string; since?: number }): Promise<ReflectionStats>;
  /** Adds one finished subtask's duration. */
  recordDuration(agent: string, tool: string | null, durationMs: number): Promise<void>;
  durations(): Promise<DurationStat[]>;
}

/** Rows of `type, total, passed, confidence_sum` as the statistics. */
export function reflectionStatsOf(rows: Array<{ type: string; total: number; passed: number; confidence_sum: number }>): ReflectionStats {
  const byType = Object.fromEntries(REFLECTION_TYPES.map((type) => [type, reflectionCounts(0, 0, 0)])) as ReflectionStats["byType"];
  let total = 0;
  let passed = 0;
  let confidence = 0;
  for (const row of rows) {
    const type = row.type as ReflectionType;
    if (!REFLECTION_TYPES.includes(type)) continue;
    byType[type] = reflectionCounts(Number(row.total), Number(row.passed), Number(row.confidence_sum));
    total += Number(row.total);
    passed += Number(row.passed);
    confidence += Number(row.confidence_sum);
  }
  return { ...reflectionCounts(total, passed, confidence), byType };
}

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
