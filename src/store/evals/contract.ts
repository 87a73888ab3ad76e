import { z } from "zod";
import { rowUpdate } from "../database/update.js";

export const EVAL_STATUSES = ["queued", "running", "completed", "failed", "cancelled"] as const;
/** queued · running · completed (every case ran; the pass rate says how well) · failed (it could not run) · cancelled. */
export type EvalStatus = (typeof EVAL_STATUSES)[number];

/** An eval as stored: a suite run case by case. The suite and results are the eval layer's JSON. */
export interface EvalRecord {
  id: string;
  /** The API principal that submitted it (null from the CLI). */
  owner: string | null;
  /** The suite's name: its file name, or the name given over HTTP. */
  name: string;
  status: EvalStatus;
  /** The `provider:model` its cases ran on. */
  provider: string;
  total: number;
  passed: number;
  failed: number;
  minPassRate: number;
  concurrency: number;
  suite: unknown;
  results: unknown;
  error: string | null;
  createdAt: number;
  updatedAt: number;
  finishedAt: number | null;
}

const json = z
  .string()
  .nullable()
  .transform((text) => (text === null ? null : (JSON.parse(text) as unknown)));

/** A stored row, validated on the way out. */
export const EvalRow = z
  .object({
    id: z.string(),
    owner: z.string().nullable(),
    name: z.string(),
    status: z.enum(EVAL_STATUSES),
    provider: z.string(),
    total: z.number(),
    passed: z.number(),
    failed: z.number(),
    min_pass_rate: z.number(),
    concurrency: z.number(),
    suite: json,
    results: json,
    error: z.string().nullable(),
    created_at: z.number(),
    updated_at: z.number(),
    finished_at: z.number().nullable(),
  })
  .transform(
    (row): EvalRecord => ({
      id: row.id,
      owner: row.owner,
      name: row.name,
      status: row.status,
      provider: row.provider,
      total: row.total,
      passed: row.passed,
      failed: row.failed,
      minPassRate: row.min_pass_rate,
      concurrency: row.concurrency,
      suite: row.suite,
      results: row.results,
      error: row.error,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
      finishedAt: row.finished_at,
    }),
  );

export type NewEval = Pick<EvalRecord, "id" | "owner" | "name" | "status" | "provider" | "total" | "minPassRate" | "concurrency" | "suite">;
export type EvalPatch = Partial<Pick<EvalRecord, "status" | "passed" | "failed" | "results" | "error" | "finishedAt">>;

export const EVAL_COLUMNS: Record<keyof EvalPatch, string> = {
  status: "status",
  passed: "passed",
  failed: "failed",
  results: "results",
  error: "error",
  finishedAt: "finished_at",
};

/** The evals table: one row per eval, updated as its cases end (SQLite and Postgres). */
export interface EvalStore {
  create(record: NewEval): Promise<EvalRecord>;
  /** Changes an eval; with `ifStatus`, only while it has one of those statuses. Resolves with whether it was changed. */
  update(id: string, patch: EvalPatch, options?: { ifStatus?: readonly EvalStatus[] }): Promise<boolean>;
  get(id: string): Promise<EvalRecord | undefined>;
  /** An owner's evals (every eval when no owner is given), newest first. */
  list(options?: { owner?: string; limit?: number; offset?: number }): Promise<EvalRecord[]>;
  count(options?: { owner?: string }): Promise<number>;
  /** Evals submitted over HTTP that had not finished when their server stopped. */
  listUnsettled(): Promise<EvalRecord[]>;
}

/** The UPDATE of an eval (`@name` placeholders, both dialects). */
export function evalUpdate(id: string, patch: EvalPatch, ifStatus: readonly EvalStatus[] | undefined, now: number): { sql: string; values: Record<string, unknown> } {
  const encode = (key: keyof EvalPatch, value: unknown): unknown => (key === "results" && value !== null ? JSON.stringify(value) : value);
  return rowUpdate({ table: "evals", columns: EVAL_COLUMNS, id, patch, now, ifStatus, encode });
}
