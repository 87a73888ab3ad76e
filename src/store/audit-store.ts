import type { Statement } from "better-sqlite3";
import { type AuditCompletion, type AuditEntry, type AuditSink, CallEffect, type RecordedCall } from "../tools/audit.js";
import type { Sqlite } from "./database.js";
import { TurnBatch } from "./turn-batch.js";

/** A stored audit row: the entry with its id. */
export type AuditRow = AuditEntry & { id: number };

export interface AuditFilter {
  runId?: string;
  threadId?: string;
  agent?: string;
  /** The API key's name behind direct calls made over HTTP. */
  principal?: string;
  tool?: string;
  decision?: AuditEntry["decision"];
  status?: AuditEntry["status"];
  /** Rows after this id (for paging and following). */
  afterId?: number;
  /** At most this many (newest last). */
  limit?: number;
}

export interface AuditCounts {
  total: number;
  succeeded: number;
  failed: number;
  denied: number;
  successRate: number;
}

/** `troupe audit stats`: totals and success rate, by agent and by tool (seed 001's statistics). */
export interface AuditStats extends AuditCounts {
  approved: number;
  rejected: number;
  cached: number;
  averageMs: number;
  byAgent: Record<string, AuditCounts>;
  byTool: Record<string, AuditCounts>;
}

/** An audit row as both databases return it. */
export interface DbRow {
  id: number;
  at: number;
  run_id: string | null;
  thread_id: string | null;
  subtask_id: string | null;
  agent: string;
  principal: string | null;
  tool: string;
  args: string;
  decision: AuditEntry["decision"];
  status: AuditEntry["status"];
  level: string;
  grant_info: string | null;
  reason: string | null;
  result_preview: string | null;
  error_code: string | null;
  error: string | null;
  duration_ms: number;
  attempts: number;
  cached: number;
  call_id?: string | null;
  effect?: string | null;
  outcome?: string | null;
}

/** One write of the batch: a finished call's row, a started row, or the completion of one. */
export type AuditWrite =
  | { kind: "record"; entry: AuditEntry }
  | { kind: "begin"; entry: AuditEntry; effect: CallEffect | undefined }
  | { kind: "complete"; id: number; completion: AuditCompletion };

export function fromDb(row: DbRow): AuditRow {
  return {
    id: row.id,
    at: row.at,
    runId: row.run_id,
    threadId: row.thread_id,
    subtaskId: row.subtask_id,
    agent: row.agent,
    principal: row.principal,
    tool: row.tool,
    args: row.args,
    decision: row.decision,
    status: row.status,
    level: row.level,
    grant: row.grant_info,
    reason: row.reason,
    resultPreview: row.result_preview,
    errorCode: row.error_code,
    error: row.error,
    durationMs: row.duration_ms,
    attempts: row.attempts,
    cached: Number(row.cached) === 1,
    callId: row.call_id ?? null,
  };
}

export function parseEffect(text: string | null | undefined): CallEffect | null {
  if (!text) return null;
  try {
    const parsed = CallEffect.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

export function where(filter: AuditFilter): { clause: string; values: Array<string | number> } {
  const parts: string[] = [];
  const values: Array<string | number> = [];
  const add = (column: string, value: string | number | undefined, operator = "="): void => {
    if (value === undefined) return;
    parts.push(`${column} ${operator} ?`);
    values.push(value);
  };
  add("run_id", filter.runId);
  add("thread_id", filter.threadId);
  add("agent", filter.agent);
  add("principal", filter.principal);
  add("tool", filter.tool);
  add("decision", filter.decision);
  add("status", filter.status);
  add("id", filter.afterId, ">");
  return { clause: parts.length ? `WHERE ${parts.join(" AND ")}` : "", values };
}

export function counts(total: number, succeeded: number, denied: number): AuditCounts {
  return { total, succeeded, failed: total - succeeded, denied, successRate: total === 0 ? 0 : Math.round((succeeded / total) * 10_000) / 10_000 };
}

/**
 * The audit trail: the registry's sink (rows written ahead of a call and completed after it,
 * batched per turn of the event loop) and the queries of `troupe audit`. Implemented on SQLite
 * and on Postgres; both pass the store contract suite.
 */
export interface AuditStore extends AuditSink {
  record(entry: AuditEntry): Promise<void>;
  begin(entry: AuditEntry, effect?: CallEffect): Promise<number>;
  complete(id: number, completion: AuditCompletion): Promise<void>;
  findCall(callId: string): Promise<RecordedCall | undefined>;
  /**
   * Calls that began and never finished: `started` rows (of a run, when given). While the process
   * that made them runs, some may still be running; after it died, each is a call whose outcome
   * is unknown — it may or may not have had its effect.
   */
  unfinished(filter?: Pick<AuditFilter, "runId" | "threadId">): Promise<AuditRow[]>;
  /** Commits the writes waiting, and tells their writers. */
  flush(): Promise<void>;
  /** The newest `limit` rows that match, oldest first. */
  list(filter?: AuditFilter): Promise<AuditRow[]>;
  /** Every row that matches, oldest first, without holding them all in memory. */
  iterate(filter?: AuditFilter): AsyncGenerator<AuditRow>;
  count(filter?: AuditFilter): Promise<number>;
  stats(filter?: AuditFilter): Promise<AuditStats>;
}

/**
 * The audit trail in SQLite, on the connection with `synchronous = NORMAL`. Writes made in the
 * same turn of the event loop (the items of a map starting or finishing together) are committed
 * in one transaction, and each write resolves only once it is committed — the registry waits
 * for a call's `started` row before the tool runs and for its completion before it returns, so a
 * row survives a crash of the process as soon as its call has begun, and is on disk with the next
 * checkpoint commit. One transaction per row cost about four times as much per call.
 */
export class SqliteAuditStore implements AuditStore {
  readonly #db: Sqlite;
  readonly #batch: TurnBatch<AuditWrite, number>;
  #findCall: Statement | undefined;
  #prepared: { insert: Statement; update: Statement } | undefined;
  #writeAll: ((writes: AuditWrite[]) => number[]) | undefined;

  constructor(db: Sqlite) {
    this.#db = db;
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
    const row = this.#findCall.get(callId) as DbRow | undefined;
    if (!row) return undefined;
    return { id: row.id, status: row.status, entry: fromDb(row), outcome: row.outcome ?? null, effect: parseEffect(row.effect) };
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
    const rows = this.#db.prepare(`SELECT * FROM (SELECT * FROM audit ${clause} ORDER BY id DESC LIMIT ?) ORDER BY id`).all(...values, limit) as DbRow[];
    return rows.map(fromDb);
  }

  async *iterate(filter: AuditFilter = {}): AsyncGenerator<AuditRow> {
    void this.flush();
    const { clause, values } = where(filter);
    for (const row of this.#db.prepare(`SELECT * FROM audit ${clause} ORDER BY id`).iterate(...values)) yield fromDb(row as DbRow);
  }

  async count(filter: AuditFilter = {}): Promise<number> {
    void this.flush();
    const { clause, values } = where(filter);
    return (this.#db.prepare(`SELECT COUNT(*) AS n FROM audit ${clause}`).get(...values) as { n: number }).n;
  }

  async stats(filter: AuditFilter = {}): Promise<AuditStats> {
    void this.flush();
    const { clause, values } = where(filter);
    const total = this.#db
      .prepare(
        `SELECT COUNT(*) AS total, SUM(status = 'ok') AS ok, SUM(decision = 'denied') AS denied, SUM(decision = 'approved') AS approved,
                SUM(decision = 'rejected') AS rejected, SUM(cached) AS cached, AVG(duration_ms) AS average FROM audit ${clause}`,
      )
      .get(...values) as { total: number; ok: number | null; denied: number | null; approved: number | null; rejected: number | null; cached: number | null; average: number | null };
    const grouped = (column: "agent" | "tool"): Record<string, AuditCounts> => {
      const rows = this.#db
        .prepare(`SELECT ${column} AS name, COUNT(*) AS total, SUM(status = 'ok') AS ok, SUM(decision = 'denied') AS denied FROM audit ${clause} GROUP BY ${column} ORDER BY ${column}`)
        .all(...values) as Array<{ name: string; total: number; ok: number | null; denied: number | null }>;
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
