import type { CriticOutput } from "../../core/review.js";
import { continuation } from "./arithmetic.js";
import { figureChain, parseClause, parseTask } from "./intents.js";
import { keyFor } from "./json-questions.js";

/** A file as the critic's prompt lists it. */
export interface FileLine {
  path: string;
  action: string;
  bytes?: number;
  source?: string;
  sourceBytes?: number;
  identical?: boolean;
  problem?: string;
}

/** A subtask outcome as the critic and synthesizer prompts list it. */
export interface OutcomeLine {
  id: string;
  label: string;
  agent: string;
  status: string;
  attempts?: number;
  dependsOn?: string[];
  summary?: string;
  error?: string;
  failureKind?: string;
  files?: FileLine[];
  /** A mapped subtask's items (counts and a bounded list, failed first). */
  items?: {
    total: number;
    succeeded: number;
    failed: number;
    listed?: Array<{ index: number; status: string; input: string; output?: string; error?: string }>;
    notListed?: number;
  };
  extract?: string;
}

/** A mapped subtask some of whose items failed (it is done, with gaps). */
export function partlyFailed(outcome: OutcomeLine): boolean {
  return outcome.status === "done" && (outcome.items?.failed ?? 0) > 0;
}

const round = (value: number): number => Math.round(value * 100) / 100;

// A worker's failure names the tool's code in parentheses ("calculator failed (invalid_expression): …"), a direct step's leads with it.
/** Failures that come out the same every time: a retry would not change them. */
const DETERMINISTIC =
  /(?:\(|^)(?:invalid_expression|invalid_arguments|invalid_path|not_found|not_text|path_outside_workspace|exists|too_large|unknown_tool|tool_not_allowed|unknown_variable|variable_not_numeric|too_many_variables|variable_too_large)(?:\)|:)|no content to write|no JSON text|has no \w+ tool|matched nothing|not a valid JSONPath|no list of records|no field of the records holds|is not valid JSON|too large to (?:check|query|compute)/;
/** Failures a retry by the same rules cannot change: work beyond the offline model, a person's rejection, no result, a wrong file. */
const FINAL_KINDS = new Set(["unable", "rejected", "refused", "empty", "artifact", "budget"]);

/** What is wrong with a file a subtask wrote, as the prompt shows it, or undefined. */
function fileProblem(file: FileLine): string | undefined {
  if (file.problem) return `${file.path} ${file.problem}`;
  if (file.action !== "written") return undefined;
  if (file.bytes === 0 && (file.sourceBytes ?? 0) > 0) return `${file.path} is empty, but its source ${file.source} has ${file.sourceBytes} bytes`;
  if (file.identical === false) return `${file.path} differs from its source ${file.source}`;
  return undefined;
}

/** A done subtask's result as the prompt shows it: its extract (JSON) when whole, else its summary, parsed when JSON. */
function shownValue(outcome: OutcomeLine): unknown {
  for (const text of [outcome.extract, outcome.summary]) {
    if (text === undefined) continue;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      // not whole JSON: the next, or the text itself
    }
  }
  return outcome.summary;
}

function isNumberLike(value: unknown): boolean {
  return typeof value === "number" || (typeof value === "string" && /^\s*-?\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?\s*$/i.test(value));
}

/**
 * Whether a done subtask's result answers what its label asks, by the planner's own reading of
 * the label: arithmetic on an earlier result must take one ("multiply it by …" with nothing
 * before it computes on nothing), a count or a computation gives a number, and a question for a
 * field of the records gives that field's values, not the records. Empty when it does, or when
 * the rules cannot tell.
 */
function resultProblems(outcome: OutcomeLine): string[] {
  if (outcome.status !== "done" || outcome.items) return [];
  const label = outcome.label;
  const takes = outcome.dependsOn?.length ?? 0;
  if (figureChain(label) && takes < 2) return [`${outcome.id} ("${label}") works on an earlier result and a figure found first, but takes ${takes === 0 ? "neither" : "only one"}`];
  if (continuation(label) && takes === 0) return [`${outcome.id} ("${label}") works on an earlier result, but takes none`];
  const intent = parseClause(label);
  const value = shownValue(outcome);
  if ((intent.kind === "count" || (intent.kind === "compute" && !intent.usesPrevious)) && !isNumberLike(value)) {
    return [`${outcome.id} ("${label}") should give a number, but gave ${JSON.stringify(value)?.slice(0, 80) ?? "nothing"}`];
  }
  if (intent.kind === "query" && !intent.question.count && Array.isArray(value)) {
    const named = intent.question.field ?? intent.question.collection;
    const records = value.filter((item): item is Record<string, unknown> => typeof item === "object" && item !== null && !Array.isArray(item));
    const keys = new Map(records.flatMap((record) => Object.keys(record)).map((key) => [key, null]));
    if (named !== undefined && records.length > 0 && keyFor(keys, named) !== undefined) return [`${outcome.id} ("${label}") was asked for the ${named} but gave whole records`];
  }
  return [];
}

/** The files the task asks to be written, by the same reading of it the planner uses. */
function requestedFiles(task: string): Array<{ path: string; mayBeEmpty: boolean }> {
  return parseTask(task).flatMap((intent) => {
    if (intent.kind === "write") return [{ path: intent.path, mayBeEmpty: intent.content === "" }];
    if (intent.kind === "copy" || intent.kind === "move") return [{ path: intent.to, mayBeEmpty: true }];
    return [];
  });
}

/**
 * The offline critic scores what it can check: failed and skipped subtasks (and why they
 * failed), mapped subtasks with failed items, the files subtasks wrote (gone, changed, empty
 * or different from their source), and the files the task asks for. A failure a retry could
 * change (a timeout, a model error) is sent back, and a partly failed map gets one retry of its
 * failed items; a failure that comes out the same every time (division by zero, a missing
 * file), work only a real model can do, and a call a person rejected are named as issues but
 * not retried.
 */
export function reviewOutcomes(outcomes: OutcomeLine[], task = ""): CriticOutput {
  const total = Math.max(1, outcomes.length);
  const failed = outcomes.filter((outcome) => outcome.status === "failed");
  const skipped = outcomes.filter((outcome) => outcome.status === "skipped");
  const unable = failed.filter((outcome) => outcome.failureKind === "unable");
  const partial = outcomes.filter(partlyFailed);
  // A partly failed map gets one retry of its failed items; after that its gaps are reported, not retried again.
  const retry = partial.filter((outcome) => (outcome.attempts ?? 1) <= 1);
  const itemShare = (outcome: OutcomeLine): number => (outcome.items && outcome.items.total > 0 ? outcome.items.succeeded / outcome.items.total : 0);
  const kept = partial.filter((outcome) => !retry.includes(outcome));
  const fileIssues = outcomes.flatMap((outcome) => (outcome.files ?? []).flatMap((file) => fileProblem(file) ?? []));
  const wrongResults = outcomes.flatMap(resultProblems);
  const written = new Map(outcomes.flatMap((outcome) => (outcome.status === "done" ? (outcome.files ?? []) : [])).map((file) => [file.path, file]));
  const missing = requestedFiles(task).flatMap(({ path, mayBeEmpty }) => {
    const file = written.get(path.replace(/^\.\//, ""));
    if (!file || file.action !== "written") return [`the task asks for ${path}, but no subtask wrote it`];
    if (file.bytes === 0 && !mayBeEmpty) return [`${path} was written empty`];
    return [];
  });
  const done = outcomes.filter((outcome) => outcome.status === "done" && !partial.includes(outcome)).length + kept.reduce((sum, outcome) => sum + itemShare(outcome), 0);
  const wrong = failed.length + retry.length + kept.reduce((sum, outcome) => sum + 1 - itemShare(outcome), 0) + fileIssues.length + missing.length + wrongResults.length;
  const failedItems = (outcome: OutcomeLine): string => {
    const listed = (outcome.items?.listed ?? []).filter((item) => item.status === "error").slice(0, 3);
    return listed.map((item) => `${item.input} (${item.error ?? "failed"})`).join("; ");
  };
  const why = (outcome: OutcomeLine): string =>
    outcome.failureKind === "unable"
      ? `needs what the offline model cannot do: ${outcome.error ?? ""}`
      : outcome.failureKind === "rejected"
        ? `was rejected by a person: ${outcome.error ?? ""}`
        : `failed: ${outcome.error ?? "no reason given"}`;
  const issues = [
    ...failed.map((outcome) => `${outcome.id} ${why(outcome)}`),
    ...partial.map((outcome) => `${outcome.id}: ${outcome.items?.failed} of ${outcome.items?.total} items failed: ${failedItems(outcome)}`),
    ...skipped.map((outcome) => `${outcome.id} did not run because a subtask it depends on failed`),
    ...fileIssues,
    ...missing,
    ...wrongResults,
  ];
  const retryable = failed.filter((outcome) => !FINAL_KINDS.has(outcome.failureKind ?? "error") && !DETERMINISTIC.test(outcome.error ?? ""));
  return {
    scores: {
      // A result that does not answer what it was asked makes the work wrong, however much else is right.
      accuracy: wrongResults.length > 0 ? 0 : round(Math.max(0, 1 - wrong / total)),
      completeness: round(Math.max(0, done - missing.length) / total),
      relevance: unable.length > 0 ? 0.5 : done > 0 ? 1 : 0.5,
      logic: round(1 - skipped.length / total),
    },
    issues,
    redo: [...retryable, ...retry].map((outcome) => outcome.id),
    replan: false,
  };
}
