import { Overwrite } from "@langchain/langgraph";
import { LIMITS } from "../core/limits.js";
import type { SubtaskResult } from "../core/plan.js";
import type { Route, State, Update } from "./state.js";
import { allSettled, blockedSubtasks, dependentsOf, readySubtasks, statusOf } from "./schedule.js";

/** How many questions the planner may ask a person in one run. */
export const MAX_QUESTIONS = 3;

/**
 * The coordinator is code, not a model: from the state alone it decides the next node and
 * applies the bookkeeping of a transition (a critic verdict, blocked subtasks, a stop). Every
 * loop it drives is bounded: plan repairs, questions, review rounds, rejections.
 */
export function coordinate(state: State): Update {
  const visit: Update = { nodes: ["coordinator"], metrics: { nodeVisits: 1 } };
  const go = (next: Route, update: Update = {}): Update => ({ ...update, ...visit, next });
  const stop = (reason: "failed", failure: string): Update => go("finalize", { stopReason: reason, failure });

  if (state.stopReason) {
    const wantsAnswer = state.stopReason === "max_iterations" || state.stopReason === "budget_exhausted";
    return go(state.answer === undefined && wantsAnswer ? "synthesizer" : "finalize");
  }

  if (state.answer !== undefined) {
    return go(state.settings.approveAnswer && state.answerStatus !== "approved" ? "approve_answer" : "finalize");
  }

  switch (state.planStatus) {
    case "none":
    case "invalid":
      if (state.planAttempts > LIMITS.planRepairAttempts) {
        return stop("failed", `the planner did not produce a valid plan in ${state.planAttempts} attempts: ${state.planErrors.join("; ")}`);
      }
      return go("planner");
    case "question":
      if (state.humanAnswers.length >= MAX_QUESTIONS) return stop("failed", `the planner still had questions after ${MAX_QUESTIONS} answers`);
      return go("ask_human");
    case "ready":
      if (state.settings.approvePlan) return go("approve_plan");
      return { ...execute(state, { planStatus: "approved" }), planStatus: "approved" };
    case "approved":
      return execute(state, {});
  }
}

/** Routing once the plan is approved: dispatch ready work, review it, apply the verdict. */
function execute(state: State, base: Update): Update {
  const visit: Update = { ...base, nodes: ["coordinator"], metrics: { nodeVisits: 1 } };
  const go = (next: Route, update: Update = {}): Update => ({ ...visit, ...update, next });
  const blocked = blockedSubtasks(state.plan, state.results);
  const results: Record<string, SubtaskResult> = { ...state.results, ...blocked };

  if (readySubtasks(state.plan, results).length > 0) return go("dispatch", { results: blocked });
  if (!allSettled(state.plan, results)) {
    return go("finalize", { results: blocked, stopReason: "failed", failure: "no subtask can start: the dependencies are unsatisfiable" });
  }
  if (state.needsReview) return go("critic", { results: blocked });

  const verdict = state.reviews.at(-1);
  if (verdict === undefined || state.reviewsApplied >= state.reviews.length) return go("synthesizer", { results: blocked });
  const applied: Update = { results: blocked, reviewsApplied: state.reviews.length };
  if (verdict.passed) return go("synthesizer", applied);
  if (state.reviews.length >= state.settings.maxIterations) return go("synthesizer", { ...applied, stopReason: "max_iterations" });

  if (verdict.replan) {
    return go("planner", {
      reviewsApplied: state.reviews.length,
      plan: [],
      planStatus: "none",
      planAttempts: 0,
      planErrors: [],
      planFeedback: verdict.issues.length > 0 ? verdict.issues : ["the critic asked for a different plan"],
      results: new Overwrite({}),
      redoFeedback: {},
      metrics: { nodeVisits: 1, reflectionCount: 1 },
    });
  }

  const ids = new Set(state.plan.map((subtask) => subtask.id));
  let redo = verdict.redo.filter((id) => ids.has(id));
  if (redo.length === 0) redo = state.plan.filter((subtask) => statusOf(results, subtask.id) === "failed").map((subtask) => subtask.id);
  if (redo.length === 0) return go("synthesizer", applied);

  const reset: Record<string, SubtaskResult> = { ...blocked };
  const rerun = [...redo, ...dependentsOf(state.plan, redo).filter((id) => statusOf(results, id) === "skipped")];
  for (const id of rerun) reset[id] = { status: "pending", attempts: results[id]?.attempts ?? 0 };
  const redoFeedback: Record<string, string[]> = {};
  for (const id of redo) {
    const mentioned = verdict.issues.filter((issue) => new RegExp(`\\b${id.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\b`).test(issue));
    redoFeedback[id] = mentioned.length > 0 ? mentioned : verdict.issues;
  }
  return go("dispatch", { ...applied, results: reset, redoFeedback, metrics: { nodeVisits: 1, reflectionCount: 1 } });
}
