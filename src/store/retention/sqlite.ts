import { statSync } from "node:fs";
import type { RunStatus } from "../../core/run.js";
import { refreshStatistics, type Sqlite } from "../database/sqlite.js";
import { COLLECTABLE, type Collectable, type Deleted, type Dependents, type RetentionStore } from "./contract.js";

/** Placeholders for a list of values. */
const list = (values: readonly unknown[]): string => values.map(() => "?").join(", ");

/** The retention side of the SQLite store: one database file, deletes in transactions, `PRAGMA incremental_vacuum`. */
export class SqliteRetentionStore implements RetentionStore {
  readonly #db: Sqlite;
  readonly #file: string;
  /** Writes what the other connections hold back (events, stash items, audit rows), so nothing of a deleted run lands after it. */
  readonly #flush: () => Promise<void>;

  constructor(db: Sqlite, file: string, flush: () => Promise<void> = async () => {}) {
    this.#db = db;
    this.#file = file;
    this.#flush = flush;
  }

  async candidates(options: { cutoff: number; keep: readonly RunStatus[]; limit: number; after?: { updatedAt: number; id: string } }): Promise<Collectable[]> {
    const statuses = COLLECTABLE.filter((status) => !options.keep.includes(status));
    if (statuses.length === 0) return [];
    const after = options.after ? "AND (updated_at > ? OR (updated_at = ? AND id > ?))" : "";
    return this.#db
      .prepare(
        `SELECT id, thread_id AS threadId, status, eval_id AS evalId, updated_at AS updatedAt FROM runs
         WHERE status IN (${list(statuses)}) AND updated_at < ? AND eval_id IS NULL ${after}
         ORDER BY updated_at, id LIMIT ?`,
      )
      .all(...statuses, options.cutoff, ...(options.after ? [options.after.updatedAt, options.after.updatedAt, options.after.id] : []), options.limit) as Collectable[];
  }

  async collectable(ids: string[]): Promise<Collectable[]> {
    if (ids.length === 0) return [];
    return this.#db
      .prepare(`SELECT id, thread_id AS threadId, status, eval_id AS evalId, updated_at AS updatedAt FROM runs WHERE id IN (${list(ids)}) AND status IN (${list(COLLECTABLE)})`)
      .all(...ids, ...COLLECTABLE) as Collectable[];
  }

  async dependents(ids: string[]): Promise<Dependents> {
    if (ids.length === 0) return { events: 0, stashValues: 0, webhookDeliveries: 0 };
    await this.#flush();
    const count = (table: string): number => (this.#db.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE run_id IN (${list(ids)})`).get(...ids) as { n: number }).n;
    return { events: count("events"), stashValues: count("stash") + count("stash_items"), webhookDeliveries: count("webhook_deliveries") };
  }

  async deleteRuns(ids: string[]): Promise<Deleted> {
    if (ids.length === 0) return { runs: [], events: 0, stashValues: 0, webhookDeliveries: 0 };
    await this.#flush();
    return this.#db.transaction(() => {
      const runs = this.#db
        .prepare(`DELETE FROM runs WHERE id IN (${list(ids)}) AND status IN (${list(COLLECTABLE)}) RETURNING id, thread_id AS threadId, status, eval_id AS evalId, updated_at AS updatedAt`)
        .all(...ids, ...COLLECTABLE) as Collectable[];
      const gone = runs.map((run) => run.id);
      if (gone.length === 0) return { runs, events: 0, stashValues: 0, webhookDeliveries: 0 };
      const remove = (table: string): number => this.#db.prepare(`DELETE FROM ${table} WHERE run_id IN (${list(gone)})`).run(...gone).changes;
      const events = remove("events");
      const stashValues = remove("stash") + remove("stash_items");
      const webhookDeliveries = remove("webhook_deliveries");
      remove("reflections");
      remove("agent_runs");
      // A remote A2A agent's task is kept by the id of the call that made it, which starts with its run's id.
      const forgetRemoteTasks = this.#db.prepare("DELETE FROM remote_tasks WHERE call_id >= ? AND call_id < ?");
      for (const id of gone) forgetRemoteTasks.run(`${id}/`, `${id}0`);
      return { runs, events, stashValues, webhookDeliveries };
    })();
  }

  async threadsWithoutRuns(threadIds: string[]): Promise<string[]> {
    if (threadIds.length === 0) return [];
    const unique = [...new Set(threadIds)];
    const busy = new Set((this.#db.prepare(`SELECT DISTINCT thread_id AS id FROM runs WHERE thread_id IN (${list(unique)})`).all(...unique) as Array<{ id: string }>).map((row) => row.id));
    return unique.filter((id) => !busy.has(id));
  }

  /** Whether the checkpointer has made its tables yet (it makes them on its first write). */
  #hasCheckpoints(): boolean {
    return this.#db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'writes'").get() !== undefined;
  }

  async deleteThreadCheckpoints(threadIds: readonly string[]): Promise<string[]> {
    if (threadIds.length === 0) return [];
    const checkpoints = this.#hasCheckpoints();
    return this.#db.transaction(() => {
      const emptied: string[] = [];
      for (let start = 0; start < threadIds.length; start += 500) {
        const chunk = threadIds.slice(start, start + 500);
        const free = (this.#db.prepare(`SELECT value AS id FROM json_each(?) WHERE NOT EXISTS (SELECT 1 FROM runs WHERE runs.thread_id = json_each.value)`).all(JSON.stringify(chunk)) as Array<{ id: string }>).map((row) => row.id);
        if (free.length === 0) continue;
        // A thread the Agent Protocol made goes with its last run, as its checkpoints do.
        this.#db.prepare(`DELETE FROM agent_threads WHERE thread_id IN (${list(free)})`).run(...free);
        if (!checkpoints) continue;
        this.#db.prepare(`DELETE FROM checkpoints WHERE thread_id IN (${list(free)})`).run(...free);
        this.#db.prepare(`DELETE FROM writes WHERE thread_id IN (${list(free)})`).run(...free);
        emptied.push(...free);
      }
      return emptied;
    })();
  }

  async deleteCheckpoints(threadId: string, checkpointIds: readonly string[]): Promise<number> {
    if (checkpointIds.length === 0 || !this.#hasCheckpoints()) return 0;
    return this.#db.transaction(() => {
      let removed = 0;
      for (let start = 0; start < checkpointIds.length; start += 500) {
        const chunk = checkpointIds.slice(start, start + 500);
        this.#db.prepare(`DELETE FROM writes WHERE thread_id = ? AND checkpoint_id IN (${list(chunk)})`).run(threadId, ...chunk);
        removed += this.#db.prepare(`DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_id IN (${list(chunk)})`).run(threadId, ...chunk).changes;
      }
      return removed;
    })();
  }

  async evalCandidates(cutoff: number, limit: number): Promise<string[]> {
    return (this.#db.prepare("SELECT id FROM evals WHERE status IN ('completed', 'failed', 'cancelled') AND COALESCE(finished_at, updated_at) < ? ORDER BY created_at LIMIT ?").all(cutoff, limit) as Array<{ id: string }>).map(
      (row) => row.id,
    );
  }

  async runsOfEvals(evalIds: string[]): Promise<string[]> {
    if (evalIds.length === 0) return [];
    return (this.#db.prepare(`SELECT id FROM runs WHERE eval_id IN (${list(evalIds)})`).all(...evalIds) as Array<{ id: string }>).map((row) => row.id);
  }

  async deleteEvals(ids: string[]): Promise<number> {
    if (ids.length === 0) return 0;
    return this.#db.transaction(() => {
      this.#db.prepare(`DELETE FROM events WHERE run_id IN (${list(ids)})`).run(...ids);
      return this.#db.prepare(`DELETE FROM evals WHERE id IN (${list(ids)})`).run(...ids).changes;
    })();
  }

  async auditBefore(cutoff: number, remove: boolean, batch: number): Promise<number> {
    if (!remove) return (this.#db.prepare("SELECT COUNT(*) AS n FROM audit WHERE at < ?").get(cutoff) as { n: number }).n;
    let total = 0;
    for (;;) {
      const removed = this.#db.prepare("DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE at < ? ORDER BY id LIMIT ?)").run(cutoff, batch).changes;
      total += removed;
      if (removed < batch) return total;
    }
  }

  async expiredMemories(now: number, remove: boolean): Promise<number> {
    if (!remove) return (this.#db.prepare("SELECT COUNT(*) AS n FROM memory_items WHERE expires_at IS NOT NULL AND expires_at <= ?").get(now) as { n: number }).n;
    return this.#db.prepare("DELETE FROM memory_items WHERE expires_at IS NOT NULL AND expires_at <= ?").run(now).changes;
  }

  async reclaim(_collected: { runs: number }): Promise<void> {
    const mode = this.#db.pragma("auto_vacuum", { simple: true }) as number;
    if (mode !== 2) {
      // A database made before troupe set incremental vacuum: switched once, which takes a full VACUUM.
      this.#db.pragma("auto_vacuum = INCREMENTAL");
      this.#db.exec("VACUUM");
    } else {
      this.#db.pragma("incremental_vacuum");
    }
    // The pages freed are cut from the file; the write-ahead log is folded in and cut as well.
    this.#db.pragma("wal_checkpoint(TRUNCATE)");
    // The tables shrank: the planner's statistics follow.
    refreshStatistics(this.#db);
  }

  async size(): Promise<number> {
    const bytes = (file: string): number => {
      try {
        return statSync(file).size;
      } catch {
        return 0;
      }
    };
    return bytes(this.#file) + bytes(`${this.#file}-wal`);
  }

  async claimTick(name: string, tick: number): Promise<boolean> {
    return (
      this.#db
        .prepare(
          `INSERT INTO maintenance (name, value, updated_at) VALUES (@name, @tick, @now)
           ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at WHERE CAST(maintenance.value AS INTEGER) < CAST(excluded.value AS INTEGER)`,
        )
        .run({ name, tick: String(tick), now: Date.now() }).changes > 0
    );
  }

  async setState(name: string, value: unknown): Promise<void> {
    this.#db.prepare("INSERT INTO maintenance (name, value, updated_at) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at").run(name, JSON.stringify(value), Date.now());
  }

  async getState<T>(name: string): Promise<T | undefined> {
    const row = this.#db.prepare("SELECT value FROM maintenance WHERE name = ?").get(name) as { value: string } | undefined;
    return row === undefined ? undefined : (JSON.parse(row.value) as T);
  }
}
