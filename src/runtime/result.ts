import type { StoredEvent } from "../core/events.js";
import { liveSubtasks, planFromEvents, withLiveResults } from "../core/live-results.js";
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
    ...answerFormatOf(record, state, sameRun),
    ...(sameRun && state.output !== null && state.output !== undefined ? { output: state.output } : {}),
    plan: sameRun ? planView(state) : [],
    metrics,
    trace: buildTrace(state),
  };
}

/** How the result's answer is meant to be read: the state's word for the run it holds, else what the record kept. */
function answerFormatOf(record: RunRecord, state: State, sameRun: boolean): Pick<RunResult, "answerFormat"> {
  if (sameRun) return state.answer ? { answerFormat: state.answerFormat ?? "markdown" } : {};
  return record.answer !== null && record.answerFormat !== null ? { answerFormat: record.answerFormat } : {};
}

/**
 * A run as far as it has gone while it is live: the state, with its plan from the events when the
 * plan still runs inside the planner's node (a streamed plan reaches the checkpoint when that node
 * ends), and the results of the subtasks its events say have ended since the last checkpoint.
 */
export function liveState(state: State, events: readonly StoredEvent[]): State {
  const plan = state.plan.length > 0 ? state.plan : planFromEvents(events);
  return { ...state, plan, results: withLiveResults(state.results, liveSubtasks(events)) };
}
