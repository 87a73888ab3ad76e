import { z } from "zod";
import { Budget, type BudgetStop } from "./budget.js";
import { CONVERSATION_LIMITS } from "./conversation.js";
import { LIMITS } from "./limits.js";
import type { BoardMessage } from "./board.js";
import type { Retrieval } from "./memory.js";
import type { ModelIncident } from "./model-incident.js";
import type { SubtaskView } from "./plan.js";
import type { CriticVerdict } from "./review.js";

export const STOP_REASONS = ["completed", "max_iterations", "budget_exhausted", "rejected", "cancelled", "failed"] as const;
export type StopReason = (typeof STOP_REASONS)[number];

export const RUN_STATUSES = ["queued", "running", "interrupted", "completed", "failed", "cancelled"] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/** A task as submitted by a user, validated at every entry point. */
export const TaskText = z
  .string({ error: "the task must be a string" })
  .transform((text) => text.replace(/\r\n?/g, "\n").trim())
  .pipe(
    z
      .string()
      .min(1, { error: "the task is empty" })
      .max(LIMITS.taskMaxChars, { error: `the task is longer than ${LIMITS.taskMaxChars} characters` }),
  );

export const MaxIterations = z
  .number({ error: "max_iterations must be a number" })
  .int({ error: "max_iterations must be a whole number" })
  .min(LIMITS.maxIterationsMin, { error: `max_iterations must be between ${LIMITS.maxIterationsMin} and ${LIMITS.maxIterationsMax}` })
  .max(LIMITS.maxIterationsMax, { error: `max_iterations must be between ${LIMITS.maxIterationsMin} and ${LIMITS.maxIterationsMax}` });

export const RunRequest = z
  .object({
    task: TaskText,
    context: z
      .string()
      .refine((text) => Buffer.byteLength(text, "utf8") <= LIMITS.contextMaxBytes, {
        error: `the context is larger than ${LIMITS.contextMaxBytes / 1024} KB`,
      })
      .optional(),
    maxIterations: MaxIterations.default(LIMITS.maxIterationsDefault),
    approvePlan: z.boolean().default(false),
    approveAnswer: z.boolean().default(false),
    threadId: z
      .string()
      .regex(/^[A-Za-z0-9._:-]{1,128}$/, { error: "a thread id is 1-128 letters, digits, '.', '_', ':' or '-'" })
      .optional(),
    concurrency: z.number().int().min(1).max(64).default(LIMITS.subtaskConcurrency),
    /** Limits on model calls, tokens, cost and wall time; the run stops with `budget_exhausted` at the first one reached. */
    budget: Budget.optional(),
    mapConcurrency: z
      .number({ error: "map concurrency must be a number" })
      .int({ error: "map concurrency must be a whole number" })
      .min(1, { error: `map concurrency must be between 1 and ${LIMITS.mapConcurrencyMax}` })
      .max(LIMITS.mapConcurrencyMax, { error: `map concurrency must be between 1 and ${LIMITS.mapConcurrencyMax}` })
      .default(LIMITS.mapConcurrency),
    promptBudget: z
      .number({ error: "the prompt budget must be a number" })
      .int({ error: "the prompt budget must be a whole number of tokens" })
      .min(LIMITS.promptTokenBudgetMin, { error: `the prompt budget must be between ${LIMITS.promptTokenBudgetMin} and ${LIMITS.promptTokenBudgetMax} tokens` })
      .max(LIMITS.promptTokenBudgetMax, { error: `the prompt budget must be between ${LIMITS.promptTokenBudgetMin} and ${LIMITS.promptTokenBudgetMax} tokens` })
      .default(LIMITS.promptTokenBudget),
    /** The tools the run may use (all registered tools when absent); unknown names are refused. */
    tools: z.array(z.string().min(1).max(64)).max(100).optional(),
    /** Reviewers on the critic's panel: their verdicts are combined by vote (1: a single critic). */
    reviewers: z
      .number({ error: "reviewers must be a number" })
      .int({ error: "reviewers must be a whole number" })
      .min(1, { error: `reviewers must be between 1 and ${LIMITS.reviewersMax}` })
      .max(LIMITS.reviewersMax, { error: `reviewers must be between 1 and ${LIMITS.reviewersMax}` })
      .default(1),
    /** Prompt tokens the thread's earlier turns may take in the planner's prompt (0: none; default from the config, else 2,000). */
    historyBudget: z
      .number({ error: "the history budget must be a number" })
      .int({ error: "the history budget must be a whole number of tokens" })
      .min(0, { error: `the history budget must be between 0 and ${CONVERSATION_LIMITS.historyBudgetMax} tokens` })
      .max(CONVERSATION_LIMITS.historyBudgetMax, { error: `the history budget must be between 0 and ${CONVERSATION_LIMITS.historyBudgetMax} tokens` })
      .optional(),
  })
  .strict();
export type RunRequest = z.infer<typeof RunRequest>;
export type RunRequestInput = z.input<typeof RunRequest>;

/** How a person answers an interrupt. */
export const ResumeDecision = z.discriminatedUnion("decision", [
  z.object({ decision: z.literal("approve") }),
  z.object({ decision: z.literal("reject"), feedback: z.string().max(LIMITS.contextMaxBytes).optional() }),
  z.object({ decision: z.literal("answer"), answer: z.string().min(1).max(LIMITS.contextMaxBytes) }),
  z.object({ decision: z.literal("edit"), answer: z.string().min(1).optional(), plan: z.array(z.unknown()).optional() }),
  z.object({ decision: z.literal("continue") }),
]);
export type ResumeDecision = z.infer<typeof ResumeDecision>;

export interface RunMetrics {
  llmCalls: number;
  toolCalls: number;
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
  reflectionCount: number;
  nodeVisits: number;
  durationMs: number;
}

export function emptyMetrics(): RunMetrics {
  return {
    llmCalls: 0,
    toolCalls: 0,
    promptTokens: 0,
    completionTokens: 0,
    costUsd: 0,
    reflectionCount: 0,
    nodeVisits: 0,
    durationMs: 0,
  };
}

export type InterruptKind = "plan-approval" | "answer-approval" | "question" | "tool-approval";

export interface InterruptInfo {
  kind: InterruptKind;
  payload: Record<string, unknown>;
}

export interface ToolCallRecord {
  subtaskId?: string;
  agent?: string;
  tool: string;
  args: string;
  ok: boolean;
  preview: string;
  durationMs: number;
  at: number;
  /** The untrusted sources of its output, when it has any (docs/trust.md). */
  untrusted?: string;
}

/** The decision trace the synthesizer's answer comes with. Built by code from the state; no chain-of-thought. */
export interface DecisionTrace {
  plan: SubtaskView[];
  reviews: CriticVerdict[];
  nodes: string[];
  toolCalls: ToolCallRecord[];
  llmCalls: number;
  toolCallCount: number;
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
  /** The `provider:model` that served each role. */
  models: Record<string, string>;
  /** Model calls retried, and fallbacks to the next model of a chain. */
  modelIncidents: ModelIncident[];
  /** The limit that stopped the run, when a budget did. */
  budget: BudgetStop | null;
  /** The subtasks that did not succeed, and why: the run is `completed` only when this is empty. */
  unfinished: UnfinishedSubtask[];
  /** Dependencies the plan check added, so subtasks that use the same workspace path run in order. */
  planNotes: string[];
  /** The messages agents posted on the run's shared board. */
  board: BoardMessage[];
  knownIssues: string[];
  /** The long-term memories recalled for the planner (ids and texts; `untrusted`: the sources of one saved from untrusted data, which the planner saw by id only), how, or why they could not be read; null without long-term memory. */
  memories?: { retrieval: Retrieval | null; items: Array<{ id: string; text: string; score: number; untrusted?: string }>; error?: string } | null;
}

/** A subtask that did not succeed, as the trace names it. */
export interface UnfinishedSubtask {
  id: string;
  label: string;
  status: SubtaskView["status"];
  failureKind?: SubtaskView["failureKind"];
  error?: string;
}

/** The `--json` result of `troupe run` and `troupe resume` (DESIGN.md). */
export interface RunResult {
  runId: string;
  threadId: string;
  status: Extract<RunStatus, "completed" | "interrupted" | "failed" | "cancelled">;
  stopReason: StopReason | null;
  answer: string | null;
  interrupt?: InterruptInfo;
  plan: SubtaskView[];
  metrics: RunMetrics;
  trace: DecisionTrace;
  error?: string;
}

/**
 * The status of a finished run (exit codes: 0 completed, 1 failed): `completed` when it stopped
 * completed, or when a budget stopped it after all its work was done and reviewed (`workDone`:
 * every subtask succeeded and the last review passed); `cancelled` when cancelled; `failed`
 * otherwise — a failure, a rejection, or `max_iterations` / `budget_exhausted` with work not done.
 */
export function runStatusOf(stopReason: StopReason, workDone: boolean): RunResult["status"] {
  switch (stopReason) {
    case "completed":
      return "completed";
    case "cancelled":
      return "cancelled";
    case "budget_exhausted":
      return workDone ? "completed" : "failed";
    default:
      return "failed";
  }
}
