import type pg from "pg";
import type { AuditCompletion, AuditEntry, CallEffect, RecordedCall } from "../../tools/audit.js";
import { type AuditCounts, type AuditFilter, type AuditRow, type AuditStats, type AuditStore, type AuditWrite, counts, type DbRow, fromDb, recordedCallOf, where } from "./contract.js";
import { positional } from "../database/placeholders.js";
import { TurnBatch } from "../turn-batch.js";

const INSERT_COLUMNS = [
  "id",
  "at",
  "run_id",
  "thread_id",
  "subtask_id",
  "agent",
  "principal",
  "tool",
  "args",
  "decision",
  "status",
  "level",
  "grant_info",
  "reason",
  "result_preview",
  "error_code",
  "error",
  "duration_ms",
  "attempts",
  "cached",
  "call_id",
  "effect",
] as const;
const INSERT_TYPES = ["bigint", "bigint", "text", "text", "text", "text", "text", "text", "text", "text", "text", "text", "text", "text", "text", "text", "text", "float8", "int", "int", "text", "text"];

/**
 * The audit trail on Postgres. As on SQLite, the writes of one turn of the event loop (a map's
 * items starting or finishing together) are committed together — here in one statement: the new
 * rows' ids are drawn from the sequence first, then the inserts and the completions go in one
 * `WITH … INSERT … UPDATE` — and each write resolves only once committed, so a call's `started`
 * row is in the database before its tool runs.
 */
export class PostgresAuditStore implements AuditStore {
  readonly #pool: pg.Pool;
  readonly #batch: TurnBatch<AuditWrite, number>;

  constructor(pool: pg.Pool) {
    this.#pool = pool;
    this.#batch = new TurnBatch<AuditWrite, number>((writes) => this.#writeAll(writes));
  }

  async #writeAll(writes: AuditWrite[]): Promise<number[]> {
    const inserts = writes.filter((write) => write.kind !== "complete");
    let ids: number[] = [];
    if (inserts.length > 0) {
      const { rows } = await this.#pool.query<{ id: number }>("SELECT nextval(pg_get_serial_sequence('audit', 'id')) AS id FROM generate_series(1, $1)", [inserts.length]);
      ids = rows.map((row) => row.id).sort((a, b) => a - b);
    }
    const values: unknown[][] = INSERT_COLUMNS.map(() => []);
    inserts.forEach((write, index) => {
      const entry: AuditEntry = write.entry;
      const effect: CallEffect | undefined = write.kind === "begin" ? write.effect : undefined;
      const row = [
        ids[index],
        entry.at,
        entry.runId,
        entry.threadId,
        entry.subtaskId,
        entry.agent,
        entry.principal ?? null,
        entry.tool,
        entry.args,
        entry.decision,
        entry.status,
        entry.level,
        entry.grant,
        entry.reason,
        entry.resultPreview,
        entry.errorCode,
        entry.error,
        entry.durationMs,
        entry.attempts,
        entry.cached ? 1 : 0,
        entry.callId ?? null,
        effect ? JSON.stringify(effect) : null,
      ];
      row.forEach((value, column) => values[column]?.push(value));
    });
    const completions = writes.filter((write): write is Extract<AuditWrite, { kind: "complete" }> => write.kind === "complete");
    // A completion of a row begun in this same batch is applied after its insert (in the statement's snapshot the row does not exist yet).
    const now: typeof completions = [];
    const later: typeof completions = [];
    for (const completion of completions) (ids.includes(completion.id) ? later : now).push(completion);
    const completionValues = (list: typeof completions): unknown[][] => [
      list.map((write) => write.id),
      list.map((write) => write.completion.entry.decision),
      list.map((write) => write.completion.entry.status),
      list.map((write) => write.completion.entry.reason),
      list.map((write) => write.completion.entry.resultPreview),
      list.map((write) => write.completion.entry.errorCode),
      list.map((write) => write.completion.entry.error),
      list.map((write) => write.completion.entry.durationMs),
      list.map((write) => write.completion.entry.attempts),
      list.map((write) => (write.completion.entry.cached ? 1 : 0)),
      list.map((write) => write.completion.outcome ?? null),
    ];
    const update = (first: number) => `UPDATE audit SET decision = c.decision, status = c.status, reason = c.reason, result_preview = c.result_preview, error_code = c.error_code,
        error = c.error, duration_ms = c.duration_ms, attempts = c.attempts, cached = c.cached, outcome = c.outcome
      FROM unnest(${["bigint", "text", "text", "text", "text", "text", "text", "float8", "int", "int", "text"].map((type, index) => `$${first + index}::${type}[]`).join(", ")})
        AS c(id, decision, status, reason, result_preview, error_code, error, duration_ms, attempts, cached, outcome)
      WHERE audit.id = c.id`;
    const insert = `INSERT INTO audit (${INSERT_COLUMNS.join(", ")}) SELECT * FROM unnest(${INSERT_TYPES.map((type, index) => `$${index + 1}::${type}[]`).join(", ")})`;
    if (inserts.length > 0 && now.length > 0) {
      await this.#pool.query(`WITH inserted AS (${insert} RETURNING 1), updated AS (${update(INSERT_COLUMNS.length + 1)} RETURNING 1) SELECT 1`, [...values, ...completionValues(now)]);
    } else if (inserts.length > 0) {
      await this.#pool.query(insert, values);
    } else if (now.length > 0) {
      await this.#pool.query(update(1), completionValues(now));
    }
    if (later.length > 0) await this.#pool.query(update(1), completionValues(later));
    let next = 0;
    return writes.map((write) => (write.kind === "complete" ? write.id : (ids[next++] as number)));
  }

  record(entry: AuditEntry): Promise<void> {
    return this.#batch.add({ kind: "record", entry }).then(() => undefined);
  }

  begin(entry: AuditEntry, effect?: CallEffect): Promise<number> {
    return this.#batch.add({ kind: "begin", entry: { ...entry, status: "started" }, effect });
  }

  complete(id: number, completion: AuditCompletion): Promise<void> {
    if (id === 0) return Promise.resolve();
    return this.#batch.add({ kind: "complete", id, completion }).then(() => undefined);
  }

  async findCall(callId: string): Promise<RecordedCall | undefined> {
    const { rows } = await this.#pool.query<DbRow>("SELECT * FROM audit WHERE call_id = $1 ORDER BY id DESC LIMIT 1", [callId]);
    return recordedCallOf(rows[0]);
  }

  unfinished(filter: Pick<AuditFilter, "runId" | "threadId"> = {}): Promise<AuditRow[]> {
    return this.list({ ...filter, status: "started", limit: 10_000 });
  }

  flush(): Promise<void> {
    return this.#batch.flush();
  }

  async list(filter: AuditFilter = {}): Promise<AuditRow[]> {
    await this.flush();
    const { clause, values } = where(filter);
    const { rows } = await this.#pool.query<DbRow>(positional(`SELECT * FROM (SELECT * FROM audit ${clause} ORDER BY id DESC LIMIT @limit) AS newest ORDER BY id`, { ...values, limit: filter.limit ?? 100 }));
    return rows.map(fromDb);
  }

  async *iterate(filter: AuditFilter = {}): AsyncGenerator<AuditRow> {
    await this.flush();
    const { clause, values } = where(filter);
    let after = 0;
    for (;;) {
      const { rows } = await this.#pool.query<DbRow>(positional(`SELECT * FROM audit ${clause ? `${clause} AND` : "WHERE"} id > @after ORDER BY id LIMIT 1000`, { ...values, after }));
      for (const row of rows) yield fromDb(row);
      if (rows.length < 1000) return;
      after = (rows.at(-1) as DbRow).id;
    }
  }

  async count(filter: AuditFilter = {}): Promise<number> {
    await this.flush();
    const { clause, values } = where(filter);
    const { rows } = await this.#pool.query<{ n: number }>(positional(`SELECT COUNT(*)::int AS n FROM audit ${clause}`, values));
    return rows[0]?.n ?? 0;
  }

  async stats(filter: AuditFilter = {}): Promise<AuditStats> {
    await this.flush();
    const { clause, values } = where(filter);
    const { rows } = await this.#pool.query<{ total: number; ok: number; denied: number; approved: number; rejected: number; cached: number; average: number | null }>(
      positional(`SELECT COUNT(*)::int AS total, COUNT(*) FILTER (WHERE status = 'ok')::int AS ok, COUNT(*) FILTER (WHERE decision = 'denied')::int AS denied,
              COUNT(*) FILTER (WHERE decision = 'approved')::int AS approved, COUNT(*) FILTER (WHERE decision = 'rejected')::int AS rejected,
              COALESCE(SUM(cached), 0)::int AS cached, AVG(duration_ms)::float8 AS average FROM audit ${clause}`, values),
    );
    const total = rows[0] as NonNullable<(typeof rows)[0]>;
    const grouped = async (column: "agent" | "tool"): Promise<Record<string, AuditCounts>> => {
      const result = await this.#pool.query<{ name: string; total: number; ok: number; denied: number }>(
        positional(`SELECT ${column} AS name, COUNT(*)::int AS total, COUNT(*) FILTER (WHERE status = 'ok')::int AS ok, COUNT(*) FILTER (WHERE decision = 'denied')::int AS denied
                 FROM audit ${clause} GROUP BY ${column} ORDER BY ${column} COLLATE "C"`, values),
      );
      return Object.fromEntries(result.rows.map((row) => [row.name, counts(row.total, row.ok, row.denied)]));
    };
    return {
      ...counts(total.total, total.ok, total.denied),
      approved: total.approved,
      rejected: total.rejected,
      cached: total.cached,
      averageMs: Math.round((total.average ?? 0) * 100) / 100,
      byAgent: await grouped("agent"),
      byTool: await grouped("tool"),
    };
  }
}
