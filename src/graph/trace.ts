import type { DecisionTrace, RunMetrics } from "../core/run.js";
import { planView } from "./deps.js";
import { openIssues } from "./nodes/review.js";
import type { State } from "./state.js";

/** The decision trace of a run, built from its state: plan and outcomes, verdicts, node visits, counts. */
export function buildTrace(state: State): DecisionTrace {
  const metrics: RunMetrics = state.metrics;
  const knownIssues = [...openIssues(state)];
  if (state.failure) knownIssues.push(state.failure);
  return {
    plan: planView(state),
    reviews: state.reviews,
    nodes: state.nodes,
    toolCalls: state.toolCalls,
    llmCalls: metrics.llmCalls,
    toolCallCount: metrics.toolCalls,
    promptTokens: metrics.promptTokens,
    completionTokens: metrics.completionTokens,
    knownIssues,
  };
}

/**
 * LangGraph's recursion limit for a run, from the plan size bound and the review rounds: each
 * wave is four supersteps (dispatch, run_subtask, join, coordinator) and a plan of n subtasks
 * has at most n waves per round; planning, questions, approvals and the answer add a fixed
 * number per round.
 */
export function recursionLimitFor(planSize: number, maxIterations: number): number {
  const planning = 2 * 3;
  const perRound = 4 * Math.max(1, planSize) + 2 + planning;
  const approvals = (2 + planning) * (maxIterations + 3) + 4 * (maxIterations + 1);
  return 2 + planning + maxIterations * perRound + approvals + 10;
}
