import { GraphRecursionError, isGraphDrained } from "@langchain/langgraph";
import { errorMessage } from "../core/errors.js";
import { type InterruptInfo, type RunResult, runStatusOf } from "../core/run.js";
import type { State } from "../graph/state.js";
import { workDone } from "../graph/trace.js";
import type { RunPatch, RunRecord } from "../store/index.js";
import { supersededPatch } from "./busy-thread.js";
import { resultFromState } from "./result.js";

/** How a drive's stream of the graph ended: the last values it saw, and why it stopped early, if it did. */
export interface StreamEnd {
  last: State | undefined;
  /** The graph threw: why (a failure), unless it was a cancel, a drain or a superseding run. */
  failure?: string;
  cancelled: boolean;
  /** Drained (a server shutting down, or a lost hold): resumed later, not finished. */
  suspended: boolean;
  /** Stopped to make way for another run on the thread (busy-thread.ts). */
  superseded?: { error: string; supersededBy: string };
}

/** What stopped a drive whose stream threw, from the error and the signals that were live. */
export function streamEndOf(
  error: unknown,
  last: State | undefined,
  why: { drainReason: string | undefined; makeWay: AbortSignal; signal: AbortSignal; drainRequested: boolean; lost: AbortSignal | undefined; recursionLimit: number },
): StreamEnd {
  const superseded = supersededPatch(why.drainReason ?? (why.makeWay.aborted ? String(why.makeWay.reason) : undefined));
  const end: StreamEnd = { last, cancelled: false, suspended: false, ...(superseded ? { superseded } : {}) };
  if (superseded) end.cancelled = true;
  else if (isGraphDrained(error) || (why.signal.aborted && (why.drainRequested || why.lost?.aborted))) end.suspended = true;
  else if (why.signal.aborted) end.cancelled = true;
  else if (error instanceof GraphRecursionError) end.failure = `the run exceeded its step limit (${why.recursionLimit} supersteps)`;
  else end.failure = errorMessage(error);
  return end;
}

/** Whether the stream's last values tell the whole story: the run reached finalize, with nothing stopping it early. */
export function endedCleanly(record: RunRecord, end: StreamEnd): end is StreamEnd & { last: State } {
  return end.last?.finished === true && end.last.runId === record.id && end.failure === undefined && !end.cancelled && !end.suspended;
}

/** The result a drive came to: from its state, and from how its stream ended. */
export function driveResult(record: RunRecord, state: State, interrupt: InterruptInfo | undefined, end: StreamEnd, activeMs: number): RunResult {
  const result = resultFromState(record, state, activeMs);
  if (end.suspended && !state.finished) {
    // Stopped by a drain (server shutdown): not waiting for a person, resumed when a server starts.
    return { ...result, status: "interrupted", stopReason: null };
  }
  if (end.cancelled) return { ...result, status: "cancelled", stopReason: "cancelled", ...(end.superseded ? { error: end.superseded.error } : {}) };
  if (end.failure !== undefined) return { ...result, status: "failed", stopReason: "failed", error: end.failure };
  if (interrupt && !state.finished) return { ...result, status: "interrupted", stopReason: null, interrupt };
  if (state.finished && state.stopReason) return { ...result, status: runStatusOf(state.stopReason, workDone(state)), ...(state.failure ? { error: state.failure } : {}) };
  return { ...result, status: "failed", stopReason: "failed", error: "the run stopped before it finished" };
}

/** The run's record once a drive is over. */
export function drivePatch(result: RunResult, end: StreamEnd, activeMs: number): RunPatch {
  return {
    status: result.status,
    stopReason: result.stopReason,
    answer: result.answer,
    answerFormat: result.answer !== null ? (result.answerFormat ?? null) : null,
    error: result.error ?? null,
    metrics: result.metrics,
    interrupt: result.interrupt ?? null,
    activeMs,
    pid: null,
    worker: null,
    finishedAt: result.status === "interrupted" ? null : Date.now(),
    suspended: end.suspended && result.status === "interrupted" && !result.interrupt ? "shutdown" : null,
    ...(end.superseded ? { supersededBy: end.superseded.supersededBy } : {}),
  };
}
