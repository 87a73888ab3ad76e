import type { AgentToolCall } from "../../agents/agent-loop.js";
import { ArgReferenceError } from "../../core/json-path.js";
import { LIMITS } from "../../core/limits.js";
import { type Artifact, type FailureKind, isArgRef, type MapTally, type PlannedSubtask } from "../../core/plan.js";
import { describeSources, isUntrusted, type Label } from "../../core/provenance.js";
import type { ToolCallRecord } from "../../core/run.js";
import type { LabelledEntry } from "../../core/stash.js";
import { preview, truncate } from "../../core/text.js";
import type { ToolOutcome } from "../../tools/define-tool.js";
import { artifactProblem } from "../artifacts.js";
import type { GraphDeps } from "../deps.js";
import type { SubtaskPayload } from "./subtask-payload.js";

/** How one attempt ended, before it is written to the state. */
export interface Attempt {
  status: "done" | "failed";
  value?: unknown;
  /** The value was handed on from a tool output or an argument, not typed by a model. */
  exact?: boolean;
  summary: string;
  error?: string;
  failureKind?: FailureKind;
  map?: MapTally;
  /** Where the value came from. */
  label?: Label;
}

/** A result with nothing in it: what a dependent cannot take arguments from. */
function isEmptyResult(value: unknown): boolean {
  return value === undefined || value === null || (typeof value === "string" && value.trim() === "");
}

/** A worker's or a direct step's call as the trace keeps it. */
export function traceRecord(subtask: PlannedSubtask, call: AgentToolCall, at: number): ToolCallRecord {
  const record: ToolCallRecord = {
    subtaskId: subtask.id,
    agent: subtask.agent,
    tool: call.tool,
    args: preview(call.args, 300),
    ok: call.outcome.ok,
    preview: call.outcome.ok ? truncate(call.outcome.summary, LIMITS.previewChars) : `${call.outcome.error.code}: ${call.outcome.error.message}`,
    durationMs: Math.round(call.durationMs),
    at,
    ...(call.notes && call.notes.length > 0 ? { notes: call.notes.slice(0, 10).map((note) => truncate(note, 200)) } : {}),
  };
  if (isUntrusted(call.outcome.label)) record.untrusted = describeSources(call.outcome.label);
  return record;
}

export function toolFailure(outcome: Extract<ToolOutcome, { ok: false }>): Attempt {
  return {
    status: "failed",
    summary: "",
    error: `${outcome.error.code}: ${outcome.error.message}`,
    failureKind: outcome.error.code === "rejected" ? "rejected" : "error",
    ...(outcome.label ? { label: outcome.label } : {}),
  };
}

/** The values of the dependencies the arguments refer to, with their labels, read from the stash. */
export async function dependencyValues(deps: GraphDeps, payload: SubtaskPayload): Promise<Map<string, LabelledEntry>> {
  const referenced = new Set(Object.values(payload.subtask.args).flatMap((arg) => (isArgRef(arg) ? [arg.ref] : [])));
  const values = new Map<string, LabelledEntry>();
  for (const id of referenced) {
    const ref = payload.dependencies.find((dependency) => dependency.id === id)?.ref;
    if (!ref) throw new ArgReferenceError(`${id} has no stored result to take arguments from`);
    values.set(id, await deps.stash.read(ref));
  }
  return values;
}

export function mapSummary(tally: MapTally): string {
  if (tally.failed === 0) return `${tally.succeeded}/${tally.total} items succeeded`;
  const failures = tally.failures.map((failure) => `${failure.input} (${failure.error})`).join("; ");
  return truncate(`${tally.succeeded}/${tally.total} items succeeded; failed: ${failures}${tally.failed > tally.failures.length ? ` and ${tally.failed - tally.failures.length} more` : ""}`, LIMITS.previewChars);
}

/**
 * The checks a finished attempt must pass to stay done: every file its calls wrote is whole on
 * disk (artifacts), and a subtask others take arguments from has a result to hand them.
 */
export function checkedAttempt(attempt: Attempt, artifacts: readonly Artifact[], consumers: readonly string[]): Attempt {
  const broken = artifacts.flatMap((artifact) => artifactProblem(artifact) ?? []);
  if (attempt.status === "done" && broken.length > 0) {
    attempt = { ...attempt, status: "failed", error: broken.join("; "), failureKind: "artifact" };
  }
  if (attempt.status === "done" && !attempt.exact && isEmptyResult(attempt.value) && consumers.length > 0) {
    // Nothing to hand on: what takes its arguments from it must not run on an empty value.
    attempt = { ...attempt, status: "failed", error: `finished without a result, and ${consumers.join(", ")} take${consumers.length === 1 ? "s" : ""} arguments from it`, failureKind: "empty" };
  }
  return attempt;
}
