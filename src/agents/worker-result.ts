import { z } from "zod";
import { STRUCTURED_OUTPUT } from "../core/prompt-protocol.js";
import type { ToolSpec } from "../core/tool-spec.js";

/** The tool a worker ends its subtask with. */
export const SUBMIT_RESULT = STRUCTURED_OUTPUT.result;

export const WORKER_STATUSES = ["done", "failed", "unable"] as const;

/**
 * What a worker submits to end its subtask. Models may leave out the fields they do not use;
 * the schema they are shown (`SUBMIT_RESULT_SPEC`) lists every field, nullable, for strict modes.
 */
export const SubmittedResult = z.object({
  status: z.enum(WORKER_STATUSES),
  result: z.string().nullish(),
  from: z.string().nullish(),
  path: z.string().nullish(),
  reason: z.string().nullish(),
});
export type SubmittedResult = z.infer<typeof SubmittedResult>;

const DESCRIPTION =
  "End the subtask with its outcome. status done: the subtask is complete; give its result as text in `result`, or — to pass on a tool output or an argument exactly " +
  '(a file\'s content, a computed value) — its handle in `from` ("results.1" for your first tool call\'s output, "args.<name>" for an argument) with a JSONPath in `path` ' +
  '("$.content"; "$" for all of it). status failed: you tried and it did not work; status unable: this kind of work is beyond your tools. Give the reason for both.';

/** The function spec bound to worker models: every property required (nullable when unused), no extra ones, as strict modes want. */
export const SUBMIT_RESULT_SPEC: ToolSpec = {
  type: "function",
  function: {
    name: SUBMIT_RESULT,
    description: DESCRIPTION,
    parameters: {
      type: "object",
      properties: {
        status: { type: "string", enum: [...WORKER_STATUSES], description: "done, failed or unable" },
        result: { type: ["string", "null"], description: "done: the result as text; with `from`, a short description of that value for people" },
        from: { type: ["string", "null"], description: 'done: the handle whose value is the result exactly, e.g. "results.1" or "args.content"' },
        path: { type: ["string", "null"], description: 'a JSONPath into the value behind `from`, e.g. "$.content"; "$" or null for all of it' },
        reason: { type: ["string", "null"], description: "failed or unable: why, in one sentence" },
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
