import { z } from "zod";
import { ANSWER_FORMATS, type AnswerFormat, RUN_STATUSES, STOP_REASONS, type InterruptInfo, type ResumeDecision, type RunMetrics, type RunStatus, type StopReason } from "../../core/run.js";
import { deliveryFor, type NewDelivery } from "../webhooks/contract.js";
import { rowUpdate } from "../database/update.js";

/** A person's decision accepted while a run waits for a slot, and which pending interrupt it answers. */
export type PendingDecision = ResumeDecision & { interruptId?: string };

export interface RunRecord {
  id: string;
  threadId: string;
  task: string;
  status: RunStatus;
  stopReason: StopReason | null;
  request: Record<string, unknown>;
  answer: string | null;
  /** How the answer is meant to be read (Markdown, or plain text written by rules or code); null for a run recorded before it was kept. */
  answerFormat: AnswerFormat | null;
  error: string | null;
  metrics: RunMetrics | null;
  interrupt: InterruptInfo | null;
  pid: number | null;
  host: string | null;
  activeMs: number;
  createdAt: number;
  updatedAt: number;
  finishedAt: number | null;
  /** The API principal that submitted the run (null for CLI and library runs). */
  owner: string | null;
  idempotencyKey: string | null;
  requestHash: string | null;
  /** Why the run stopped without asking a person (`shutdown`): it resumes when a server starts. */
  suspended: string | null;
  /** A person's decision accepted while the run waited for a slot; applied when it starts. */
  pendingDecision: PendingDecision | null;
  /** When the run first left the queue; null while it never ran. */
  startedAt: number | null;
  /** How many times the run was set running (its start and every resume). */
  starts: number;
  /** How many times in a row its process died while it ran; back to 0 when it stops normally. */
  crashes: number;
  /** The eval this run is a case of (it works in its case's workspace, so nothing else resumes it). */
  evalId: string | null;
  /** The worker process that holds the run while it runs (scale-out on Postgres; null otherwise). */
  worker: string | null;
  /** A cancel was asked for while another process held the run: whoever holds it next stops it. */
  cancelRequested: boolean;
  /** The run and checkpoint this run was forked from (`troupe runs fork`); null for a run started from its task. */
  forkedFrom: ForkOrigin | null;
  /** A queued run waits for this run of its thread to stop before it starts (`--on-busy enqueue`). */
  waitsFor: string | null;
  /** The run that asked this one to stop and give way (`--on-busy interrupt` or `rollback`). */
  supersededBy: string | null;
}

/** Where a fork started: the run, the checkpoint of its thread, and the subtask asked for (when it was one). */
export interface ForkOrigin {
  runId: string;
  threadId: string;
  checkpointId: string;
  subtaskId?: string;
}

const json = <T extends z.ZodType>(schema: T) =>
  z
    .string()
    .nullable()
    .transform((text) => (text === null ? null : (JSON.parse(text) as unknown)))
    .pipe(schema.nullable());

/** A stored row (SQLite's or Postgres's: timestamps as numbers, JSON as text), validated on the way out. */
export const RunRow = z
  .object({
    id: z.string(),
    thread_id: z.string(),
    task: z.string(),
    status: z.enum(RUN_STATUSES),
    stop_reason: z.enum(STOP_REASONS).nullable(),
    request: json(z.record(z.string(), z.unknown())),
    answer: z.string().nullable(),
    error: z.string().nullable(),
    metrics: json(z.custom<RunMetrics>((value) => typeof value === "object" && value !== null)),
    interrupt: json(z.custom<InterruptInfo>((value) => typeof value === "object" && value !== null)),
    pid: z.number().nullable(),
    host: z.string().nullable(),
    active_ms: z.number(),
    created_at: z.number(),
    updated_at: z.number(),
    finished_at: z.number().nullable(),
    // Added by migration 4; optional so a row read through an older schema still parses.
    owner: z.string().nullable().default(null),
    idempotency_key: z.string().nullable().default(null),
    request_hash: z.string().nullable().default(null),
    suspended: z.string().nullable().default(null),
    pending_decision: json(z.custom<PendingDecision>((value) => typeof value === "object" && value !== null)).default(null),
    started_at: z.number().nullable().default(null),
    // Added by migration 6.
    starts: z.number().default(0),
    crashes: z.number().default(0),
    // Added by migration 7.
    eval_id: z.string().nullable().default(null),
    // Added by migration 10.
    worker: z.string().nullable().default(null),
    cancel_requested: z.union([z.number(), z.boolean()]).nullable().default(null),
    // Added by migration 18 (Postgres 7).
    forked_from: json(z.custom<ForkOrigin>((value) => typeof value === "object" && value !== null)).default(null),
    waits_for: z.string().nullable().default(null),
    superseded_by: z.string().nullable().default(null),
    // Added by migration 27 (Postgres 16).
    answer_format: z.enum(ANSWER_FORMATS).nullable().default(null),
  })
  .transform(
    (row): RunRecord => ({
      id: row.id,
      threadId: row.thread_id,
      task: row.task,
      status: row.status,
      stopReason: row.stop_reason,
      request: row.request ?? {},
      answer: row.answer,
      answerFormat: row.answer_format,
      error: row.error,
      metrics: row.metrics,
      interrupt: row.interrupt,
      pid: row.pid,
      host: row.host,
      activeMs: row.active_ms,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
      finishedAt: row.finished_at,
      owner: row.owner,
      idempotencyKey: row.idempotency_key,
      requestHash: row.request_hash,
      suspended: row.suspended,
      pendingDecision: row.pending_decision,
      startedAt: row.started_at,
      starts: row.starts,
      crashes: row.crashes,
      evalId: row.eval_id,
      worker: row.worker,
      cancelRequested: Boolean(row.cancel_requested),
      forkedFrom: row.forked_from,
      waitsFor: row.waits_for,
      supersededBy: row.superseded_by,
    }),
  );

/** Which runs a listing or a count takes. */
export interface RunFilter {
  status?: RunStatus;
  /** Any of these statuses (none: no run). */
  statuses?: RunStatus[];
  threadId?: string;
  /** Only the runs of this API principal. */
  owner?: string;
  /** Runs holding a question for a person (`set`), or holding none (`unset`). */
  interrupt?: "set" | "unset";
  /** Runs a person's rejection stopped (true), or any other (false). */
  rejected?: boolean;
  /** Runs last changed at or after this time (ms since the epoch). */
  updatedSince?: number;
}

export interface RunListOptions extends RunFilter {
  limit?: number;
  offset?: number;
  /** Newest created first (the default), or last changed first (`updated`: updated_at, then id, both descending). */
  order?: "created" | "updated";
  /** With order `updated`: only the runs after this one in that order (a page's cursor, stable as runs are added). */
  after?: { updatedAt: number; id: string };
}

/**
 * Where a page of runs starts (keyset pagination): after this run in the order runs are listed,
 * newest first — its creation time, then the order runs were written in (SQLite's rowid,
 * Postgres's row_order) among runs created in the same millisecond.
 */
export interface RunCursor {
  createdAt: number;
  order: number;
}

/** A page of runs and the cursor of the next one (null: this is the last). */
export interface RunPage {
  runs: RunRecord[];
  next: RunCursor | null;
}

export interface RunPageOptions extends Pick<RunListOptions, "status" | "threadId" | "owner"> {
  limit: number;
  /** Runs after this one (the first page without). */
  after?: RunCursor;
  /** Runs skipped past the cursor (offset paging, kept for old clients; its cost grows with the offset). */
  offset?: number;
}

/** The WHERE clause of a page: the listing's filters and, after a cursor, only the runs listed after it. */
export function pageFilters(options: RunPageOptions, order: "rowid" | "row_order"): { where: string; values: Record<string, unknown> } {
  // The page's cursor is on the creation order; `filters`' own `after` is the last-changed order's.
  const { after: _cursor, ...filter } = options;
  const { where, values } = filters(filter);
  if (!options.after) return { where, values };
  // A row-value comparison, which both databases read as a range of the index (an OR of the two cases is not).
  const after = `(created_at, ${order}) < (@afterCreatedAt, @afterOrder)`;
  return { where: where ? `${where} AND ${after}` : `WHERE ${after}`, values: { ...values, afterCreatedAt: options.after.createdAt, afterOrder: options.after.order } };
}

/** The page of rows read (one more than asked, to know whether another follows), each with its order. */
export function pageOf(rows: Array<Record<string, unknown>>, limit: number): RunPage {
  const runs = rows.slice(0, limit).map((row) => RunRow.parse(row));
  const last = rows.length > limit ? rows[limit - 1] : undefined;
  return { runs, next: last === undefined ? null : { createdAt: Number(last.created_at), order: Number(last.row_order) } };
}

/** The fields an update may change. */
export type RunPatch = Partial<
  Pick<
    RunRecord,
    | "status"
    | "stopReason"
    | "answer"
    | "answerFormat"
    | "error"
    | "metrics"
    | "interrupt"
    | "pid"
    | "host"
    | "activeMs"
    | "finishedAt"
    | "suspended"
    | "pendingDecision"
    | "startedAt"
    | "crashes"
    | "worker"
    | "cancelRequested"
    | "waitsFor"
    | "supersededBy"
  >
>;

/** The update that records a run as finished: its outcome, with nothing held, waited on or pending any more. */
export function finishedPatch(outcome: Required<Pick<RunPatch, "status" | "stopReason" | "answer" | "error" | "metrics">> & Pick<RunPatch, "answerFormat">): RunPatch {
  return { ...outcome, interrupt: null, pid: null, worker: null, suspended: null, pendingDecision: null, finishedAt: Date.now() };
}

/** Statuses a run reaches by stopping on its own (not by its process dying): its crash count starts again. */
export const STOPPED = new Set(["completed", "failed", "cancelled", "interrupted"]);

/** Each patch field's column. */
export const RUN_COLUMNS: Record<keyof RunPatch, string> = {
  status: "status",
  stopReason: "stop_reason",
  answer: "answer",
  answerFormat: "answer_format",
  error: "error",
  metrics: "metrics",
  interrupt: "interrupt",
  pid: "pid",
  host: "host",
  activeMs: "active_ms",
  finishedAt: "finished_at",
  suspended: "suspended",
  pendingDecision: "pending_decision",
  startedAt: "started_at",
  crashes: "crashes",
  worker: "worker",
  cancelRequested: "cancel_requested",
  waitsFor: "waits_for",
  supersededBy: "superseded_by",
};

/** The value stored for a patch field: JSON as text, flags as 0/1. */
export function columnValue(key: keyof RunPatch, value: unknown): unknown {
  if (key === "metrics" || key === "interrupt" || key === "pendingDecision") return value === null ? null : JSON.stringify(value);
  if (key === "cancelRequested") return value ? 1 : 0;
  return value;
}

/**
 * The UPDATE of a run, for both dialects (`@name` placeholders): the patch's columns, the time,
 * and what a change of status brings in the same write — every start and resume passes here on
 * its way to running and is counted; a run that stops on its own starts its crash count again.
 * With `ifStatus`, only while the run has one of those statuses.
 */
export function runUpdate(id: string, patch: RunPatch, options: UpdateRunOptions, now: number): { sql: string; values: Record<string, unknown> } {
  const also: string[] = [];
  if (patch.status === "running") also.push("starts = starts + 1");
  else if (patch.status !== undefined && STOPPED.has(patch.status) && patch.crashes === undefined) also.push("crashes = 0");
  return rowUpdate({ table: "runs", columns: RUN_COLUMNS, id, patch, now, ifStatus: options.ifStatus, also, encode: columnValue });
}

/**
 * The queries over runs that have not settled, for both dialects; `order` breaks ties of
 * `created_at` in insertion order (SQLite's `rowid`, Postgres's `row_order`).
 */
export function unsettledQueries(order: "rowid" | "row_order"): { api: string; ofEval: string } {
  return {
    // API runs a server takes up when it starts (see RunStore.listUnsettled).
    api: `SELECT * FROM runs WHERE owner IS NOT NULL AND eval_id IS NULL
       AND (status IN ('queued', 'running') OR (status = 'interrupted' AND suspended IS NOT NULL))
       ORDER BY created_at, ${order}`,
    ofEval: `SELECT * FROM runs WHERE eval_id = @evalId AND status IN ('queued', 'running') ORDER BY created_at, ${order}`,
  };
}

/** A new run's record, before it is written: every field a run starts with. */
export function newRunRecord(record: NewRun, now: number): RunRecord {
  return {
    owner: null,
    idempotencyKey: null,
    requestHash: null,
    startedAt: null,
    evalId: null,
    ...record,
    stopReason: null,
    answer: null,
    answerFormat: null,
    error: null,
    metrics: null,
    interrupt: null,
    activeMs: 0,
    createdAt: now,
    updatedAt: now,
    finishedAt: null,
    suspended: null,
    pendingDecision: null,
    starts: record.status === "running" ? 1 : 0,
    crashes: 0,
    worker: record.worker ?? null,
    cancelRequested: false,
    forkedFrom: record.forkedFrom ?? null,
    waitsFor: record.waitsFor ?? null,
    supersededBy: null,
  };
}

export interface UpdateRunOptions {
  /** Change the run only while its status is one of these. */
  ifStatus?: readonly RunStatus[];
}

export interface CreateRunOptions {
  /**
   * Called inside the write's transaction with the thread's latest run (runs created before it in
   * the same batch included); throws to refuse the run, which is then not written. It may return
   * fields the run is written with instead: the run it waits for (a busy thread's queue).
   */
  check?: (latest: RunRecord | undefined) => void | Pick<NewRun, "waitsFor">;
}

/** Statuses a run never leaves: the runs waiting for it may go. */
export const TERMINAL_STATUSES: ReadonlySet<string> = new Set(["completed", "failed", "cancelled"]);

/**
 * What a change of a run's status brings with it, in the same transaction: the runs of its
 * thread waiting for it are released (it ended), and its webhook's delivery is written (see
 * webhook-outbox.ts). Undefined when the status did not change.
 */
export function consequencesOf(before: string | undefined, after: RunRecord): { release: boolean; delivery: NewDelivery | undefined } | undefined {
  if (before === undefined || before === after.status) return undefined;
  return { release: TERMINAL_STATUSES.has(after.status), delivery: deliveryFor(before, after) };
}

/**
 * The runs table: one row per run, updated as it goes. Implemented on SQLite (`SqliteRunStore`)
 * and on Postgres (`PostgresRunStore`, where a run written as `queued` is also a job of the run
 * queue, in the same transaction); both pass the store contract suite (test/store-contract).
 */
export interface RunStore {
  /**
   * Writes a new run. The runs created in one turn of the event loop share one transaction (one
   * synced commit for a burst of submissions); a run refused by its check fails alone.
   */
  create(record: NewRun, options?: CreateRunOptions): Promise<RunRecord>;
  /** Runs given to `create` and not yet written (their turn's transaction has not started): submissions waiting for their write. */
  readonly creationsWaiting: number;
  /**
   * Changes a run's record; with `ifStatus`, only while the run has one of those statuses (a
   * cancel of a queued run must not overwrite a start that got there first). Resolves with
   * whether the run was changed.
   */
  update(id: string, patch: RunPatch, options?: UpdateRunOptions): Promise<boolean>;
  get(id: string): Promise<RunRecord | undefined>;
  /** Several runs by id (those that exist, in no particular order). */
  getMany(ids: string[]): Promise<RunRecord[]>;
  /** The newest run of a thread. */
  latestForThread(threadId: string): Promise<RunRecord | undefined>;
  /** Of these runs, those another run has asked to give way (`supersededBy` set): one read for every drive a process polls. */
  supersededAmong(ids: string[]): Promise<string[]>;
  /** Runs, newest created first, or last changed first (`order: "updated"`, with a cursor). */
  list(options?: RunListOptions): Promise<RunRecord[]>;
  /**
   * A page of runs, newest first, after a cursor: its cost is the page's, however many runs came
   * before it (an index of the filters in listing order serves each: migration 21, Postgres 10).
   */
  page(options: RunPageOptions): Promise<RunPage>;
  /** How many runs match, counting at most `atMost` (the cost of a count grows with what it counts). */
  count(options?: RunFilter, atMost?: number): Promise<number>;
  /** The run an API principal submitted with this Idempotency-Key, if any. */
  findByIdempotencyKey(owner: string, idempotencyKey: string): Promise<RunRecord | undefined>;
  /** Counts one more death of the run's process while it ran; returns how many in a row now. */
  recordCrash(id: string): Promise<number>;
  /**
   * API runs a server must take up when it starts, oldest first: queued ones, ones stopped by a
   * shutdown, and ones recorded as running (their process may have died). The cases of an eval
   * are not among them: each belongs to its case's workspace, and its eval settles it.
   */
  listUnsettled(): Promise<RunRecord[]>;
  /** The runs of an eval's cases that had not stopped (their eval was cut short). */
  listUnsettledOfEval(evalId: string): Promise<RunRecord[]>;
}

export type NewRun = Pick<RunRecord, "id" | "threadId" | "task" | "status" | "request" | "pid" | "host"> &
  Partial<Pick<RunRecord, "owner" | "idempotencyKey" | "requestHash" | "startedAt" | "evalId" | "worker" | "forkedFrom" | "waitsFor">>;

/** The WHERE clause and values of a listing. */
export function filters(options: RunFilter & Pick<RunListOptions, "after">): { where: string; values: Record<string, unknown> } {
  const clauses: string[] = [];
  const values: Record<string, unknown> = {};
  if (options.status) {
    clauses.push("status = @status");
    values.status = options.status;
  }
  if (options.statuses) {
    const names = options.statuses.map((status, index) => {
      values[`status${index}`] = status;
      return `@status${index}`;
    });
    clauses.push(names.length === 0 ? "1 = 0" : `status IN (${names.join(", ")})`);
  }
  if (options.threadId) {
    clauses.push("thread_id = @threadId");
    values.threadId = options.threadId;
  }
  if (options.owner) {
    clauses.push("owner = @owner");
    values.owner = options.owner;
  }
  if (options.interrupt) clauses.push(options.interrupt === "set" ? "interrupt IS NOT NULL" : "interrupt IS NULL");
  if (options.rejected !== undefined) clauses.push(options.rejected ? "stop_reason = 'rejected'" : "(stop_reason IS NULL OR stop_reason <> 'rejected')");
  if (options.updatedSince !== undefined) {
    clauses.push("updated_at >= @updatedSince");
    values.updatedSince = options.updatedSince;
  }
  if (options.after) {
    // A row value, read by both databases as a range of the index (an OR of the two cases is walked from the newest run).
    clauses.push("(updated_at, id) < (@afterAt, @afterId)");
    values.afterAt = options.after.updatedAt;
    values.afterId = options.after.id;
  }
  return { where: clauses.length ? `WHERE ${clauses.join(" AND ")}` : "", values };
}

/** A run to write and the check it is written under. */
export interface RunCreation {
  record: NewRun;
  check: CreateRunOptions["check"];
}
