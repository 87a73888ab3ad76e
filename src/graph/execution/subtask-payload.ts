import type { Assignment } from "../../core/agent-fit.js";
import { LIMITS } from "../../core/limits.js";
import { isArgRef, type PlannedSubtask, type SubtaskResult } from "../../core/plan.js";
import { isUntrusted, type Label, REVIEWER_NOTES } from "../../core/provenance.js";
import type { LiveBoard } from "../board.js";
import type { State } from "../state.js";

/** What one subtask's run receives from the dispatcher: everything it needs, nothing more. */
export interface SubtaskPayload {
  runId: string;
  task: string;
  subtask: PlannedSubtask;
  attempt: number;
  /** The review round the run is in (how many verdicts it has had). */
  round: number;
  /** A partly failed map sent back by the critic: run only its failed items. */
  retryFailedItems: boolean;
  feedback: string[];
  maxSteps: number;
  mapConcurrency: number;
  promptBudget: number;
  /** The tools the run may use (a request's `tools`); null: every tool its agents can reach. */
  allowedTools?: string[] | null;
  /** The dependencies' summaries, stash handles and provenance; their values (and labels) are read from the stash when the subtask starts. */
  dependencies: Array<{ id: string; label: string; summary: string; ref: string | null; provenance?: Label }>;
  /** The label of `feedback`: the critic's notes are untrusted when it had read untrusted results. */
  feedbackProvenance?: Label;
  /** The subtasks that take arguments from this one's result: it must have a result for them. */
  consumers?: string[];
  /** How it was given to its agent, when it asked for a capability (`subtask.agent` is then the one chosen). */
  assignment?: Assignment;
  /** The run owner's long-term memory namespace, for the memory tools. */
  memoryNamespace?: string[];
}

/** What the node running a subtask shares with it while they run: the live board and the plan's subtask ids. */
export interface SubtaskLive {
  board: LiveBoard;
  planIds: () => readonly string[];
  /** Whether this is the whole plan's only subtask, a worker step (the fast route): false while the plan still streams. */
  answersTask?: () => boolean;
  /** Set while the plan still streams in: its calls with effects wait for it (see `ToolContext.effectsAllowed`). */
  effectsAllowed?: () => Promise<void>;
}

/** The label of the critic's notes to a subtask: it read every outcome, so its notes are untrusted when any was. */
function reviewerProvenance(state: State, subtaskId: string): { feedbackProvenance?: Label } {
  if ((state.redoFeedback[subtaskId] ?? []).length === 0) return {};
  const read = Object.values(state.results).some((result) => isUntrusted(result.provenance));
  return read ? { feedbackProvenance: REVIEWER_NOTES } : {};
}

/** Everything a subtask's worker needs, from the plan and the results its dependencies have now. */
export function subtaskPayload(state: State, subtask: PlannedSubtask, results: ReadonlyMap<string, SubtaskResult>): SubtaskPayload {
  const byId = new Map(state.plan.map((item) => [item.id, item]));
  const previous = state.results[subtask.id];
  return {
    runId: state.runId,
    task: state.task,
    subtask,
    attempt: (previous?.attempts ?? 0) + 1,
    round: state.reviews.length,
    retryFailedItems: previous?.retryFailedItems === true,
    feedback: state.redoFeedback[subtask.id] ?? [],
    ...reviewerProvenance(state, subtask.id),
    maxSteps: state.settings.maxWorkerSteps,
    mapConcurrency: state.settings.mapConcurrency ?? LIMITS.mapConcurrency,
    promptBudget: state.settings.promptBudget ?? LIMITS.promptTokenBudget,
    allowedTools: state.settings.allowedTools ?? null,
    ...(state.settings.memoryNamespace ? { memoryNamespace: state.settings.memoryNamespace } : {}),
    consumers: state.plan.filter((other) => Object.values(other.args).some((arg) => isArgRef(arg) && arg.ref === subtask.id)).map((other) => other.id),
    dependencies: subtask.dependsOn.map((dependency) => {
      const result = results.get(dependency);
      return { id: dependency, label: byId.get(dependency)?.label ?? dependency, summary: result?.summary ?? "", ref: result?.ref ?? null, ...(result?.provenance ? { provenance: result.provenance } : {}) };
    }),
  };
}
