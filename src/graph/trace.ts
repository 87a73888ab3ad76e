import { describeBudgetStop } from "../core/budget.js";
import type { DecisionTrace, RunMetrics } from "../core/run.js";
import { planView } from "./deps.js";
import { openIssues } from "./nodes/review.js";
import type { State } from "./state.js";

/** The decision trace of a run, built from its state: plan and outcomes, verdicts, node visits, counts. */
export function buildTrace(state: State): DecisionTrace {
  const metrics: RunMetrics = state.metrics;
  const knownIssues = [...openIssues(state)];
  if (state.failure) knownIssues.push(state.failure);
  if (state.budgetStop) knownIssues.push(`the run's budget ran out (${describeBudgetStop(state.budgetStop)})`);
  return {
    plan: planView(state),
    reviews: state.reviews,
    nodes: state.nodes,
    toolCalls: state.toolCalls,
    llmCalls: metrics.llmCalls,
    toolCallCount: metrics.toolCalls,
    promptTokens: metrics.promptTokens,
    completionTokens: metrics.completionTokens,
    costUsd: metrics.costUsd,
    models: state.settings.models ?? {},
    modelIncidents: state.modelIncidents ?? [],
    budget: state.budgetStop ?? null,
    knownIssues,
  };
}

/**
 * LangGraph's recursion limit for a run, from the plan size bound and the review rounds: a wave
 * is two supersteps (run_subtask, join) and a plan of n subtasks has at most n waves per round;
 * each round adds a review and possibly a re-plan (three planner attempts); approvals, questions
 * and answers add a bounded number more.
 */
export function recursionLimitFor(planSize: number, maxIterations: number): number {
  const planning = 3;
  const perRound = 2 * Math.max(1, planSize) + 1 + planning;
  const approvals = (1 + planning) * (maxIterations + 3) + 2 * (maxIterations + 1);
  return 1 + planning + maxIterations * perRound + approvals + 10;
}
