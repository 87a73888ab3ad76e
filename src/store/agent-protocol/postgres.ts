import type pg from "pg";
import { positional } from "../database/placeholders.js";
import {
  type AgentProtocolStore,
  type AgentRunInfo,
  type AgentThread,
  type AgentThreadQuery,
  AgentThreadRow,
  type AgentTurn,
  AgentTurnRow,
  jsonObject,
  THREAD_STATUS_SQL,
  threadOrder,
} from "./contract.js";

type Filter = Omit<AgentThreadQuery, "sortBy" | "sortOrder" | "limit" | "offset">;

/** The Agent Protocol's threads and runs on Postgres (migration 17); metadata is JSONB, compared key by key. */
export class PostgresAgentProtocolStore implements AgentProtocolStore {
  readonly #pool: pg.Pool;

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  async addThread(thread: { threadId: string; owner: string; metadata: Record<string, unknown>; now: number }): Promise<boolean> {
    const { rowCount } = await this.#pool.query(
      "INSERT INTO agent_threads (thread_id, owner, metadata, created_at, updated_at) VALUES ($1, $2, $3::jsonb, $4, $4) ON CONFLICT (thread_id) DO NOTHING",
      [thread.threadId, thread.owner, JSON.stringify(thread.metadata), thread.now],
    );
    return (rowCount ?? 0) > 0;
  }

  async thread(threadId: string): Promise<{ owner: string; metadata: Record<string, unknown>; createdAt: number; updatedAt: number } | undefined> {
    const { rows } = await this.#pool.query<{ owner: string; metadata: unknown; created_at: number; updated_at: number }>("SELECT owner, metadata, created_at, updated_at FROM agent_threads WHERE thread_id = $1", [threadId]);
    const row = rows[0];
    return row ? { owner: row.owner, metadata: jsonObject(row.metadata), createdAt: row.created_at, updatedAt: row.updated_at } : undefined;
  }

  async mergeMetadata(thread: { threadId: string; owner: string; metadata: Record<string, unknown>; now: number; createdAt: number }): Promise<Record<string, unknown>> {
    // One statement: jsonb's || keeps the row's keys and takes the new ones, atomically.
    const { rows } = await this.#pool.query<{ metadata: unknown }>(
      `INSERT INTO agent_threads (thread_id, owner, metadata, created_at, updated_at) VALUES ($1, $2, $3::jsonb, LEAST($4::bigint, $5::bigint), $5)
       ON CONFLICT (thread_id) DO UPDATE SET metadata = agent_threads.metadata || excluded.metadata, updated_at = excluded.updated_at
       RETURNING metadata`,
      [thread.threadId, thread.owner, JSON.stringify(thread.metadata), thread.createdAt, thread.now],
    );
    return jsonObject(rows[0]?.metadata);
  }

  async deleteThread(threadId: string): Promise<boolean> {
    return ((await this.#pool.query("DELETE FROM agent_threads WHERE thread_id = $1", [threadId])).rowCount ?? 0) > 0;
  }

  #filtered(query: Filter): { sql: string; values: Record<string, unknown> } {
    const values: Record<string, unknown> = { owner: query.owner, defaults: JSON.stringify(query.defaultMetadata) };
    const only = query.threadIds !== undefined;
    if (only) values.ids = [...(query.threadIds ?? [])];
    const where: string[] = [];
    Object.entries(query.metadata ?? {}).forEach(([key, value], index) => {
      values[`key${index}`] = key;
      values[`value${index}`] = JSON.stringify(value);
      where.push(`COALESCE(metadata, @defaults::jsonb) -> @key${index}::text = @value${index}::jsonb`);
    });
    if (query.status !== undefined) {
      values.status = query.status;
      where.push("status = @status");
    }
    const sql = `WITH owned AS (
        SELECT thread_id, MIN(created_at) AS created_at, MAX(updated_at) AS updated_at FROM runs WHERE owner = @owner${only ? " AND thread_id = ANY(@ids)" : ""} GROUP BY thread_id
      ), listed AS (
        SELECT t.thread_id, t.metadata, LEAST(t.created_at, COALESCE(o.created_at, t.created_at)) AS created_at, GREATEST(t.updated_at, COALESCE(o.updated_at, t.updated_at)) AS updated_at
          FROM agent_threads t LEFT JOIN owned o ON o.thread_id = t.thread_id WHERE t.owner = @owner${only ? " AND t.thread_id = ANY(@ids)" : ""}
        UNION ALL
        SELECT o.thread_id, NULL::jsonb, o.created_at, o.updated_at FROM owned o WHERE NOT EXISTS (SELECT 1 FROM agent_threads t WHERE t.thread_id = o.thread_id)
      ), threads AS (
        SELECT l.thread_id, l.metadata, l.created_at, l.updated_at,
          COALESCE((SELECT ${THREAD_STATUS_SQL} FROM runs r WHERE r.thread_id = l.thread_id ORDER BY r.created_at DESC, r.row_order DESC LIMIT 1), 'idle') AS status
        FROM listed l
      )
      SELECT thread_id, metadata, created_at, updated_at, status FROM threads${where.length > 0 ? ` WHERE ${where.join(" AND ")}` : ""}`;
    return { sql, values };
  }

  async threads(query: AgentThreadQuery): Promise<AgentThread[]> {
    const { sql, values } = this.#filtered(query);
    const statement = positional(`${sql} ORDER BY ${threadOrder(query.sortBy, query.sortOrder)} LIMIT @limit OFFSET @offset`, { ...values, limit: query.limit, offset: query.offset });
    const { rows } = await this.#pool.query(statement.text, statement.values);
    return rows.map((row) => AgentThreadRow.parse(row));
  }

  async countThreads(query: Filter): Promise<number> {
    const { sql, values } = this.#filtered(query);
    const statement = positional(`SELECT COUNT(*)::int AS n FROM (${sql}) counted`, values);
    const { rows } = await this.#pool.query<{ n: number }>(statement.text, statement.values);
    return rows[0]?.n ?? 0;
  }

  async turns(threadIds: readonly string[], perThread: number): Promise<AgentTurn[]> {
    if (threadIds.length === 0) return [];
    const { rows } = await this.#pool.query(
      `SELECT id, thread_id, task, answer, status, stop_reason, created_at FROM (
         SELECT id, thread_id, task, answer, status, stop_reason, created_at, row_order,
           ROW_NUMBER() OVER (PARTITION BY thread_id ORDER BY created_at DESC, row_order DESC) AS latest
         FROM runs WHERE thread_id = ANY($1)
       ) ranked WHERE latest <= $2 ORDER BY thread_id, created_at, row_order`,
      [[...threadIds], perThread],
    );
    return rows.map((row) => AgentTurnRow.parse(row));
  }

  async addRun(run: { runId: string; owner: string; metadata: Record<string, unknown>; multitaskStrategy: string | null; now: number }): Promise<void> {
    await this.#pool.query("INSERT INTO agent_runs (run_id, owner, metadata, multitask_strategy, created_at) VALUES ($1, $2, $3::jsonb, $4, $5) ON CONFLICT (run_id) DO NOTHING", [
      run.runId,
      run.owner,
      JSON.stringify(run.metadata),
      run.multitaskStrategy,
      run.now,
    ]);
  }

  async runs(runIds: readonly string[]): Promise<Map<string, AgentRunInfo>> {
    if (runIds.length === 0) return new Map();
    const { rows } = await this.#pool.query<{ run_id: string; metadata: unknown; multitask_strategy: string | null }>("SELECT run_id, metadata, multitask_strategy FROM agent_runs WHERE run_id = ANY($1)", [[...runIds]]);
    return new Map(rows.map((row) => [row.run_id, { metadata: jsonObject(row.metadata), multitaskStrategy: row.multitask_strategy }]));
  }
}
