import type pg from "pg";
import type { ReflectionStats } from "../../core/reflection.js";
import { type DurationStat, type ReflectionRecord, type RunStatsStore, reflectionStatsOf } from "./contract.js";
import { positional } from "../database/placeholders.js";

/** The reflections and duration_stats tables on Postgres. */
export class PostgresRunStatsStore implements RunStatsStore {
  readonly #pool: pg.Pool;

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  async recordReflection(record: ReflectionRecord): Promise<void> {
    await this.#pool.query(
      `INSERT INTO reflections (run_id, iteration, type, passed, confidence, at) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (run_id, iteration) DO UPDATE SET type = EXCLUDED.type, passed = EXCLUDED.passed, confidence = EXCLUDED.confidence, at = EXCLUDED.at`,
      [record.runId, record.iteration, record.type, record.passed ? 1 : 0, record.confidence, record.at],
    );
  }

  async reflections(filter: { runId?: string; since?: number } = {}): Promise<ReflectionStats> {
    const clauses = [...(filter.runId !== undefined ? ["run_id = @runId"] : []), ...(filter.since !== undefined ? ["at >= @since"] : [])];
    const { rows } = await this.#pool.query<{ type: string; total: number; passed: number; confidence_sum: number }>(
      positional(`SELECT type, COUNT(*)::int AS total, SUM(passed)::int AS passed, SUM(confidence) AS confidence_sum FROM reflections ${clauses.length ? `WHERE ${clauses.join(" AND ")}` : ""} GROUP BY type`, filter),
    );
    return reflectionStatsOf(rows);
  }

  async recordDuration(agent: string, tool: string | null, durationMs: number): Promise<void> {
    await this.#pool.query(
      `INSERT INTO duration_stats (agent, tool, count, total_ms, updated_at) VALUES ($1, $2, 1, $3, $4)
       ON CONFLICT (agent, tool) DO UPDATE SET count = duration_stats.count + 1, total_ms = duration_stats.total_ms + EXCLUDED.total_ms, updated_at = EXCLUDED.updated_at`,
      [agent, tool ?? "", Math.max(0, durationMs), Date.now()],
    );
  }

  async durations(): Promise<DurationStat[]> {
    const { rows } = await this.#pool.query<{ agent: string; tool: string; count: number; total_ms: number }>("SELECT agent, tool, count, total_ms FROM duration_stats ORDER BY agent, tool");
    return rows.map((row) => ({ agent: row.agent, tool: row.tool === "" ? null : row.tool, count: Number(row.count), meanMs: Math.round(Number(row.total_ms) / Math.max(1, Number(row.count))) }));
  }
}
