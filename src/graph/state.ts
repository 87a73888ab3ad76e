import { Annotation, Overwrite } from "@langchain/langgraph";
import { type BoardMessage, mergeBoard } from "../core/board.js";
import type { BudgetStop } from "../core/budget.js";
import { type Conversation, CONVERSATION_LIMITS, emptyConversation } from "../core/conversation.js";
import type { Retrieval } from "../core/memory.js";
import type { ModelIncident } from "../core/model-incident.js";
import { LIMITS } from "../core/limits.js";
import type { PlannedSubtask, SubtaskResult } from "../core/plan.js";
import type { CriticVerdict } from "../core/review.js";
import type { ReviewDecision, ReviewMode } from "../core/review-mode.js";
import { type AnswerFormat, type AnswerSource, emptyMetrics, type RunMetrics, type StopReason, type ToolCallRecord } from "../core/run.js";

/** Per-run settings, fixed at intake. */
export interface RunSettings {
  maxIterations: number;
  approvePlan: boolean;
  approveAnswer: boolean;
  maxWorkerSteps: number;
  maxSubtasks: number;
  /** The `provider:model` serving each role, for the trace. */
  models?: Record<string, string>;
  /** Items of one mapped subtask run at once. */
  mapConcurrency: number;
  /** Prompt tokens one model call may use. */
  promptBudget: number;
  /** The tools this run may use (a request's `tools`); null or absent: every registered tool. */
  allowedTools?: string[] | null;
  /** Reviewers on the critic's panel (absent: 1, a single critic). */
  reviewers?: number;
  /** The share a panel's vote needs (absent: LIMITS.consensusThreshold). */
  consensusThreshold?: number;
  /** Prompt tokens the thread's earlier turns may take in the planner's prompt (0: none). */
  historyBudget?: number;
  /** The long-term memory namespace of the run's owner (null: no long-term memory). */
  memoryNamespace?: string[] | null;
  /** A JSON Schema the answer must match (the run's `outputSchema`). */
  outputSchema?: Record<string, unknown> | null;
  /** When the critic reviews the outcomes (absent: auto). */
  review?: ReviewMode;
}

/** Settings of a run whose checkpoint predates a setting get its default. */
export function settingsWithDefaults(settings: Partial<RunSettings>): RunSettings {
  return {
    maxIterations: settings.maxIterations ?? LIMITS.maxIterationsDefault,
    approvePlan: settings.approvePlan ?? false,
    approveAnswer: settings.approveAnswer ?? false,
    maxWorkerSteps: settings.maxWorkerSteps ?? LIMITS.workerMaxSteps,
    maxSubtasks: settings.maxSubtasks ?? LIMITS.maxSubtasks,
    mapConcurrency: settings.mapConcurrency ?? LIMITS.mapConcurrency,
    promptBudget: settings.promptBudget ?? LIMITS.promptTokenBudget,
    historyBudget: settings.historyBudget ?? CONVERSATION_LIMITS.historyBudget,
    ...(settings.memoryNamespace ? { memoryNamespace: settings.memoryNamespace } : {}),
    ...(settings.models ? { models: settings.models } : {}),
    ...(settings.allowedTools ? { allowedTools: settings.allowedTools } : {}),
    ...(settings.reviewers !== undefined && settings.reviewers > 1 ? { reviewers: settings.reviewers } : {}),
    ...(settings.consensusThreshold !== undefined ? { consensusThreshold: settings.consensusThreshold } : {}),
    ...(settings.outputSchema ? { outputSchema: settings.outputSchema } : {}),
    ...(settings.review ? { review: settings.review } : {}),
  };
}

/** The long-term memories given to the planner for a run: ids and bounded texts, and how they were found. */
export interface RecalledMemories {
  retrieval: Retrieval | null;
  /** `untrusted`: the fact's sources, when it was saved from untrusted content (the planner sees only its id). */
  items: Array<{ id: string; text: string; score: number; untrusted?: string }>;
  /** Why none could be read (a damaged store): shown in the trace, never silently empty. */
  error?: string;
  note?: string;
}

export type PlanStatus = "none" | "invalid" | "question" | "ready" | "approved";
export type AnswerStatus = "none" | "draft" | "approved";

/** The nodes the coordinator routes to. */
export type Route = "planner" | "approve_plan" | "ask_human" | "execute" | "critic" | "synthesizer" | "approve_answer" | "finalize";

const replace = <T>(fallback: () => T) => ({ reducer: (_current: T, next: T) => next, default: fallback });

const append = <T>() => ({
  reducer: (current: T[], next: T[] | Overwrite<T[]>) => (Overwrite.isInstance(next) ? next.value : [...current, ...next]),
  default: (): T[] => [],
});

function mergeResults(current: Record<string, SubtaskResult>, next: Record<string, SubtaskResult> | Overwrite<Record<string, SubtaskResult>>) {
  if (Overwrite.isInstance(next)) return next.value;
  return { ...current, ...next };
}

function addMetrics(current: RunMetrics, next: Partial<RunMetrics> | Overwrite<RunMetrics>): RunMetrics {
  if (Overwrite.isInstance(next)) return next.value;
  const sum = { ...current };
  for (const [key, value] of Object.entries(next) as Array<[keyof RunMetrics, number]>) {
    if (typeof value === "number") sum[key] = (sum[key] ?? 0) + value;
  }
  return sum;
}

/**
 * The graph state. It stays small: subtask results are handles into the stash with bounded
 * summaries, tool calls keep previews, and counters are summed by reducers so parallel workers
 * can write side by side.
 */
export const TroupeState = Annotation.Root({
  runId: Annotation<string>(replace(() => "")),
  task: Annotation<string>(replace(() => "")),
  // Absent values are null, never undefined: LangGraph rebuilds a channel written with undefined
  // by reading back through the thread's checkpoints.
  context: Annotation<string | null>(replace<string | null>(() => null)),
  settings: Annotation<RunSettings>(replace<RunSettings>(() => settingsWithDefaults({}))),
  startedAt: Annotation<number>(replace(() => 0)),
  /**
   * The thread's conversation: its earlier runs as bounded turns (tasks, answers, handles to their
   * results) and a running summary of the turns trimmed away. Unlike the rest of the state it
   * carries over from one run on the thread to the next (intake trims it, finalize adds the run).
   */
  conversation: Annotation<Conversation>(replace<Conversation>(emptyConversation)),
  /** The long-term memories recalled for this run's planner (set by intake). */
  recalled: Annotation<RecalledMemories | null>(replace<RecalledMemories | null>(() => null)),

  plan: Annotation<PlannedSubtask[]>(replace<PlannedSubtask[]>(() => [])),
  planStatus: Annotation<PlanStatus>(replace<PlanStatus>(() => "none")),
  planAttempts: Annotation<number>(replace(() => 0)),
  planErrors: Annotation<string[]>(replace<string[]>(() => [])),
  /** What the planner should take into account: a person's feedback, the critic's issues. */
  planFeedback: Annotation<string[]>(replace<string[]>(() => [])),
  /** What the plan check changed: dependencies added so subtasks that share a workspace path run in order. */
  planNotes: Annotation<string[]>(replace<string[]>(() => [])),
  /** The plan's answer template (src/core/answer-template.ts), when the planner gave one that reads for its steps. */
  planAnswer: Annotation<string | null>(replace<string | null>(() => null)),
  question: Annotation<string | null>(replace<string | null>(() => null)),
  humanAnswers: Annotation<string[], string[] | Overwrite<string[]>>(append<string>()),
  rejections: Annotation<number>(replace(() => 0)),

  results: Annotation<Record<string, SubtaskResult>, Record<string, SubtaskResult> | Overwrite<Record<string, SubtaskResult>>>({
    reducer: mergeResults,
    default: () => ({}),
  }),
  /** Feedback for subtasks sent back by the critic, by id. */
  redoFeedback: Annotation<Record<string, string[]>>(replace<Record<string, string[]>>(() => ({}))),
  needsReview: Annotation<boolean>(replace(() => false)),
  reviews: Annotation<CriticVerdict[], CriticVerdict[] | Overwrite<CriticVerdict[]>>(append<CriticVerdict>()),
  /** Each review round's decision: the critic ran, or was skipped (the run's `review` mode), and why. */
  reviewDecisions: Annotation<ReviewDecision[], ReviewDecision[] | Overwrite<ReviewDecision[]>>(append<ReviewDecision>()),

  answer: Annotation<string | null>(replace<string | null>(() => null)),
  /** How the answer is meant to be read, by who wrote it (a language model: Markdown; rules or code: text). */
  answerFormat: Annotation<AnswerFormat>(replace<AnswerFormat>(() => "markdown")),
  /** The answer as JSON, when the run has an output schema. */
  output: Annotation<unknown>(replace<unknown>(() => null)),
  answerStatus: Annotation<AnswerStatus>(replace<AnswerStatus>(() => "none")),
  /** Who wrote the answer, and why (the trace's `answerSource`). */
  answerSource: Annotation<AnswerSource | null>(replace<AnswerSource | null>(() => null)),
  answerFeedback: Annotation<string[]>(replace<string[]>(() => [])),
  stopReason: Annotation<StopReason | null>(replace<StopReason | null>(() => null)),
  failure: Annotation<string | null>(replace<string | null>(() => null)),
  finished: Annotation<boolean>(replace(() => false)),
  /** The budget limit that stopped the run, when one did. */
  budgetStop: Annotation<BudgetStop | null>(replace<BudgetStop | null>(() => null)),

  nodes: Annotation<string[], string[] | Overwrite<string[]>>(append<string>()),
  toolCalls: Annotation<ToolCallRecord[], ToolCallRecord[] | Overwrite<ToolCallRecord[]>>(append<ToolCallRecord>()),
  /** The run's shared board: what agents posted (merged by id, bounded; reset at intake). */
  board: Annotation<BoardMessage[], BoardMessage[] | Overwrite<BoardMessage[]>>({
    reducer: (current: BoardMessage[], next: BoardMessage[] | Overwrite<BoardMessage[]>) => (Overwrite.isInstance(next) ? next.value : mergeBoard(current, next)),
    default: () => [],
  }),
  /** Model calls retried and fallbacks used, for the trace. */
  modelIncidents: Annotation<ModelIncident[], ModelIncident[] | Overwrite<ModelIncident[]>>(append<ModelIncident>()),
  metrics: Annotation<RunMetrics, Partial<RunMetrics> | Overwrite<RunMetrics>>({
    reducer: addMetrics,
    default: emptyMetrics,
  }),
});

export type State = typeof TroupeState.State;
export type Update = typeof TroupeState.Update;

/**
 * What a run has found out after its plan — a question, reviews, an answer, how it stopped — as a
 * run starts with it: empty. A new run on the thread (intake) and a fork (fork-state) both start so.
 */
export function emptyOutcome(): Update {
  return {
    planErrors: [],
    question: null,
    redoFeedback: {},
    needsReview: false,
    reviews: new Overwrite([]),
    reviewDecisions: new Overwrite([]),
    answer: null,
    answerFormat: "markdown",
    answerStatus: "none",
    answerSource: null,
    answerFeedback: [],
    stopReason: null,
    failure: null,
    finished: false,
    budgetStop: null,
    modelIncidents: new Overwrite([]),
  };
}

/**
 * The state of a thread before its first checkpoint: every channel's default. A drive stopped
 * before the graph wrote anything (a cancel that came as the run started) reads an empty snapshot.
 */
export function blankState(): State {
  const values: Record<string, unknown> = {};
  for (const [key, channel] of Object.entries(TroupeState.spec)) {
    try {
      values[key] = channel.fromCheckpoint(undefined).get();
    } catch {
      // a channel without a default stays absent
    }
  }
  return values as State;
}
