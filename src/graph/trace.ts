import { describeBudgetStop } from "../core/budget.js";
import type { EvidenceIndex } from "../core/evidence.js";
import { answerEvidence } from "./evidence.js";
import type { DecisionTrace, RunMetrics } from "../core/run.js";
import { planView } from "./deps.js";
import { routeOf } from "./route.js";
import { statusOf } from "./subtask-status.js";
import { openIssues } from "./route.js";
import type { State } from "./state.js";

/** Whether every subtask of the plan succeeded and the last review passed. */
export function workDone(state: Pick<State, "plan" | "results" | "reviews">): boolean {
  const verdict = state.reviews.at(-1);
  return state.plan.length > 0 && state.plan.every((subtask) => statusOf(state.results, subtask.id) === "done") && verdict !== undefined && verdict.passed;
}

/** The decision trace of a run, built from its state: plan and outcomes, verdicts, node visits, counts. */
export function buildTrace(state: State): DecisionTrace {
  const metrics: RunMetrics = state.metrics;
  const knownIssues = [...openIssues(state)];
  if (state.failure) knownIssues.push(state.failure);
  if (state.budgetStop) knownIssues.push(`the run's budget ran out (${describeBudgetStop(state.budgetStop)})`);
  if (state.recalled?.error) knownIssues.push(`long-term memory could not be read: ${state.recalled.error}`);
  const plan = planView(state);
  return {
    plan,
    reviews: state.reviews,
    nodes: state.nodes,
    toolCalls: state.toolCalls,
    llmCalls: metrics.llmCalls,
    toolCallCount: metrics.toolCalls,
    promptTokens: metrics.promptTokens,
    completionTokens: metrics.completionTokens,
    cachedPromptTokens: metrics.cachedPromptTokens ?? 0,
    reasoningTokens: metrics.reasoningTokens ?? 0,
    costUsd: metrics.costUsd,
    models: state.settings.models ?? {},
    modelIncidents: state.modelIncidents ?? [],
    budget: state.budgetStop ?? null,
    unfinished: plan
      .filter((subtask) => subtask.status !== "done")
      .map(({ id, label, status, failureKind, error }) => ({ id, label, status, ...(failureKind ? { failureKind } : {}), ...(error ? { error } : {}) })),
    planNotes: state.planNotes ?? [],
    board: state.board ?? [],
    knownIssues,
    evidence: evidenceOf(state),
    route: routeOf(state.plan, state.settings.review, state.planAnswer),
    reviewDecisions: state.reviewDecisions ?? [],
    answerTemplate: state.planAnswer ?? null,
    answerSource: state.answerSource ?? null,
    memories: state.recalled ? { retrieval: state.recalled.retrieval, items: state.recalled.items, ...(state.recalled.error ? { error: state.recalled.error } : {}) } : null,
  };
}

/** The evidence index of the run's answer over its outcomes, or null when it used no research. */
function evidenceOf(state: State): EvidenceIndex | null {
  return answerEvidence(state, state.answer);
}

/**
 * LangGraph's recursion limit for a run, from the plan size bound and the review rounds: a round
 * runs its subtasks in one `execute` superstep (more only when a drain or a budget holds some
 * back; counted generously as two per subtask), adds a review and possibly a re-plan (three
 * planner attempts); approvals, questions and answers add a bounded number more.
 */
export function recursionLimitFor(planSize: number, maxIterations: number): number {
  const planning = 3;
  const perRound = 2 * Math.max(1, planSize) + 1 + planning;
  const approvals = (1 + planning) * (maxIterations + 3) + 2 * (maxIterations + 1);
  return 1 + planning + maxIterations * perRound + approvals + 10;
}
