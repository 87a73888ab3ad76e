import { stableStringify } from "../../core/text.js";
import type { Sqlite } from "../database/sqlite.js";
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

/** The Agent Protocol's threads and runs in SQLite (migration 28); metadata is kept as canonical JSON (sorted keys), so objects compare as text. */
export class SqliteAgentProtocolStore implements AgentProtocolStore {
  readonly #db: Sqlite;

  constructor(db: Sqlite) {
    this.#db = db;
  }

  async addThread(thread: { threadId: string; owner: string; metadata: Record<string, unknown>; now: number }): Promise<boolean> {
    const { changes } = this.#db
      .prepare("INSERT INTO agent_threads (thread_id, owner, metadata, created_at, updated_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (thread_id) DO NOTHING")
      .run(thread.threadId, thread.owner, stableStringify(thread.metadata), thread.now, thread.now);
    return changes > 0;
  }

  async thread(threadId: string): Promise<{ owner: string; metadata: Record<string, unknown>; createdAt: number; updatedAt: number } | undefined> {
    const row = this.#db.prepare("SELECT owner, metadata, created_at, updated_at FROM agent_threads WHERE thread_id = ?").get(threadId) as
      | { owner: string; metadata: string; created_at: number; updated_at: number }
      | undefined;
    return row ? { owner: row.owner, metadata: jsonObject(row.metadata), createdAt: row.created_at, updatedAt: row.updated_at } : undefined;
  }

  async mergeMetadata(thread: { threadId: string; owner: string; metadata: Record<string, unknown>; now: number; createdAt: number }): Promise<Record<string, unknown>> {
    return this.#db
      .transaction(() => {
        const row = this.#db.prepare("SELECT metadata FROM agent_threads WHERE thread_id = ?").get(thread.threadId) as { metadata: string } | undefined;
        const merged = { ...(row ? jsonObject(row.metadata) : {}), ...thread.metadata };
        this.#db
          .prepare(
            "INSERT INTO agent_threads (thread_id, owner, metadata, created_at, updated_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (thread_id) DO UPDATE SET metadata = excluded.metadata, updated_at = excluded.updated_at",
          )
          .run(thread.threadId, thread.owner, stableStringify(merged), Math.min(thread.createdAt, thread.now), thread.now);
        return merged;
      })
      .immediate();
  }

  async deleteThread(threadId: string): Promise<boolean> {
    return this.#db.prepare("DELETE FROM agent_threads WHERE thread_id = ?").run(threadId).changes > 0;
  }

  /** The owner's threads (rows and runs) with their status, filtered: the listing's common part. */
  #filtered(query: Filter): { sql: string; values: Record<string, unknown> } {
    const values: Record<string, unknown> = { owner: query.owner, defaults: stableStringify(query.defaultMetadata) };
    const only = query.threadIds !== undefined;
    if (only) values.ids = JSON.stringify(query.threadIds);
    const inIds = only ? " AND thread_id IN (SELECT value FROM json_each(@ids))" : "";
    const where: string[] = [];
    Object.entries(query.metadata ?? {}).forEach(([key, value], index) => {
      values[`path${index}`] = `$."${key}"`;
      values[`value${index}`] = stableStringify(value);
      const metadata = "COALESCE(metadata, @defaults)";
      where.push(`json_type(${metadata}, @path${index}) IS NOT NULL AND json_extract(${metadata}, @path${index}) IS json_extract(@value${index}, '$')`);
    });
    if (query.status !== undefined) {
      values.status = query.status;
      where.push("status = @status");
    }
    const sql = `WITH owned AS (
        SELECT thread_id, MIN(created_at) AS created_at, MAX(updated_at) AS updated_at FROM runs WHERE owner = @owner${inIds} GROUP BY thread_id
      ), listed AS (
        SELECT t.thread_id, t.metadata, MIN(t.created_at, COALESCE(o.created_at, t.created_at)) AS created_at, MAX(t.updated_at, COALESCE(o.updated_at, t.updated_at)) AS updated_at
          FROM agent_threads t LEFT JOIN owned o ON o.thread_id = t.thread_id WHERE t.owner = @owner${only ? " AND t.thread_id IN (SELECT value FROM json_each(@ids))" : ""}
        UNION ALL
        SELECT o.thread_id, NULL, o.created_at, o.updated_at FROM owned o WHERE NOT EXISTS (SELECT 1 FROM agent_threads t WHERE t.thread_id = o.thread_id)
      ), threads AS (
        SELECT l.thread_id, l.metadata, l.created_at, l.updated_at,
          COALESCE((SELECT ${THREAD_STATUS_SQL} FROM runs r WHERE r.thread_id = l.thread_id ORDER BY r.created_at DESC, r.rowid DESC LIMIT 1), 'idle') AS status
        FROM listed l
      )
      SELECT thread_id, metadata, created_at, updated_at, status FROM threads${where.length > 0 ? ` WHERE ${where.join(" AND ")}` : ""}`;
    return { sql, values };
  }

  async threads(query: AgentThreadQuery): Promise<AgentThread[]> {
    const { sql, values } = this.#filtered(query);
    return this.#db
      .prepare(`${sql} ORDER BY ${threadOrder(query.sortBy, query.sortOrder)} LIMIT @limit OFFSET @offset`)
      .all({ ...values, limit: query.limit, offset: query.offset })
      .map((row) => AgentThreadRow.parse(row));
  }

  async countThreads(query: Filter): Promise<number> {
    const { sql, values } = this.#filtered(query);
    return (this.#db.prepare(`SELECT COUNT(*) AS n FROM (${sql})`).get(values) as { n: number }).n;
  }

  async turns(threadIds: readonly string[], perThread: number): Promise<AgentTurn[]> {
    if (threadIds.length === 0) return [];
    return this.#db
      .prepare(
        `SELECT id, thread_id, task, answer, status, stop_reason, created_at FROM (
           SELECT id, thread_id, task, answer, status, stop_reason, created_at, rowid AS position,
             ROW_NUMBER() OVER (PARTITION BY thread_id ORDER BY created_at DESC, rowid DESC) AS latest
           FROM runs WHERE thread_id IN (SELECT value FROM json_each(@ids))
         ) WHERE latest <= @perThread ORDER BY thread_id, created_at, position`,
      )
      .all({ ids: JSON.stringify(threadIds), perThread })
      .map((row) => AgentTurnRow.parse(row));
  }

  async addRun(run: { runId: string; owner: string; metadata: Record<string, unknown>; multitaskStrategy: string | null; now: number }): Promise<void> {
    this.#db
      .prepare("INSERT INTO agent_runs (run_id, owner, metadata, multitask_strategy, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (run_id) DO NOTHING")
      .run(run.runId, run.owner, stableStringify(run.metadata), run.multitaskStrategy, run.now);
  }

  async runs(runIds: readonly string[]): Promise<Map<string, AgentRunInfo>> {
    if (runIds.length === 0) return new Map();
    const rows = this.#db.prepare("SELECT run_id, metadata, multitask_strategy FROM agent_runs WHERE run_id IN (SELECT value FROM json_each(?))").all(JSON.stringify(runIds)) as Array<{
      run_id: string;
      metadata: string;
      multitask_strategy: string | null;
    }>;
    return new Map(rows.map((row) => [row.run_id, { metadata: jsonObject(row.metadata), multitaskStrategy: row.multitask_strategy }]));
  }
}
