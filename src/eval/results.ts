import { z } from "zod";
import type { RunMetrics, RunResult } from "../core/run.js";
import type { EvalStatus } from "../store/index.js";

/** An expectation a case did not meet: which one (`status`, `answer_includes`, `files`, `judge`, `replay`, `run`…), and how. */
export interface Failure {
  expectation: string;
  message: string;
}

/** What the judge made of a case's answer; `judged` is false when no model could judge it (the offline model never does). */
export interface JudgeOutcome {
  judged: boolean;
  rubric: string;
  minScore: number;
  score?: number;
  reason: string;
  passed?: boolean;
  /** The `provider:model` that judged. */
  model?: string;
  usage?: JudgeUsage;
}

export interface JudgeUsage {
  llmCalls: number;
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
}

/** One case's verdict. */
export interface CaseResult {
  id: string;
  task: string;
  passed: boolean;
  /** The run's status, or `error` when it could not run at all. */
  status: RunResult["status"] | "error";
  stopReason: string | null;
  failures: Failure[];
  /** The kept run (`troupe runs show <runId>`); null when it could not start. */
  runId: string | null;
  threadId: string | null;
  answer: string | null;
  metrics: RunMetrics;
  judge?: JudgeOutcome;
  /** The case's own workspace, as it was left. */
  workspace: string;
  durationMs: number;
}

export interface EvalMetrics {
  llmCalls: number;
  toolCalls: number;
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
  /** Wall time of the whole eval. */
  durationMs: number;
  /** The judge's calls, counted apart from the runs'. */
  judge: JudgeUsage;
}

/** `troupe eval --json` (and `--out`): the whole eval. */
export interface EvalResults {
  evalId: string;
  suite: string;
  /** The worker's `provider:model` (every role's is in `models`). */
  provider: string;
  models: Record<string, string>;
  /** live, or record / replay with cassettes. */
  mode: "live" | "record" | "replay";
  status: EvalStatus;
  total: number;
  passed: number;
  failed: number;
  /** passed / total, 0–1. */
  passRate: number;
  minPassRate: number;
  meetsMinPassRate: boolean;
  /** Judge expectations judged by a model, and those that could not be (the offline model). */
  judged: number;
  notJudged: number;
  cases: CaseResult[];
  metrics: EvalMetrics;
  startedAt: string;
  finishedAt: string;
}

/** The totals of some run metrics. */
export function sumMetrics(items: Array<Pick<RunMetrics, "llmCalls" | "toolCalls" | "promptTokens" | "completionTokens" | "costUsd">>): Omit<EvalMetrics, "durationMs" | "judge"> {
  const total = { llmCalls: 0, toolCalls: 0, promptTokens: 0, completionTokens: 0, costUsd: 0 };
  for (const item of items) {
    total.llmCalls += item.llmCalls;
    total.toolCalls += item.toolCalls;
    total.promptTokens += item.promptTokens;
    total.completionTokens += item.completionTokens;
    total.costUsd += item.costUsd;
  }
  return total;
}

/**
 * An earlier results file as `--compare` reads it: what a comparison needs, everything else
 * ignored, so a file from an older troupe (or trimmed by hand) still compares.
 */
export const EarlierResults = z.looseObject({
  suite: z.string().optional(),
  provider: z.string().optional(),
  passRate: z.number().min(0).max(1),
  cases: z.array(
    z.looseObject({
      id: z.string(),
      passed: z.boolean(),
      metrics: z.looseObject({ promptTokens: z.number(), completionTokens: z.number(), costUsd: z.number() }).optional(),
    }),
  ),
});
export type EarlierResults = z.infer<typeof EarlierResults>;
