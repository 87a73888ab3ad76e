import type { PlannedSubtask, SubtaskResult, SubtaskStatus } from "../core/plan.js";
import type { State } from "./state.js";

export function statusOf(results: Record<string, SubtaskResult>, id: string): SubtaskStatus {
  return results[id]?.status ?? "pending";
}

/** Subtasks in `plan` that depend, directly or not, on any of `ids`. */
export function dependentsOf(plan: readonly PlannedSubtask[], ids: readonly string[]): string[] {
  const found = new Set<string>();
  let frontier = new Set(ids);
  while (frontier.size > 0) {
    const next = new Set<string>();
    for (const subtask of plan) {
      if (found.has(subtask.id) || ids.includes(subtask.id)) continue;
      if (subtask.dependsOn.some((dependency) => frontier.has(dependency))) {
        found.add(subtask.id);
        next.add(subtask.id);
      }
    }
    frontier = next;
  }
  return [...found];
}

export function allSettled(plan: readonly PlannedSubtask[], results: Record<string, SubtaskResult>): boolean {
  return plan.every((subtask) => {
    const status = statusOf(results, subtask.id);
    return status === "done" || status === "failed" || status === "skipped";
  });
}

/** A subtask the plan still has to run: pending (or left running by a run that stopped). */
export function isUnfinished(state: Pick<State, "results">, id: string): boolean {
  const status = statusOf(state.results, id);
  return status === "pending" || status === "running";
}
