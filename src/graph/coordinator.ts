import { isUnfinished } from "./subtask-status.js";
import type { Route, State } from "./state.js";

/** How many questions the planner may ask a person in one run. */
export const MAX_QUESTIONS = 3;

/**
 * The coordinator: code, not a model. It runs on the way out of every node and decides, from the
 * state alone, where the run goes next — to `execute` while the plan has subtasks to run. The
 * transitions themselves (a verdict applied, subtasks skipped, a stop) are written by the nodes
 * that cause them, and every loop they drive is bounded there.
 */
export function coordinate(state: State): Route {
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
  if (state.plan.some((subtask) => isUnfinished(state, subtask.id))) return "execute";
  return state.needsReview ? "critic" : "synthesizer";
}

/** Every place the coordinator can send a run. */
export const COORDINATOR_TARGETS: Route[] = [
  "planner",
  "approve_plan",
  "ask_human",
  "execute",
  "critic",
  "synthesizer",
  "approve_answer",
  "finalize",
];
