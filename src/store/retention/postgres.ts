import type pg from "pg";
import type { RunStatus } from "../../core/run.js";
import { type Collectable, COLLECTABLE, type Deleted, type Dependents, type RetentionStore } from "./contract.js";
import { inTransaction } from "../database/postgres.js";

/** The tables a collection deletes from, vacuumed after it. */
const RECLAIMED = ["runs", "events", "stash", "stash_items", "webhook_deliveries", "checkpoints", "checkpoint_blobs", "checkpoint_writes", "audit", "evals"];

const COLUMNS = "id, thread_id AS \"threadId\", status, eval_id AS \"evalId\", updated_at AS \"updatedAt\"";

/**
 * Retention on Postgres. Deletes go in batches, each its own short transaction (gc hands over a
 * few hundred runs at a time), so no lock is held for long; the space they free is reused by the
 * tables (a VACUUM after a collection makes it so at once, without the exclusive lock VACUUM FULL
 * would take). Channel values no checkpoint refers to any more are deleted with the checkpoints.
 */
export class PostgresRetentionStore implements RetentionStore {
  readonly #pool: pg.Pool;
  /** Writes what this process holds back (events, stash items, audit rows), so nothing of a deleted run lands after it. */
  readonly #flush: () => Promise<void>;

  constructor(pool: pg.Pool, flush: () => Promise<void> = async () => {}) {
    this.#pool = pool;
    this.#flush = flush;
  }

  async candidates(options: { cutoff: number; keep: readonly RunStatus[]; limit: number; after?: { updatedAt: number; id: string } }): Promise<Collectable[]> {
    const statuses = COLLECTABLE.filter((status) => !options.keep.includes(status));
    if (statuses.length === 0) return [];
    const after = options.after ? "AND (updated_at > $4 OR (updated_at = $4 AND id > $5))" : "";
    const { rows } = await this.#pool.query<Collectable>(
      `SELECT ${COLUMNS} FROM runs WHERE status = ANY($1) AND updated_at < $2 AND eval_id IS NULL ${after} ORDER BY updated_at, id LIMIT $3`,
      [statuses, options.cutoff, options.limit, ...(options.after ? [options.after.updatedAt, options.after.id] : [])],
    );
    return rows;
  }

  async collectable(ids: string[]): Promise<Collectable[]> {
    if (ids.length === 0) return [];
    const { rows } = await this.#pool.query<Collectable>(`SELECT ${COLUMNS} FROM runs WHERE id = ANY($1) AND status = ANY($2)`, [ids, COLLECTABLE]);
    return rows;
  }

  async dependents(ids: string[]): Promise<Dependents> {
    if (ids.length === 0) return { events: 0, stashValues: 0, webhookDeliveries: 0 };
    await this.#flush();
    const { rows } = await this.#pool.query<{ events: number; stash: number; items: number; deliveries: number }>(
      `SELECT (SELECT COUNT(*)::int FROM events WHERE run_id = ANY($1)) AS events, (SELECT COUNT(*)::int FROM stash WHERE run_id = ANY($1)) AS stash,
              (SELECT COUNT(*)::int FROM stash_items WHERE run_id = ANY($1)) AS items, (SELECT COUNT(*)::int FROM webhook_deliveries WHERE run_id = ANY($1)) AS deliveries`,
      [ids],
    );
    const row = rows[0] ?? { events: 0, stash: 0, items: 0, deliveries: 0 };
    return { events: row.events, stashValues: row.stash + row.items, webhookDeliveries: row.deliveries };
  }

  async deleteRuns(ids: string[]): Promise<Deleted> {
    if (ids.length === 0) return { runs: [], events: 0, stashValues: 0, webhookDeliveries: 0 };
    await this.#flush();
    return inTransaction(this.#pool, async (client) => {
      const { rows: runs } = await client.query<Collectable>(`DELETE FROM runs WHERE id = ANY($1) AND status = ANY($2) RETURNING ${COLUMNS}`, [ids, COLLECTABLE]);
      const gone = runs.map((run) => run.id);
      if (gone.length === 0) return { runs, events: 0, stashValues: 0, webhookDeliveries: 0 };
      const remove = async (table: string): Promise<number> => (await client.query(`DELETE FROM ${table} WHERE run_id = ANY($1)`, [gone])).rowCount ?? 0;
      const events = await remove("events");
      const stashValues = (await remove("stash")) + (await remove("stash_items"));
      const webhookDeliveries = await remove("webhook_deliveries");
      await remove("reflections");
      await remove("agent_runs");
      // A remote A2A agent's task is kept by the id of the call that made it, which starts with its run's id.
      await client.query("DELETE FROM remote_tasks WHERE split_part(call_id, '/', 1) = ANY($1)", [gone]);
      return { runs, events, stashValues, webhookDeliveries };
    });
  }

  async threadsWithoutRuns(threadIds: string[]): Promise<string[]> {
    if (threadIds.length === 0) return [];
    const unique = [...new Set(threadIds)];
    const { rows } = await this.#pool.query<{ id: string }>("SELECT DISTINCT thread_id AS id FROM runs WHERE thread_id = ANY($1)", [unique]);
    const busy = new Set(rows.map((row) => row.id));
    return unique.filter((id) => !busy.has(id));
  }

  async deleteThreadCheckpoints(threadIds: readonly string[]): Promise<string[]> {
    if (threadIds.length === 0) return [];
    return inTransaction(this.#pool, async (client) => {
      const { rows } = await client.query<{ id: string }>("SELECT t AS id FROM unnest($1::text[]) AS t WHERE NOT EXISTS (SELECT 1 FROM runs WHERE runs.thread_id = t)", [threadIds]);
      const free = rows.map((row) => row.id);
      if (free.length === 0) return [];
      // A thread the Agent Protocol made goes with its last run, as its checkpoints do.
      await client.query("DELETE FROM agent_threads WHERE thread_id = ANY($1)", [free]);
      await client.query("DELETE FROM checkpoint_writes WHERE thread_id = ANY($1)", [free]);
      await client.query("DELETE FROM checkpoints WHERE thread_id = ANY($1)", [free]);
      await client.query("DELETE FROM checkpoint_blobs WHERE thread_id = ANY($1)", [free]);
      return free;
    });
  }

  async deleteCheckpoints(threadId: string, checkpointIds: readonly string[]): Promise<number> {
    if (checkpointIds.length === 0) return 0;
    return inTransaction(this.#pool, async (client) => {
      await client.query("DELETE FROM checkpoint_writes WHERE thread_id = $1 AND checkpoint_id = ANY($2)", [threadId, checkpointIds]);
      const removed = (await client.query("DELETE FROM checkpoints WHERE thread_id = $1 AND checkpoint_id = ANY($2)", [threadId, checkpointIds])).rowCount ?? 0;
      // A channel's value is stored once per version and shared by the checkpoints that have it.
      await client.query(
        `DELETE FROM checkpoint_blobs b WHERE b.thread_id = $1 AND NOT EXISTS (
           SELECT 1 FROM checkpoints c WHERE c.thread_id = b.thread_id AND c.checkpoint_ns = b.checkpoint_ns AND c.checkpoint -> 'channel_versions' ->> b.channel = b.version)`,
        [threadId],
      );
      return removed;
    });
  }

  async evalCandidates(cutoff: number, limit: number): Promise<string[]> {
    const { rows } = await this.#pool.query<{ id: string }>(
      "SELECT id FROM evals WHERE status IN ('completed', 'failed', 'cancelled') AND COALESCE(finished_at, updated_at) < $1 ORDER BY created_at LIMIT $2",
      [cutoff, limit],
    );
    return rows.map((row) => row.id);
  }

  async runsOfEvals(evalIds: string[]): Promise<string[]> {
    if (evalIds.length === 0) return [];
    const { rows } = await this.#pool.query<{ id: string }>("SELECT id FROM runs WHERE eval_id = ANY($1)", [evalIds]);
    return rows.map((row) => row.id);
  }

  async deleteEvals(ids: string[]): Promise<number> {
    if (ids.length === 0) return 0;
    return inTransaction(this.#pool, async (client) => {
      await client.query("DELETE FROM events WHERE run_id = ANY($1)", [ids]);
      return (await client.query("DELETE FROM evals WHERE id = ANY($1)", [ids])).rowCount ?? 0;
    });
  }

  async auditBefore(cutoff: number, remove: boolean, batch: number): Promise<number> {
    if (!remove) return (await this.#pool.query<{ n: number }>("SELECT COUNT(*)::int AS n FROM audit WHERE at < $1", [cutoff])).rows[0]?.n ?? 0;
    let total = 0;
    for (;;) {
      const removed = (await this.#pool.query("DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE at < $1 ORDER BY id LIMIT $2)", [cutoff, batch])).rowCount ?? 0;
      total += removed;
      if (removed < batch) return total;
    }
  }

  async expiredMemories(now: number, remove: boolean): Promise<number> {
    if (!remove) return (await this.#pool.query<{ n: number }>("SELECT COUNT(*)::int AS n FROM memory_items WHERE expires_at IS NOT NULL AND expires_at <= $1", [now])).rows[0]?.n ?? 0;
    return (await this.#pool.query("DELETE FROM memory_items WHERE expires_at IS NOT NULL AND expires_at <= $1", [now])).rowCount ?? 0;
  }

  async reclaim(collected: { runs: number }): Promise<void> {
    // Plain VACUUM: the rows' space becomes reusable at once, without the exclusive lock of VACUUM
    // FULL. Its cost follows what was collected, not what the tables hold (a gc of 10,000 runs at
    // a million took 17 s, 15 of them here; 4 s now):
    // - without index cleanup: that pass reads every index of the table whole (events' alone took
    //   7.4 s); the heap pass reads only the pages changed since the last vacuum, and autovacuum
    //   cleans the indexes as it would anyway (INDEX_CLEANUP AUTO);
    // - with ANALYZE only when the runs collected were a tenth of the table or more (autovacuum's
    //   own threshold): it reads a sample of 30,000 pages of a big table, some 1.5 s each, for
    //   statistics a 1 % delete leaves as they were.
    const { rows } = await this.#pool.query<{ runs: number }>("SELECT GREATEST(reltuples, 0)::float8 AS runs FROM pg_class WHERE oid = to_regclass('runs')");
    const analyze = collected.runs > 0 && collected.runs >= 50 + 0.1 * Number(rows[0]?.runs ?? 0);
    for (const table of RECLAIMED) {
      await this.#pool.query(`VACUUM (INDEX_CLEANUP OFF${analyze ? ", ANALYZE" : ""}) ${table}`).catch(() => {});
    }
  }

  async size(): Promise<number> {
    const { rows } = await this.#pool.query<{ bytes: number }>("SELECT pg_database_size(current_database()) AS bytes");
    return Number(rows[0]?.bytes ?? 0);
  }

  async claimTick(name: string, tick: number): Promise<boolean> {
    const { rowCount } = await this.#pool.query(
      `INSERT INTO maintenance (name, value, updated_at) VALUES ($1, $2, $3)
       ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at WHERE maintenance.value::bigint < EXCLUDED.value::bigint`,
      [name, String(tick), Date.now()],
    );
    return (rowCount ?? 0) > 0;
  }

  async setState(name: string, value: unknown): Promise<void> {
    await this.#pool.query("INSERT INTO maintenance (name, value, updated_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at", [
      name,
      JSON.stringify(value),
      Date.now(),
    ]);
  }

  async getState<T>(name: string): Promise<T | undefined> {
    const { rows } = await this.#pool.query<{ value: string }>("SELECT value FROM maintenance WHERE name = $1", [name]);
    return rows[0] === undefined ? undefined : (JSON.parse(rows[0].value) as T);
  }
}
