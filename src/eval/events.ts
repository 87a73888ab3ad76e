import type { EvalStatus } from "../store/index.js";
import type { CaseResult } from "./results.js";

/** A case's verdict as progress reports it (the whole result is in the eval's results). */
export type CaseSummary = Pick<CaseResult, "id" | "passed" | "status" | "failures" | "runId" | "durationMs"> & {
  llmCalls: number;
  tokens: number;
  costUsd: number;
  judged: boolean | null;
};

/**
 * What an eval reports while it goes, discriminated by `type` (noun-verb, like a run's events):
 * the CLI prints them on stderr, the server stores and streams them.
 */
export type EvalEvent =
  | { type: "eval-start"; evalId: string; suite: string; total: number; provider: string; concurrency: number; mode: "live" | "record" | "replay" }
  | { type: "case-start"; caseId: string; index: number; runId: string; threadId: string }
  | { type: "case-end"; index: number; result: CaseSummary; done: number; passing: number; failing: number; total: number }
  | { type: "eval-end"; status: EvalStatus; total: number; passed: number; failed: number; passRate: number; meetsMinPassRate: boolean; error?: string };

export type EvalEventType = EvalEvent["type"];

/** An eval event as stored and streamed: numbered per eval, with a timestamp. */
export type StoredEvalEvent = EvalEvent & { seq: number; at: number; evalId: string };

export function caseSummary(result: CaseResult): CaseSummary {
  return {
    id: result.id,
    passed: result.passed,
    status: result.status,
    failures: result.failures,
    runId: result.runId,
    durationMs: result.durationMs,
    llmCalls: result.metrics.llmCalls,
    tokens: result.metrics.promptTokens + result.metrics.completionTokens,
    costUsd: result.metrics.costUsd,
    judged: result.judge ? result.judge.judged : null,
  };
}
