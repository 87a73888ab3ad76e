import type { StoredEvent } from "../core/events.js";
import type { PlannedSubtask, SubtaskResult } from "../core/plan.js";
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

/**
 * A run's plan and results while its plan runs inside the planner's node (a streamed plan: the
 * checkpoint holds the plan only once that node ends) or waits there for a person: read from the
 * run's events — the plan that was last made ready (or the subtasks planned so far while it
 * streams), and each subtask's latest start, end or skip. The state is returned as it is when it
 * has a plan.
 */
export function withPlanFromEvents(state: State, events: readonly StoredEvent[]): State {
  if (state.plan.length > 0) return state;
  let plan: PlannedSubtask[] = [];
  let results: Record<string, SubtaskResult> = {};
  for (const event of events) {
    switch (event.type) {
      case "plan-invalid":
        plan = [];
        results = {};
        break;
      case "subtask-planned":
        if (!plan.some((subtask) => subtask.id === event.subtask.id)) plan.push(event.subtask);
        break;
      case "plan-ready":
        plan = [...event.subtasks];
        break;
      case "subtask-start":
        results[event.subtaskId] = { status: "running", attempts: event.attempt, startedAt: event.at };
        break;
      case "subtask-end": {
        const result: SubtaskResult = { ...results[event.subtaskId], status: event.status, attempts: results[event.subtaskId]?.attempts ?? 1, endedAt: event.at };
        if (event.summary !== undefined) result.summary = event.summary;
        if (event.error !== undefined) result.error = event.error;
        if (event.failureKind !== undefined) result.failureKind = event.failureKind;
        results[event.subtaskId] = result;
        break;
      }
      case "subtask-skip":
        // A subtask dropped with a plan that was not valid goes with it; one skipped for a failed dependency is shown skipped.
        if (event.reason.startsWith("dropped:")) delete results[event.subtaskId];
        else results[event.subtaskId] = { status: "skipped", attempts: 0, error: event.reason };
        break;
      default:
        break;
    }
  }
  return plan.length > 0 ? { ...state, plan, results: { ...results } } : state;
}
