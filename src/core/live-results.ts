import type { StoredEvent } from "./events.js";
import type { MapTally, PlannedSubtask, SubtaskResult } from "./plan.js";

/** At most this many failed items are kept from map-item events, as the state keeps (LIMITS.mapFailuresKept). */
const FAILURES_KEPT = 10;

/** What a run's events say about its subtasks while it goes. */
export interface LiveSubtasks {
  /** Subtasks that have ended (or were skipped) in the current round by their events. */
  ended: Record<string, SubtaskResult>;
  /** When each subtask that has started and not ended started. */
  runningSince: Record<string, number>;
}

/**
 * The subtasks of a running run by its events. The execute node hands its subtasks' results to
 * the graph state together, when it returns, so while it runs (or waits for a person's approval)
 * the checkpoint still has the subtasks that have already finished as pending; their
 * `subtask-end` events say how and when they ended. Only events after the last `critic-verdict`
 * or `plan-invalid` count: a subtask sent back for a redo ended in an earlier round. Not
 * `plan-ready`, which a streamed plan sends after its first subtasks have run. A subtask dropped
 * with a plan that turned out invalid (`dropped:`) is forgotten. A mapped subtask's item counts
 * come from its `map-item` events.
 */
export function liveSubtasks(events: readonly StoredEvent[]): LiveSubtasks {
  const ended: Record<string, SubtaskResult> = {};
  const running = new Map<string, { at: number; attempt: number; items: MapTally | undefined }>();
  for (const event of events) {
    switch (event.type) {
      case "critic-verdict":
      case "plan-invalid":
        for (const id of Object.keys(ended)) delete ended[id];
        running.clear();
        break;
      case "subtask-start":
        running.set(event.subtaskId, { at: event.at, attempt: event.attempt, items: undefined });
        delete ended[event.subtaskId];
        break;
      case "map-item": {
        const started = running.get(event.subtaskId);
        if (!started) break;
        const items = (started.items ??= { overallStatus: "ALL_SUCCESS", total: event.total, succeeded: 0, failed: 0, failures: [] });
        items.total = event.total;
        if (event.status === "success") items.succeeded += 1;
        else {
          items.failed += 1;
          if (items.failures.length < FAILURES_KEPT) items.failures.push({ index: event.index, input: `item ${event.index + 1}`, error: event.error ?? "failed" });
        }
        break;
      }
      case "subtask-end": {
        const started = running.get(event.subtaskId);
        running.delete(event.subtaskId);
        if (!started) break;
        const result: SubtaskResult = { status: event.status, attempts: started.attempt, startedAt: started.at, endedAt: event.at };
        if (event.summary !== undefined) result.summary = event.summary;
        if (event.error !== undefined) result.error = event.error;
        if (event.failureKind !== undefined) result.failureKind = event.failureKind;
        if (started.items) {
          const { succeeded, failed } = started.items;
          result.map = { ...started.items, overallStatus: failed === 0 ? "ALL_SUCCESS" : succeeded === 0 ? "ALL_FAILURE" : "PARTIAL_SUCCESS" };
        }
        ended[event.subtaskId] = result;
        break;
      }
      case "subtask-skip":
        running.delete(event.subtaskId);
        if (event.reason.startsWith("dropped:")) delete ended[event.subtaskId];
        else ended[event.subtaskId] = { status: "skipped", attempts: 0, error: event.reason };
        break;
      default:
        break;
    }
  }
  return { ended, runningSince: Object.fromEntries([...running].map(([id, started]) => [id, started.at])) };
}

/** The state's results with what the events say has ended since, for the subtasks the state still has as pending. */
export function withLiveResults(results: Readonly<Record<string, SubtaskResult>>, live: LiveSubtasks): Record<string, SubtaskResult> {
  const merged: Record<string, SubtaskResult> = { ...results };
  for (const [id, result] of Object.entries(live.ended)) {
    const known = results[id];
    if (known === undefined || known.status === "pending" || known.status === "running") merged[id] = result;
  }
  return merged;
}

/**
 * The plan a run's events describe: the last plan made ready, or — while a streamed plan is still
 * being written — the subtasks planned so far; a plan found invalid starts it over.
 */
export function planFromEvents(events: readonly StoredEvent[]): PlannedSubtask[] {
  let plan: PlannedSubtask[] = [];
  for (const event of events) {
    if (event.type === "plan-invalid") plan = [];
    else if (event.type === "plan-ready") plan = [...event.subtasks];
    else if (event.type === "subtask-planned" && !plan.some((subtask) => subtask.id === event.subtask.id)) plan.push(event.subtask);
  }
  return plan;
}
