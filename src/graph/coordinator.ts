import { Send } from "@langchain/langgraph";
import { LIMITS } from "../core/limits.js";
import { isArgRef, type PlannedSubtask } from "../core/plan.js";
import type { SubtaskPayload } from "./nodes/execution.js";
import { allSettled, readySubtasks } from "./schedule.js";
import type { Route, State } from "./state.js";

/** How many questions the planner may ask a person in one run. */
export const MAX_QUESTIONS = 3;

/**
 * The `Send` for one ready subtask: everything its worker needs — its dependencies' summaries
 * and stash handles, not their values, which it reads from the stash when it starts.
 */
export function sendSubtask(state: State, subtask: PlannedSubtask): Send {
  const byId = new Map(state.plan.map((item) => [item.id, item]));
  const previous = state.results[subtask.id];
  const payload: SubtaskPayload = {
    runId: state.runId,
    task: state.task,
    subtask,
    attempt: (previous?.attempts ?? 0) + 1,
    round: state.reviews.length,
    retryFailedItems: previous?.retryFailedItems === true,
    feedback: state.redoFeedback[subtask.id] ?? [],
    maxSteps: state.settings.maxWorkerSteps,
    mapConcurrency: state.settings.mapConcurrency ?? LIMITS.mapConcurrency,
    promptBudget: state.settings.promptBudget ?? LIMITS.promptTokenBudget,
    allowedTools: state.settings.allowedTools ?? null,
    consumers: state.plan.filter((other) => Object.values(other.args).some((arg) => isArgRef(arg) && arg.ref === subtask.id)).map((other) => other.id),
    dependencies: subtask.dependsOn.map((dependency) => {
      const result = state.results[dependency];
      return { id: dependency, label: byId.get(dependency)?.label ?? dependency, summary: result?.summary ?? "", ref: result?.ref ?? null };
    }),
  };
  return new Send("run_subtask", payload);
}

/**
 * The coordinator: code, not a model. It runs on the way out of every node and decides, from the
 * state alone, where the run goes next — including the dispatch of every ready subtask as its
 * own `Send`. The transitions themselves (a verdict applied, subtasks skipped, a stop) are
 * written by the nodes that cause them, and every loop they drive is bounded there.
 */
export function coordinate(state: State): Route | Send[] {
  if (state.stopReason) {
    const wantsAnswer = state.stopReason === "max_iterations" || state.stopReason === "budget_exhausted";
    return state.answer === null && wantsAnswer ? "synthesizer" : "finalize";
  }
  if (state.answer !== null) {
    return state.settings.approveAnswer && state.answerStatus !== "approved" ? "approve_answer" : "finalize";
  }
  switch (state.planStatus) {
    case "none":
    case "invalid":
      return "planner";
    case "question":
      return "ask_human";
    case "ready":
      return "approve_plan";
    case "approved":
      break;
  }
  const ready = readySubtasks(state.plan, state.results);
  if (ready.length > 0) return ready.map((subtask) => sendSubtask(state, subtask));
  if (!allSettled(state.plan, state.results)) return "finalize";
  return state.needsReview ? "critic" : "synthesizer";
}

/** Every place the coordinator can send a run. */
export const COORDINATOR_TARGETS: Array<Route | "run_subtask"> = [
  "planner",
  "approve_plan",
  "ask_human",
  "run_subtask",
  "critic",
  "synthesizer",
  "approve_answer",
  "finalize",
];
