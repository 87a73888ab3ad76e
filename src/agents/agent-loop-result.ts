import { z } from "zod";
import { selectPath } from "../core/json-path.js";
import { LIMITS } from "../core/limits.js";
import { FAILED_PREFIX, HANDLE_KEY, STRUCTURED_OUTPUT, UNABLE_PREFIX } from "../core/prompt-protocol.js";
import { preview, truncate } from "../core/text.js";
import type { ToolSpec } from "../core/tool-spec.js";

/** The tool a worker ends its subtask with. */
export const SUBMIT_RESULT = STRUCTURED_OUTPUT.result;

export const OUTCOME_STATUSES = ["done", "failed", "unable"] as const;

/**
 * What a worker submits to end its subtask. Models may leave out the fields they do not use;
 * the schema they are shown (`SUBMIT_RESULT_SPEC`) lists every field, nullable, for strict modes.
 */
export const SubmittedResult = z.object({
  status: z.enum(OUTCOME_STATUSES),
  result: z.string().nullish(),
  from: z.string().nullish(),
  path: z.string().nullish(),
  reason: z.string().nullish(),
});
export type SubmittedResult = z.infer<typeof SubmittedResult>;

const DESCRIPTION =
  'End the subtask. done: the result as text in `result`, or (to pass a tool output or argument on exactly) its handle in `from` ("results.1"), with a JSONPath in `path` for a part ("$.content"). ' +
  "failed (you tried) or unable (beyond your tools): the reason.";

/** The function spec bound to worker models: every property required (nullable when unused), no extra ones, as strict modes want. */
export const SUBMIT_RESULT_SPEC: ToolSpec = {
  type: "function",
  function: {
    name: SUBMIT_RESULT,
    description: DESCRIPTION,
    parameters: {
      type: "object",
      properties: {
        status: { type: "string", enum: [...OUTCOME_STATUSES] },
        result: { type: ["string", "null"] },
        from: { type: ["string", "null"] },
        path: { type: ["string", "null"] },
        reason: { type: ["string", "null"] },
      },
      required: ["status", "result", "from", "path", "reason"],
      additionalProperties: false,
    },
  },
};

/** Why a submission cannot end the subtask, as a sentence for the model; undefined when it can. */
export function outcomeProblem(submitted: SubmittedResult): string | undefined {
  if (submitted.status !== "done") return submitted.reason?.trim() ? undefined : `status ${submitted.status} needs a reason`;
  const hasFrom = typeof submitted.from === "string" && submitted.from.trim() !== "";
  const hasResult = typeof submitted.result === "string" && submitted.result.trim() !== "";
  if (!hasFrom && !hasResult) return "status done needs the result: text in `result`, or a handle in `from`";
  return undefined;
}

/** A plain-text answer that says by its prefix how the subtask ended, or undefined when the prefix is absent. */
export function prefixedOutcome(text: string): SubmittedResult | undefined {
  for (const [prefix, status] of [
    [FAILED_PREFIX, "failed"],
    [UNABLE_PREFIX, "unable"],
  ] as const) {
    if (text.startsWith(prefix)) return { status, reason: text.slice(prefix.length).trim() || "the worker gave up" };
  }
  return undefined;
}

/** The value downstream subtasks get from a result the model wrote: the text, parsed when it is JSON. */
export function answerValue(text: string): unknown {
  const trimmed = text.trim();
  if (/^(?:[[{"]|-?\d|true$|false$|null$)/.test(trimmed)) {
    try {
      return JSON.parse(trimmed);
    } catch {
      // not JSON: the text itself is the value
    }
  }
  return trimmed;
}

/** The values a worker's handles stand for, for reading a submission that names one. */
export interface HandleValues {
  handles: ReadonlyMap<string, unknown>;
  /** Handles whose values were too large to keep across a pause. */
  lost: ReadonlySet<string>;
  /** The tools' own summaries of their outputs, by handle. */
  summaries: ReadonlyMap<string, string>;
}

/** What a submission stands for: done with its value and summary, failed or unable with the reason, or what is wrong with it. */
export type ReadSubmission =
  | { status: "done"; value: unknown; exact?: true; summary: string }
  | { status: "failed" | "unable"; reason: string }
  | { problem: string };

/**
 * Reads a worker's submission: a done result from a handle is that value exactly (with a JSONPath
 * into it), summed up by the model's description, the value itself when it is plain, or the
 * tool's own summary of a whole output; a done result in words is the text (parsed when JSON).
 */
export function readSubmission(submitted: SubmittedResult, values: HandleValues): ReadSubmission {
  const problem = outcomeProblem(submitted);
  if (problem !== undefined) return { problem };
  if (submitted.status !== "done") return { status: submitted.status, reason: (submitted.reason ?? "").trim() };
  const from = submitted.from?.trim();
  if (from) {
    const key = from.startsWith(`${HANDLE_KEY}:`) ? from.slice(HANDLE_KEY.length + 1) : from;
    if (values.lost.has(key)) return { problem: `from: "${key}" was too large to keep across the pause; call the tool that produced it again` };
    if (!values.handles.has(key)) return { problem: `from: "${key}" is not a handle of this subtask; known: ${[...values.handles.keys()].join(", ") || "none"}` };
    const path = submitted.path?.trim() || "$";
    let value: unknown;
    try {
      value = selectPath(values.handles.get(key), path, key);
    } catch (error) {
      return { problem: `path: ${(error as Error).message}` };
    }
    const plain = value === null || typeof value !== "object";
    const described = submitted.result?.trim();
    const summary = described ? described : !plain && path === "$" && values.summaries.has(key) ? (values.summaries.get(key) as string) : preview(value, LIMITS.previewChars);
    return { status: "done", value, exact: true, summary: truncate(summary, LIMITS.previewChars) };
  }
  const text = (submitted.result ?? "").trim();
  return { status: "done", value: answerValue(text), summary: truncate(text, LIMITS.previewChars) };
}
