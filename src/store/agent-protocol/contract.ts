import { z } from "zod";
import type { RunStatus, StopReason } from "../../core/run.js";

/**
 * What the Agent Protocol (src/server/agent-protocol/) keeps beside troupe's runs: the threads a
 * key made through it (POST /threads, or a run on a new thread) with their metadata, and the
 * metadata and multitask strategy of the runs made through it. A thread is kept by its key
 * (core/thread-key.ts); a thread with runs exists without a row here (it was made by the REST
 * API, MCP, A2A or a schedule), so a key's threads are the union of both, listed and counted in
 * one query. Rows go with the thread's last run, or the run (retention).
 */

/** A thread's status as the protocol names it, from its latest run: none or finished → idle, queued or running → busy, waiting for a person → interrupted, failed → error. */
export const AGENT_THREAD_STATUSES = ["idle", "busy", "interrupted", "error"] as const;
export type AgentThreadStatus = (typeof AGENT_THREAD_STATUSES)[number];

export const AGENT_THREAD_SORTS = ["thread_id", "status", "created_at", "updated_at", "state_updated_at"] as const;
export type AgentThreadSort = (typeof AGENT_THREAD_SORTS)[number];

/** A thread as the listing reads it. */
export interface AgentThread {
  /** The thread's key (core/thread-key.ts). */
  threadId: string;
  /** Its metadata; null for a thread without a row (made outside the protocol). */
  metadata: Record<string, unknown> | null;
  createdAt: number;
  /** The later of its row's change and its runs' last change. */
  updatedAt: number;
  status: AgentThreadStatus;
}

/** Which of an owner's threads, in which order. */
export interface AgentThreadQuery {
  owner: string;
  /** Only these threads (keys). */
  threadIds?: readonly string[];
  /** Each key's value equal (JSON); a thread without a row has `defaultMetadata`. */
  metadata?: Record<string, unknown>;
  /** The metadata a thread without a row is listed with. */
  defaultMetadata: Record<string, unknown>;
  status?: AgentThreadStatus;
  sortBy: AgentThreadSort;
  sortOrder: "asc" | "desc";
  limit: number;
  offset: number;
}

/** A run of a thread as a conversation's turn: its task and what came of it. */
export interface AgentTurn {
  runId: string;
  threadId: string;
  task: string;
  answer: string | null;
  status: RunStatus;
  stopReason: StopReason | null;
  createdAt: number;
}

/** What the protocol kept of a run it made. */
export interface AgentRunInfo {
  metadata: Record<string, unknown>;
  multitaskStrategy: string | null;
}

export interface AgentProtocolStore {
  /** Adds a thread's row; false (and nothing changed) when the thread has one. */
  addThread(thread: { threadId: string; owner: string; metadata: Record<string, unknown>; now: number }): Promise<boolean>;
  /** A thread's row. */
  thread(threadId: string): Promise<{ owner: string; metadata: Record<string, unknown>; createdAt: number; updatedAt: number } | undefined>;
  /** Merges keys into a thread's metadata (its row made when missing, with `createdAt`); returns the metadata now. */
  mergeMetadata(thread: { threadId: string; owner: string; metadata: Record<string, unknown>; now: number; createdAt: number }): Promise<Record<string, unknown>>;
  /** Removes a thread's row; whether there was one. */
  deleteThread(threadId: string): Promise<boolean>;
  /** An owner's threads: those with a row and those with runs, filtered, sorted and paged. */
  threads(query: AgentThreadQuery): Promise<AgentThread[]>;
  countThreads(query: Omit<AgentThreadQuery, "sortBy" | "sortOrder" | "limit" | "offset">): Promise<number>;
  /** The last `perThread` runs of each thread, oldest first within a thread. */
  turns(threadIds: readonly string[], perThread: number): Promise<AgentTurn[]>;
  /** Keeps what a run made through the protocol was made with. */
  addRun(run: { runId: string; owner: string; metadata: Record<string, unknown>; multitaskStrategy: string | null; now: number }): Promise<void>;
  runs(runIds: readonly string[]): Promise<Map<string, AgentRunInfo>>;
}

/** The status of a thread from its latest run, in SQL (alias `r`), for both dialects. */
export const THREAD_STATUS_SQL = `CASE
  WHEN r.status IS NULL THEN 'idle'
  WHEN r.status IN ('queued', 'running') THEN 'busy'
  WHEN r.status = 'interrupted' AND r.suspended IS NOT NULL THEN 'busy'
  WHEN r.status = 'interrupted' THEN 'interrupted'
  WHEN r.status = 'failed' THEN 'error'
  ELSE 'idle' END`;

/** The ORDER BY of a listing: the sort asked for, then the key, so pages never overlap. */
export function threadOrder(sortBy: AgentThreadSort, sortOrder: "asc" | "desc"): string {
  const column = { thread_id: "thread_id", status: "status", created_at: "created_at", updated_at: "updated_at", state_updated_at: "updated_at" }[sortBy];
  const direction = sortOrder === "asc" ? "ASC" : "DESC";
  return column === "thread_id" ? `thread_id ${direction}` : `${column} ${direction}, thread_id ${direction}`;
}

export const AgentThreadRow = z
  .object({
    thread_id: z.string(),
    metadata: z.union([z.string(), z.record(z.string(), z.unknown())]).nullable(),
    created_at: z.number(),
    updated_at: z.number(),
    status: z.enum(AGENT_THREAD_STATUSES),
  })
  .transform(
    (row): AgentThread => ({
      threadId: row.thread_id,
      metadata: row.metadata === null ? null : typeof row.metadata === "string" ? (JSON.parse(row.metadata) as Record<string, unknown>) : row.metadata,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
      status: row.status,
    }),
  );

export const AgentTurnRow = z
  .object({ id: z.string(), thread_id: z.string(), task: z.string(), answer: z.string().nullable(), status: z.string(), stop_reason: z.string().nullable(), created_at: z.number() })
  .transform(
    (row): AgentTurn => ({
      runId: row.id,
      threadId: row.thread_id,
      task: row.task,
      answer: row.answer,
      status: row.status as RunStatus,
      stopReason: row.stop_reason as StopReason | null,
      createdAt: row.created_at,
    }),
  );

/** A JSON object read back from either database (SQLite text, Postgres JSONB). */
export function jsonObject(value: unknown): Record<string, unknown> {
  if (typeof value === "string") return JSON.parse(value) as Record<string, unknown>;
  return (value ?? {}) as Record<string, unknown>;
}
