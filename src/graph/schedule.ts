import type { PlannedSubtask, SubtaskResult, SubtaskStatus } from "../core/plan.js";

export function statusOf(results: Record<string, SubtaskResult>, id: string): SubtaskStatus {
  return results[id]?.status ?? "pending";
}

/** Subtasks that can start now: not finished, and every dependency done. */
export function readySubtasks(plan: readonly PlannedSubtask[], results: Record<string, SubtaskResult>): PlannedSubtask[] {
  return plan.filter((subtask) => {
    const status = statusOf(results, subtask.id);
    if (status !== "pending" && status !== "running") return false;
    return subtask.dependsOn.every((dependency) => statusOf(results, dependency) === "done");
  });
}

/**
 * Pending subtasks that can never run because a dependency failed or was skipped, marked
 * skipped (transitively), with the reason.
 */
export function blockedSubtasks(plan: readonly PlannedSubtask[], results: Record<string, SubtaskResult>): Record<string, SubtaskResult> {
  const current = { ...results };
  const blocked: Record<string, SubtaskResult> = {};
  let changed = true;
  while (changed) {
    changed = false;
    for (const subtask of plan) {
      if (statusOf(current, subtask.id) !== "pending") continue;
      const failed = subtask.dependsOn.find((dependency) => {
        const status = statusOf(current, dependency);
        return status === "failed" || status === "skipped";
      });
      if (failed === undefined) continue;
      const result: SubtaskResult = {
        status: "skipped",
        attempts: current[subtask.id]?.attempts ?? 0,
        error: `not run: ${failed} ${statusOf(current, failed) === "failed" ? "failed" : "was skipped"}`,
      };
      current[subtask.id] = result;
      blocked[subtask.id] = result;
      changed = true;
    }
  }
  return blocked;
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
