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
}

const round = (value: number): number => Math.round(value * 100) / 100;

/** Failures that come out the same every time: a retry would not change them. */
const DETERMINISTIC = /\((?:invalid_expression|invalid_arguments|invalid_path|not_found|path_outside_workspace|exists|too_large|unknown_tool|tool_not_allowed)\)|no content to write|no JSON text|has no \w+ tool|matched nothing|not a valid JSONPath/;

/**
 * The offline critic scores what it can check: failed and skipped subtasks, and subtasks that
 * need a language model. A failure a retry could change (a timeout, a model error) is sent back;
 * one that comes out the same every time (division by zero, a missing file), and work only a
 * real model can do, is named as an issue but not retried.
 */
export function reviewOutcomes(outcomes: OutcomeLine[]): CriticOutput {
  const total = Math.max(1, outcomes.length);
  const failed = outcomes.filter((outcome) => outcome.status === "failed");
  const skipped = outcomes.filter((outcome) => outcome.status === "skipped");
  const unresolved = outcomes.filter((outcome) => outcome.status === "done" && (outcome.summary ?? "").includes(NEEDS_MODEL));
  const done = outcomes.filter((outcome) => outcome.status === "done").length - unresolved.length;
  const issues = [
    ...failed.map((outcome) => `${outcome.id} failed: ${outcome.error ?? "no reason given"}`),
    ...skipped.map((outcome) => `${outcome.id} did not run because a subtask it depends on failed`),
    ...unresolved.map((outcome) => `${outcome.id} ${NEEDS_MODEL}; the offline model could not do it`),
  ];
  return {
    scores: {
      accuracy: round(1 - failed.length / total),
      completeness: round(done / total),
      relevance: unresolved.length > 0 ? 0.5 : done > 0 ? 1 : 0.5,
      logic: round(1 - skipped.length / total),
    },
    issues,
    redo: failed.filter((outcome) => !DETERMINISTIC.test(outcome.error ?? "")).map((outcome) => outcome.id),
    replan: false,
  };
}
