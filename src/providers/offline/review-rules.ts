import type { CriticOutput } from "../../core/review.js";
import { NEEDS_MODEL } from "./worker-rules.js";

/** A subtask outcome as the critic and synthesizer prompts list it. */
export interface OutcomeLine {
  id: string;
  label: string;
  agent: string;
  status: string;
  attempts?: number;
  summary?: string;
  error?: string;
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

/** Failures that come out the same every time: a retry would not change them. */
const DETERMINISTIC = /\((?:invalid_expression|invalid_arguments|invalid_path|not_found|path_outside_workspace|exists|too_large|unknown_tool|tool_not_allowed)\)|no content to write|no JSON text|has no \w+ tool|matched nothing|not a valid JSONPath/;

/**
 * The offline critic scores what it can check: failed and skipped subtasks, mapped subtasks with
 * failed items, and subtasks that need a language model. A failure a retry could change (a
 * timeout, a model error) is sent back, and a partly failed map gets one retry of its failed
 * items; a failure that comes out the same every time (division by zero, a missing file), and
 * work only a real model can do, is named as an issue but not retried.
 */
export function reviewOutcomes(outcomes: OutcomeLine[]): CriticOutput {
  const total = Math.max(1, outcomes.length);
  const failed = outcomes.filter((outcome) => outcome.status === "failed");
  const skipped = outcomes.filter((outcome) => outcome.status === "skipped");
  const unresolved = outcomes.filter((outcome) => outcome.status === "done" && (outcome.summary ?? "").includes(NEEDS_MODEL));
  const partial = outcomes.filter(partlyFailed);
  // A partly failed map gets one retry of its failed items; after that its gaps are reported, not retried again.
  const retry = partial.filter((outcome) => (outcome.attempts ?? 1) <= 1);
  const itemShare = (outcome: OutcomeLine): number => (outcome.items && outcome.items.total > 0 ? outcome.items.succeeded / outcome.items.total : 0);
  const kept = partial.filter((outcome) => !retry.includes(outcome));
  const done = outcomes.filter((outcome) => outcome.status === "done" && !partial.includes(outcome)).length - unresolved.length + kept.reduce((sum, outcome) => sum + itemShare(outcome), 0);
  const wrong = failed.length + retry.length + kept.reduce((sum, outcome) => sum + 1 - itemShare(outcome), 0);
  const failedItems = (outcome: OutcomeLine): string => {
    const listed = (outcome.items?.listed ?? []).filter((item) => item.status === "error").slice(0, 3);
    return listed.map((item) => `${item.input} (${item.error ?? "failed"})`).join("; ");
  };
  const issues = [
    ...failed.map((outcome) => `${outcome.id} failed: ${outcome.error ?? "no reason given"}`),
    ...partial.map((outcome) => `${outcome.id}: ${outcome.items?.failed} of ${outcome.items?.total} items failed: ${failedItems(outcome)}`),
    ...skipped.map((outcome) => `${outcome.id} did not run because a subtask it depends on failed`),
    ...unresolved.map((outcome) => `${outcome.id} ${NEEDS_MODEL}; the offline model could not do it`),
  ];
  return {
    scores: {
      accuracy: round(1 - wrong / total),
      completeness: round(done / total),
      relevance: unresolved.length > 0 ? 0.5 : done > 0 ? 1 : 0.5,
      logic: round(1 - skipped.length / total),
    },
    issues,
    redo: [...failed.filter((outcome) => !DETERMINISTIC.test(outcome.error ?? "")), ...retry].map((outcome) => outcome.id),
    replan: false,
  };
}
