import type { Statement } from "better-sqlite3";
import type { CallEffect } from "../../tools/audit.js";
import { type AuditCompletion, type AuditEntry, type RecordedCall } from "../../tools/audit.js";
import type { Sqlite } from "../database/sqlite.js";
import { onDisk as walOnDisk } from "../database/wal-sync.js";
import { TurnBatch } from "../turn-batch.js";
import { type AuditCounts, type AuditFilter, type AuditRow, type AuditStats, type AuditStore, type AuditWrite, type DbRow, counts, fromDb, recordedCallOf, where } from "./contract.js";

/**
 * The audit trail in SQLite, on the connection with `synchronous = NORMAL`. Writes made in the
 * same turn of the event loop (the items of a map starting or finishing together) are committed
 * in one transaction, and each write resolves only once it is committed — the registry waits
 * for a call's `started` row before the tool runs and for its completion before it returns, so a
 * row survives a crash of the process as soon as its call has begun. A call that must not run
 * twice waits, after its row's commit, for `onDisk`: a sync of the database file's
 * WAL (the synced connection's, `onDisk` in database/wal-sync.ts): its row and the run's steps
 * before it are then on disk. One transaction per row cost about four times as much per call.
 */
export class SqliteAuditStore implements AuditStore {
  readonly #db: Sqlite;
  readonly #batch: TurnBatch<AuditWrite, number>;
  #findCall: Statement | undefined;
  #prepared: { insert: Statement; update: Statement } | undefined;
  #writeAll: ((writes: AuditWrite[]) => number[]) | undefined;

  readonly #onDisk: () => Promise<void>;

  /** `onDisk` syncs the database file's WAL (the store passes its synced connection's; this connection commits unsynced). */
  constructor(db: Sqlite, onDisk: () => Promise<void> = () => walOnDisk(db)) {
    this.#db = db;
    this.#onDisk = onDisk;
    // Writes still waiting when the store closes are dropped, as a record() after closing is.
    this.#batch = new TurnBatch<AuditWrite, number>((writes) => {
      if (!db.open) return writes.map(() => 0);
      this.#writeAll ??= this.#prepareWrites();
      return this.#writeAll(writes);
    });
  }

  /** The statements, prepared on the first write: a read-only lookup of an older database never needs them. */
  #statements(): { insert: Statement; update: Statement } {
    this.#prepared ??= {
      insert: this.#db.prepare(
        `INSERT INTO audit (at, run_id, thread_id, subtask_id, agent, principal, tool, args, decision, status, level, grant_info, reason, result_preview, error_code, error, duration_ms, attempts, cached, call_id, effect)
         VALUES (@at, @runId, @threadId, @subtaskId, @agent, @principal, @tool, @args, @decision, @status, @level, @grant, @reason, @resultPreview, @errorCode, @error, @durationMs, @attempts, @cached, @callId, @effect)`,
      ),
      update: this.#db.prepare(
        `UPDATE audit SET decision = @decision, status = @status, reason = @reason, result_preview = @resultPreview, error_code = @errorCode, error = @error,
         duration_ms = @durationMs, attempts = @attempts, cached = @cached, outcome = @outcome WHERE id = @id`,
      ),
    };
    return this.#prepared;
  }

  #insert(entry: AuditEntry, effect: CallEffect | undefined): number {
    const row = { ...entry, principal: entry.principal ?? null, cached: entry.cached ? 1 : 0, callId: entry.callId ?? null, effect: effect ? JSON.stringify(effect) : null };
    return Number(this.#statements().insert.run(row).lastInsertRowid);
  }

  #prepareWrites(): (writes: AuditWrite[]) => number[] {
    const { update } = this.#statements();
    return this.#db.transaction((writes: AuditWrite[]) =>
      writes.map((write) => {
        if (write.kind === "complete") {
          update.run({ ...write.completion.entry, cached: write.completion.entry.cached ? 1 : 0, outcome: write.completion.outcome ?? null, id: write.id });
          return write.id;
        }
        return this.#insert(write.entry, write.kind === "begin" ? write.effect : undefined);
      }),
    );
  }

  record(entry: AuditEntry): Promise<void> {
    if (!this.#db.open) return Promise.resolve();
    return this.#batch.add({ kind: "record", entry }).then(() => undefined);
  }

  /**
   * Writes a call's row as `started`; resolves with its id once committed. The calls that begin
   * in one turn of the event loop (a map's items starting together) share one transaction: a
   * transaction per row cost a wide map a quarter of its throughput, and waiting for the end of
   * the turn costs a call well under a millisecond.
   */
  begin(entry: AuditEntry, effect?: CallEffect): Promise<number> {
    if (!this.#db.open) return Promise.resolve(0);
    return this.#batch.add({ kind: "begin", entry: { ...entry, status: "started" }, effect });
  }

  /** What this connection committed is in the database file's WAL: a sync of it (the synced connection's) puts it on disk, with every commit before. */
  async onDisk(): Promise<void> {
    await this.flush();
    await this.#onDisk();
  }

  /** Completes a row written by `begin` with the call's outcome. */
  complete(id: number, completion: AuditCompletion): Promise<void> {
    if (!this.#db.open || id === 0) return Promise.resolve();
    return this.#batch.add({ kind: "complete", id, completion }).then(() => undefined);
  }

  /** The latest row recorded under a call id, with its outcome and effect. */
  async findCall(callId: string): Promise<RecordedCall | undefined> {
    // No flush: the writes of this turn are other calls' (a call id comes back only when a run is
    // replayed, after its earlier rows were committed), and flushing here would commit every
    // call's row on its own instead of a turn's rows together.
    this.#findCall ??= this.#db.prepare("SELECT * FROM audit WHERE call_id = ? ORDER BY id DESC LIMIT 1");
    return recordedCallOf(this.#findCall.get(callId) as DbRow | undefined);
  }

  unfinished(filter: Pick<AuditFilter, "runId" | "threadId"> = {}): Promise<AuditRow[]> {
    return this.list({ ...filter, status: "started", limit: 10_000 });
  }

  flush(): Promise<void> {
    return this.#batch.flush();
  }

  async list(filter: AuditFilter = {}): Promise<AuditRow[]> {
    // The batch's write is synchronous: done before the read below.
    void this.flush();
    const { clause, values } = where(filter);
    const limit = filter.limit ?? 100;
    // The newest `limit` rows, shown oldest first.
    const rows = this.#db.prepare(`SELECT * FROM (SELECT * FROM audit ${clause} ORDER BY id DESC LIMIT @limit) ORDER BY id`).all({ ...values, limit }) as DbRow[];
    return rows.map(fromDb);
  }

  async *iterate(filter: AuditFilter = {}): AsyncGenerator<AuditRow> {
    void this.flush();
    const { clause, values } = where(filter);
    for (const row of this.#db.prepare(`SELECT * FROM audit ${clause} ORDER BY id`).iterate(values)) yield fromDb(row as DbRow);
  }

  async count(filter: AuditFilter = {}): Promise<number> {
    void this.flush();
    const { clause, values } = where(filter);
    return (this.#db.prepare(`SELECT COUNT(*) AS n FROM audit ${clause}`).get(values) as { n: number }).n;
  }

  async stats(filter: AuditFilter = {}): Promise<AuditStats> {
    void this.flush();
    const { clause, values } = where(filter);
    const total = this.#db
      .prepare(
        `SELECT COUNT(*) AS total, SUM(status = 'ok') AS ok, SUM(decision = 'denied') AS denied, SUM(decision = 'approved') AS approved,
                SUM(decision = 'rejected') AS rejected, SUM(cached) AS cached, AVG(duration_ms) AS average FROM audit ${clause}`,
      )
      .get(values) as { total: number; ok: number | null; denied: number | null; approved: number | null; rejected: number | null; cached: number | null; average: number | null };
    const grouped = (column: "agent" | "tool"): Record<string, AuditCounts> => {
      const rows = this.#db
        .prepare(`SELECT ${column} AS name, COUNT(*) AS total, SUM(status = 'ok') AS ok, SUM(decision = 'denied') AS denied FROM audit ${clause} GROUP BY ${column} ORDER BY ${column}`)
        .all(values) as Array<{ name: string; total: number; ok: number | null; denied: number | null }>;
      return Object.fromEntries(rows.map((row) => [row.name, counts(row.total, row.ok ?? 0, row.denied ?? 0)]));
    };
    return {
      ...counts(total.total, total.ok ?? 0, total.denied ?? 0),
      approved: total.approved ?? 0,
      rejected: total.rejected ?? 0,
      cached: total.cached ?? 0,
      averageMs: Math.round((total.average ?? 0) * 100) / 100,
      byAgent: grouped("agent"),
      byTool: grouped("tool"),
    };
  }
}
