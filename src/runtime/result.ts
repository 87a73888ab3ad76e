import type { RunResult } from "../core/run.js";
import { planView } from "../graph/deps.js";
import type { State } from "../graph/state.js";
import { buildTrace } from "../graph/trace.js";
import type { RunRecord } from "../store/index.js";

/** The user-facing result of a run from its graph state; the caller sets status and interrupt. */
export function resultFromState(record: RunRecord, state: State, activeMs: number): RunResult {
  const sameRun = state.runId === record.id;
  const metrics = sameRun ? { ...state.metrics, durationMs: activeMs } : { ...(record.metrics ?? state.metrics), durationMs: activeMs };
  return {
    runId: record.id,
    threadId: record.threadId,
    status: "failed",
    stopReason: sameRun ? (state.stopReason ?? null) : record.stopReason,
    answer: sameRun ? (state.answer ?? null) : record.answer,
    plan: sameRun ? planView(state) : [],
    metrics,
    trace: buildTrace(state),
  };
}
