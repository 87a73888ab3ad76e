import { z } from "zod";
import { Budget, type BudgetStop } from "./budget.js";
import { CONVERSATION_LIMITS } from "./conversation.js";
import { LIMITS } from "./limits.js";
import { ElicitationContent } from "./elicitation.js";
import type { BoardMessage } from "./board.js";
import type { Retrieval } from "./memory.js";
import type { ModelIncident } from "./model-incident.js";
import type { SubtaskView } from "./plan.js";
import type { CriticVerdict } from "./review.js";
import type { EvidenceIndex } from "./evidence.js";
import { OnBusy } from "./on-busy.js";
import { type ReviewDecision, ReviewMode, type RouteDecision } from "./review-mode.js";
import { WebhookSpec } from "./webhook.js";

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

/** The largest output schema a run takes (its JSON text), and how deep it may nest. */
export const OUTPUT_SCHEMA_LIMITS = { maxBytes: 64 * 1024, maxDepth: 32 } as const;

function depthOf(value: unknown): number {
  let deepest = 0;
  const stack: Array<{ value: unknown; depth: number }> = [{ value, depth: 1 }];
  while (stack.length > 0) {
    const { value: current, depth } = stack.pop() as { value: unknown; depth: number };
    if (typeof current !== "object" || current === null) continue;
    deepest = Math.max(deepest, depth);
    if (deepest > OUTPUT_SCHEMA_LIMITS.maxDepth) return deepest;
    for (const child of Object.values(current)) stack.push({ value: child, depth: depth + 1 });
  }
  return deepest;
}

/**
 * A JSON Schema the run's answer must match (the synthesizer answers through structured output
 * with it): an object, at most 64 KiB of JSON and 32 levels deep. Whether it compiles is checked
 * where runs are started.
 */
export const OutputSchema = z
  .record(z.string(), z.unknown(), { error: "the output schema must be a JSON Schema object" })
  .refine((schema) => Buffer.byteLength(JSON.stringify(schema), "utf8") <= OUTPUT_SCHEMA_LIMITS.maxBytes, { error: `the output schema is larger than ${OUTPUT_SCHEMA_LIMITS.maxBytes / 1024} KiB` })
  .refine((schema) => depthOf(schema) <= OUTPUT_SCHEMA_LIMITS.maxDepth, { error: `the output schema nests deeper than ${OUTPUT_SCHEMA_LIMITS.maxDepth} levels` });
export type OutputSchema = z.infer<typeof OutputSchema>;

/**
 * What a run is asked: the one list of a run's options. Every front door takes it through
 * core/run-options.ts (schedules) and server/run-request-wire.ts (REST, MCP, A2A, the Agent
 * Protocol, in snake_case), so a field added here is a field of each of them; the order of the
 * fields is the order the OpenAPI document lists them in.
 */
export const RunRequest = z
  .object({
    task: TaskText,
    /** The tools the run may use (all registered tools when absent); unknown names are refused. */
    tools: z.array(z.string().min(1).max(64)).max(100).optional(),
    context: z
      .string()
      .refine((text) => Buffer.byteLength(text, "utf8") <= LIMITS.contextMaxBytes, {
        error: `the context is larger than ${LIMITS.contextMaxBytes / 1024} KB`,
      })
      .optional(),
    maxIterations: MaxIterations.default(LIMITS.maxIterationsDefault),
    approvePlan: z.boolean().default(false),
    approveAnswer: z.boolean().default(false),
    /** Reviewers on the critic's panel: their verdicts are combined by vote (1: a single critic). */
    reviewers: z
      .number({ error: "reviewers must be a number" })
      .int({ error: "reviewers must be a whole number" })
      .min(1, { error: `reviewers must be between 1 and ${LIMITS.reviewersMax}` })
      .max(LIMITS.reviewersMax, { error: `reviewers must be between 1 and ${LIMITS.reviewersMax}` })
      .default(1),
    /** When the critic reviews the outcomes: auto (default from the config, else auto), always or never (core/review-mode.ts). */
    review: ReviewMode.optional(),
    threadId: z
      .string()
      .regex(/^[A-Za-z0-9._:-]{1,128}$/, { error: "a thread id is 1-128 letters, digits, '.', '_', ':' or '-'" })
      .optional(),
    /** Prompt tokens the thread's earlier turns may take in the planner's prompt (0: none; default from the config, else 2,000). */
    historyBudget: z
      .number({ error: "the history budget must be a number" })
      .int({ error: "the history budget must be a whole number of tokens" })
      .min(0, { error: `the history budget must be between 0 and ${CONVERSATION_LIMITS.historyBudgetMax} tokens` })
      .max(CONVERSATION_LIMITS.historyBudgetMax, { error: `the history budget must be between 0 and ${CONVERSATION_LIMITS.historyBudgetMax} tokens` })
      .optional(),
    /** What to do when the thread's run is running or waiting (default enqueue; see core/on-busy.ts). */
    onBusy: OnBusy.optional(),
    /** Where the run's end (and waits for a person) are POSTed, signed (see core/webhook.ts); default from the config's `webhooks.default`. */
    webhook: WebhookSpec.optional(),
    /** A JSON Schema the answer must match: the answer is then JSON (`output`), or the run fails with the validation errors. */
    outputSchema: OutputSchema.optional(),
    /** Limits on model calls, tokens, cost and wall time; the run stops with `budget_exhausted` at the first one reached. */
    budget: Budget.optional(),
    concurrency: z.number().int().min(1).max(64).default(LIMITS.subtaskConcurrency),
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
  /** The answer to a tool server's question (MCP elicitation), checked against its form: made from approve, reject or answer by `elicitationDecision`. */
  z.object({ decision: z.literal("elicitation"), action: z.enum(["accept", "decline", "cancel"]), content: ElicitationContent.optional(), fingerprint: z.string().min(1).max(128) }),
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
  /** Of the prompt tokens, those the providers served from their prompt caches (absent in runs recorded before they were counted). */
  cachedPromptTokens?: number;
  /** Of the prompt tokens, those written to a provider's cache (Anthropic). */
  cacheWriteTokens?: number;
  /** Of the completion tokens, those reasoning models thought with. */
  reasoningTokens?: number;
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
    cachedPromptTokens: 0,
    cacheWriteTokens: 0,
    reasoningTokens: 0,
  };
}

/** A run's tokens in words: prompt (and how much of it a cache served) and completion (and how much was reasoning). */
export function describeTokens(metrics: Pick<RunMetrics, "promptTokens" | "completionTokens" | "cachedPromptTokens" | "reasoningTokens">): string {
  const cached = metrics.cachedPromptTokens ?? 0;
  const reasoning = metrics.reasoningTokens ?? 0;
  const prompt = `${metrics.promptTokens} prompt${cached > 0 ? ` (${cached} cached)` : ""}`;
  return `${prompt} + ${metrics.completionTokens} completion${reasoning > 0 ? ` (${reasoning} reasoning)` : ""}`;
}

/** What a run waits for: an approval of troupe's own, a question of its planner, or a tool server's question (never an approval: see core/elicitation.ts). */
export type InterruptKind = "plan-approval" | "answer-approval" | "question" | "tool-approval" | "mcp-elicitation";

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
  /** How arguments were brought to the types the tool takes (`content: the number 397.8 given as the text "397.8"`). */
  notes?: string[];
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
  /** Of the prompt tokens, those served from the providers' prompt caches. */
  cachedPromptTokens?: number;
  /** Of the completion tokens, those reasoning models thought with. */
  reasoningTokens?: number;
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
  /** Each claim of a research answer and the sources it rests on (seed 002's evidence index); null when no research outcome was used. */
  evidence?: EvidenceIndex | null;
  /** The long-term memories recalled for the planner (ids and texts; `untrusted`: the sources of one saved from untrusted data, which the planner saw by id only), how, or why they could not be read; null without long-term memory. */
  memories?: { retrieval: Retrieval | null; items: Array<{ id: string; text: string; score: number; untrusted?: string }>; error?: string } | null;
  /** Which route the plan took (`fast`: one subtask, whose result is the answer) and why; null before a plan. */
  route?: RouteDecision | null;
  /** Each review round: whether the critic ran or was skipped (the run's `review` mode), and why. */
  reviewDecisions?: ReviewDecision[];
  /** The plan's answer template (src/core/answer-template.ts): the answer stated in advance, for code to fill in; null when the plan gave none. */
  answerTemplate?: string | null;
  /** Who wrote the answer, and why: the plan's template filled by code, the fast route's worker, the synthesizer's model, code, or a person; null before an answer. */
  answerSource?: AnswerSource | null;
}

/**
 * Who wrote a run's answer: `template` (the plan's answer template filled by code from the
 * verified results: no model call), `worker` (the fast route: the one worker's result), `synthesizer`
 * (a model call), or `code` (the best answer so far once the budget ran out, or the results when
 * the synthesizer failed), or `person` (written at the answer's approval).
 */
export interface AnswerSource {
  by: "template" | "worker" | "synthesizer" | "code" | "person";
  /** Why this way (and, when the plan's answer template could not be used, why not). */
  reason: string;
  /** The untrusted sources of results the answer shows as they came (the answer says so too). */
  untrusted?: string;
}

/** A subtask that did not succeed, as the trace names it. */
export interface UnfinishedSubtask {
  id: string;
  label: string;
  status: SubtaskView["status"];
  failureKind?: SubtaskView["failureKind"];
  error?: string;
}

/** The `--json` result of `troupe run` and `troupe resume` (docs/cli.md). */
/**
 * How an answer is meant to be read, by who wrote it: `markdown` (a language model's) or `text`
 * (written by rules or code: the offline model's, a tool's result, the best answer a budget left,
 * JSON) — the console renders the first and shows the second as it is.
 */
export const ANSWER_FORMATS = ["markdown", "text"] as const;
export type AnswerFormat = (typeof ANSWER_FORMATS)[number];

export interface RunResult {
  runId: string;
  threadId: string;
  status: Extract<RunStatus, "completed" | "interrupted" | "failed" | "cancelled">;
  stopReason: StopReason | null;
  answer: string | null;
  /** How the answer is meant to be read (with an answer): Markdown, or plain text. */
  answerFormat?: AnswerFormat;
  /** With an output schema: the answer as JSON, valid against it. */
  output?: unknown;
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
