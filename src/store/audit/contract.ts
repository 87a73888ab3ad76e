import { type AuditCompletion, type AuditEntry, type AuditSink, CallEffect, type RecordedCall } from "../../tools/audit.js";

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

/** The WHERE clause of a filter, with `@name` placeholders (see database/placeholders.ts). */
export function where(filter: AuditFilter): { clause: string; values: Record<string, string | number> } {
  const parts: string[] = [];
  const values: Record<string, string | number> = {};
  const add = (column: string, value: string | number | undefined, operator = "="): void => {
    if (value === undefined) return;
    const name = `filter${parts.length}`;
    parts.push(`${column} ${operator} @${name}`);
    values[name] = value;
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

/** The call a row records, as the registry reads it back (a call coming again after a crash). */
export function recordedCallOf(row: DbRow | undefined): RecordedCall | undefined {
  if (!row) return undefined;
  return { id: row.id, status: row.status, entry: fromDb(row), outcome: row.outcome ?? null, effect: parseEffect(row.effect) };
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
