import { z } from "zod";
import { truncate } from "./text.js";

/**
 * A thread is a conversation: each run on it is a turn, and a later run sees the earlier turns —
 * the tasks, the answers and handles to their results in the stash — so "it", "that file" and
 * "the total" can be resolved. The graph state keeps the turns (bounded, never the data) and a
 * short running summary of the turns trimmed away to keep the history within its token budget.
 */

export const CONVERSATION_LIMITS = {
  /** Prompt tokens the history given to the planner may take (default; `--history-budget`). */
  historyBudget: 2_000,
  historyBudgetMax: 100_000,
  /** Tokens of the running summary at most (and never more than a quarter of the budget). */
  summaryMaxTokens: 300,
  /** Characters kept of a turn's task, answer, result label and result summary. */
  taskChars: 400,
  answerChars: 300,
  labelChars: 120,
  summaryChars: 160,
  valueChars: 80,
  /** Results and files kept per turn (the last ones). */
  resultsPerTurn: 8,
  filesPerTurn: 8,
  /** Turns kept in the state at most, whatever their size (the budget usually trims sooner). */
  maxTurns: 200,
  /** Characters of one line of the running summary. */
  digestChars: 140,
} as const;

/** A result of an earlier turn: its handle in the stash and a bounded description of it. */
export const TurnResult = z.object({
  subtask: z.string(),
  label: z.string(),
  /** `stash:<run>/<subtask>`: the thread_result tool reads it back. */
  handle: z.string(),
  summary: z.string(),
  bytes: z.number(),
  /** The value's shape (`number`, `string`, `object {content, …}`). */
  shape: z.string().optional(),
  /** A short scalar value as text (`5`), when it is one. */
  value: z.string().optional(),
  /** The subtask wrote files: its result reports a write, not a value a follow-up means by "it". */
  wrote: z.boolean().optional(),
  /** The result's untrusted sources: its summary and value are never shown to a planner, only its handle. */
  untrusted: z.string().optional(),
});
export type TurnResult = z.infer<typeof TurnResult>;

/** One run on the thread. */
export const Turn = z.object({
  run: z.string(),
  task: z.string(),
  /** How the run ended: its status (`completed`, `failed`, `cancelled`). */
  status: z.string(),
  answer: z.string().nullable(),
  /** The answer was written from untrusted results: a planner is not shown it. */
  answerUntrusted: z.boolean().optional(),
  results: z.array(TurnResult),
  /** Workspace files the run wrote, the last last. */
  files: z.array(z.string()),
  at: z.number(),
});
export type Turn = z.infer<typeof Turn>;

/** The running summary of the turns trimmed away: one line each, the oldest folded into a count. */
export const ConversationSummary = z.object({
  lines: z.array(z.string()),
  /** Trimmed turns no longer listed line by line. */
  omitted: z.number().int().min(0),
});
export type ConversationSummary = z.infer<typeof ConversationSummary>;

/** The conversation channel of the graph state. */
export const Conversation = z.object({
  turns: z.array(Turn),
  summary: ConversationSummary,
  /** How many turns were trimmed away (the first kept turn is number trimmed + 1). */
  trimmed: z.number().int().min(0),
});
export type Conversation = z.infer<typeof Conversation>;

export function emptyConversation(): Conversation {
  return { turns: [], summary: { lines: [], omitted: 0 }, trimmed: 0 };
}

/** The summary as one text, or null when nothing was trimmed. */
export function summaryText(summary: ConversationSummary): string | null {
  if (summary.lines.length === 0 && summary.omitted === 0) return null;
  const head = summary.omitted > 0 ? `${summary.omitted} earlier turn${summary.omitted === 1 ? "" : "s"} not listed` : "";
  return [head, ...summary.lines].filter(Boolean).join("; ");
}

/** What a planner is shown instead of untrusted text: that it exists, and how to reach it. */
export const WITHHELD = "[untrusted data: not shown to the planner; a worker can take it by its handle]";

/** One line of the running summary for a trimmed turn: its number, task and what came of it. */
export function digestOf(turn: Turn, number: number): string {
  const last = turn.results.at(-1);
  const lastText = last === undefined ? undefined : last.untrusted !== undefined ? "(untrusted data)" : last.summary;
  const outcome = turn.status !== "completed" ? turn.status : (lastText ?? (turn.answerUntrusted ? "(an answer from untrusted data)" : turn.answer) ?? "done");
  const files = turn.files.length > 0 ? ` (wrote ${turn.files.slice(-2).join(", ")})` : "";
  const line = `#${number} "${truncate(oneLine(turn.task), 50)}" → ${truncate(oneLine(outcome), 50)}${files}`;
  return truncate(line, CONVERSATION_LIMITS.digestChars);
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** A turn as the planner's prompt shows it (the JSON of one element of `turns`). */
export interface TurnView {
  turn: number;
  run: string;
  task: string;
  status: string;
  answer?: string;
  results: Array<Omit<TurnResult, "bytes"> & { bytes: number }>;
  files?: string[];
}

/** What the `## Conversation` section holds: the summary of trimmed turns and the turns kept, oldest first. */
export const ConversationView = z.object({
  summary: z.string().nullable().default(null),
  turns: z
    .array(
      z.object({
        turn: z.number(),
        run: z.string(),
        task: z.string(),
        status: z.string(),
        answer: z.string().optional(),
        results: z.array(TurnResult).default([]),
        files: z.array(z.string()).default([]),
      }),
    )
    .default([]),
});
export type ConversationView = z.infer<typeof ConversationView>;

/** A kept turn as the prompt shows it. */
export function turnView(turn: Turn, number: number): TurnView {
  // Untrusted results are shown by handle, shape and size only: the planner never reads untrusted text.
  const results = turn.results.map((result) => {
    if (result.untrusted === undefined) return result;
    // Not even the sources' names: a URL or a file name is chosen by whoever wrote the data.
    const { value: _value, ...rest } = result;
    return { ...rest, summary: WITHHELD, untrusted: "yes" };
  });
  const view: TurnView = { turn: number, run: turn.run, task: turn.task, status: turn.status, results };
  if (turn.answer) view.answer = turn.answerUntrusted ? WITHHELD : turn.answer;
  if (turn.files.length > 0) view.files = turn.files;
  return view;
}

/** The conversation as the planner's `## Conversation` section body (JSON), or undefined when there is nothing to show. */
export function renderConversation(conversation: Conversation): string | undefined {
  const summary = summaryText(conversation.summary);
  if (conversation.turns.length === 0 && summary === null) return undefined;
  return JSON.stringify({ summary, turns: conversation.turns.map((turn, index) => turnView(turn, conversation.trimmed + index + 1)) });
}

/** Reads a `## Conversation` section back (the offline model does); an unreadable one is an empty conversation. */
export function parseConversation(text: string | undefined): ConversationView {
  if (!text) return { summary: null, turns: [] };
  try {
    const parsed = ConversationView.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : { summary: null, turns: [] };
  } catch {
    return { summary: null, turns: [] };
  }
}

/** Bounds a turn before it goes into the state: text cut, the last results and files kept. */
export function boundedTurn(turn: Turn): Turn {
  const limits = CONVERSATION_LIMITS;
  return {
    run: turn.run,
    task: truncate(turn.task, limits.taskChars),
    status: turn.status,
    answer: turn.answer === null ? null : truncate(turn.answer, limits.answerChars),
    ...(turn.answerUntrusted ? { answerUntrusted: true } : {}),
    results: turn.results.slice(-limits.resultsPerTurn).map((result) => ({
      ...result,
      label: truncate(result.label, limits.labelChars),
      summary: truncate(result.summary, limits.summaryChars),
      ...(result.value !== undefined ? { value: truncate(result.value, limits.valueChars) } : {}),
    })),
    files: turn.files.slice(-limits.filesPerTurn),
    at: turn.at,
  };
}

/** The conversation with a finished run's turn added (a run already recorded is replaced, not added twice). */
export function withTurn(conversation: Conversation, turn: Turn): Conversation {
  const turns = [...conversation.turns.filter((existing) => existing.run !== turn.run), boundedTurn(turn)];
  const overflow = Math.max(0, turns.length - CONVERSATION_LIMITS.maxTurns);
  if (overflow === 0) return { ...conversation, turns };
  const dropped = turns.slice(0, overflow);
  return {
    turns: turns.slice(overflow),
    summary: { lines: conversation.summary.lines, omitted: conversation.summary.omitted + dropped.length },
    trimmed: conversation.trimmed + overflow,
  };
}
