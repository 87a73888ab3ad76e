import type { PlannedSubtask } from "./plan.js";

/**
 * How long a plan will take, before it runs (seed 001 §2.2's estimated time per step and total):
 * each subtask from the mean duration of earlier subtasks of the same agent and direct tool (a
 * worker's of the same agent without a tool), else a default — a direct tool step 1 s, a worker 5 s
 * (the seed's figures); the total is the longest chain of dependencies, since independent
 * subtasks run side by side, and the work is their sum.
 */
export const DEFAULT_ESTIMATE_MS = { tool: 1_000, worker: 5_000 } as const;

export interface RecordedDuration {
  agent: string;
  tool: string | null;
  count: number;
  meanMs: number;
}

export interface StepEstimate {
  id: string;
  estimatedMs: number;
  /** recorded: from `samples` earlier subtasks of the same agent and tool; default: none were recorded. */
  basis: "recorded" | "default";
  samples: number;
}

export interface PlanEstimate {
  steps: StepEstimate[];
  /** The longest chain of dependencies by the estimates: how long the plan should take. */
  totalMs: number;
  /** Every step's estimate added up: the work done, side by side or not. */
  workMs: number;
}

export function estimatePlan(subtasks: readonly PlannedSubtask[], durations: readonly RecordedDuration[]): PlanEstimate {
  const byKey = new Map(durations.map((duration) => [`${duration.agent}\n${duration.tool ?? ""}`, duration]));
  const steps = subtasks.map((subtask): StepEstimate => {
    const recorded = byKey.get(`${subtask.agent}\n${subtask.tool ?? ""}`);
    if (recorded && recorded.count > 0) return { id: subtask.id, estimatedMs: recorded.meanMs, basis: "recorded", samples: recorded.count };
    return { id: subtask.id, estimatedMs: subtask.tool ? DEFAULT_ESTIMATE_MS.tool : DEFAULT_ESTIMATE_MS.worker, basis: "default", samples: 0 };
  });
  const own = new Map(steps.map((step) => [step.id, step.estimatedMs]));
  const finish = new Map<string, number>();
  const byId = new Map(subtasks.map((subtask) => [subtask.id, subtask]));
  // Earliest finish along dependencies (a cycle, which a checked plan never has, counts its start as 0).
  const finishOf = (id: string, seen: Set<string>): number => {
    const known = finish.get(id);
    if (known !== undefined) return known;
    if (seen.has(id)) return 0;
    seen.add(id);
    const start = Math.max(0, ...(byId.get(id)?.dependsOn ?? []).filter((dependency) => byId.has(dependency)).map((dependency) => finishOf(dependency, seen)));
    const end = start + (own.get(id) ?? 0);
    finish.set(id, end);
    return end;
  };
  const totalMs = Math.max(0, ...subtasks.map((subtask) => finishOf(subtask.id, new Set())));
  return { steps, totalMs, workMs: steps.reduce((sum, step) => sum + step.estimatedMs, 0) };
}
