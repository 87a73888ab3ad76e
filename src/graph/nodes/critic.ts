import { planAnswer } from "./synthesizer.js";
import { type LangGraphRunnableConfig, Overwrite } from "@langchain/langgraph";
import { runCritic } from "../../agents/critic.js";
import { isBudgetExhausted } from "../../core/budget.js";
import { errorMessage } from "../../core/errors.js";
import type { MissingFiles, SubtaskResult } from "../../core/plan.js";
import { isUntrusted } from "../../core/provenance.js";
import { combinePanel, type CriticOutput, type CriticVerdict, type PanelReview, toVerdict } from "../../core/review.js";
import { LIMITS } from "../../core/limits.js";
import { choiceId, routeFor } from "../../providers/registry.js";
import { currentArtifacts } from "../artifacts.js";
import { announceBudgetStop, callOptions, createMeter, emit, type GraphDeps, outcomeSources } from "../deps.js";
import { dependentsOf, statusOf } from "../subtask-status.js";
import { decideReview } from "../route.js";
import type { State, Update } from "../state.js";

/** Whether an issue names a subtask id as a word. */
function mentions(issue: string, id: string): boolean {
  return new RegExp(`\\b${id.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\b`).test(issue);
}

/**
 * The critic's issues as the planner may see them. The planner never reads untrusted text, and
 * a critic that read untrusted results wrote its issues under that data's influence: then the
 * planner is told only that a new plan was asked for (the issues stay in the trace).
 */
function plannerNotes(state: State, verdict: CriticVerdict): string[] {
  if (Object.values(state.results).some((result) => isUntrusted(result.provenance))) {
    return [`the critic asked for a different plan; its ${verdict.issues.length} note(s) are not shown here because it had read untrusted results (see the trace)`];
  }
  return verdict.issues.length > 0 ? verdict.issues : ["the critic asked for a different plan"];
}

/**
 * The transition a verdict causes: nothing when it passes; otherwise a stop at max_iterations,
 * a fresh plan, or only the named subtasks sent back with the critic's issues — with the
 * subtasks downstream of them, whose inputs change. A mapped subtask with failed items is sent
 * back to run only those items. A failing verdict that names nothing to redo goes on to the
 * answer, with its issues: the critic judged that another round would not help.
 */
export function applyVerdict(state: State, verdict: CriticVerdict): { update: Update; anotherRound: boolean } {
  const done = (update: Update = {}) => ({ update, anotherRound: false });
  if (verdict.passed) return done();
  if (verdict.iteration >= state.settings.maxIterations) return done({ stopReason: "max_iterations" });
  // A person's rejection and a model's refusal stand: neither is asked again without a new plan.
  const rejected = state.plan.filter((subtask) => ["rejected", "refused"].includes(state.results[subtask.id]?.failureKind ?? ""));
  if (verdict.replan) {
    // The person's rejections go to the planner, which must find another way.
    const rejections = rejected.map((subtask) =>
      state.results[subtask.id]?.failureKind === "refused"
        ? `the model refused ${subtask.id} (${subtask.label}): ${state.results[subtask.id]?.error ?? ""}`
        : `a person rejected a tool call of ${subtask.id} (${subtask.label}): ${state.results[subtask.id]?.error ?? ""}`,
    );
    const update: Update = {
      plan: [],
      planStatus: "none",
      planAttempts: 0,
      planErrors: [],
      planFeedback: [...plannerNotes(state, verdict), ...rejections],
      results: new Overwrite({}),
      redoFeedback: {},
    };
    return { update, anotherRound: true };
  }
  // A call a person rejected is not tried again without a new plan.
  const ids = new Set(state.plan.filter((subtask) => !rejected.includes(subtask)).map((subtask) => subtask.id));
  const redo = verdict.redo.filter((id) => ids.has(id));
  if (redo.length === 0) return done();
  const reset: Record<string, SubtaskResult> = {};
  const downstream = dependentsOf(state.plan, redo).filter((id) => statusOf(state.results, id) !== "pending");
  for (const id of [...redo, ...downstream]) {
    const previous = state.results[id];
    const result: SubtaskResult = { status: "pending", attempts: previous?.attempts ?? 0 };
    if (redo.includes(id) && previous?.map && previous.map.failed > 0) result.retryFailedItems = true;
    reset[id] = result;
  }
  const redoFeedback: Record<string, string[]> = {};
  for (const id of redo) {
    const mentioned = verdict.issues.filter((issue) => mentions(issue, id));
    redoFeedback[id] = mentioned.length > 0 ? mentioned : verdict.issues;
  }
  return { update: { results: reset, redoFeedback }, anotherRound: true };
}

/** Reviews the settled work and applies the verdict. A critic that fails yields a failing verdict with the reason, not a crash. */
export function createCriticNode(deps: GraphDeps) {
  return async (state: State, config: LangGraphRunnableConfig): Promise<Update> => {
    const meter = createMeter(config);
    const iteration = state.reviews.length + 1;
    let verdict: CriticVerdict;
    // The files as they are now: one gone or changed since it was written says so.
    const files = await currentArtifacts(deps.workspace, state.results);
    // The run's review mode decides whether the critic is called at all (graph/route.ts).
    const decision = decideReview(state, files);
    emit(config, { type: "review-decide", ...decision });
    if (decision.review === "skipped") {
      // Nothing for a model to judge, and the plan stated its answer: filled here, without a synthesizer's step.
      const answered = await planAnswer(state, deps, config);
      return { needsReview: false, reviewDecisions: [decision], ...answered, metrics: { nodeVisits: 1 } };
    }
    const outcomes = await outcomeSources(state, deps.stash);
    for (const outcome of outcomes) if (files[outcome.id]) outcome.artifacts = files[outcome.id];
    const reviewers = state.settings.reviewers ?? 1;
    const route = routeFor(deps.models, "critic");
    const review = (panel?: { index: number; size: number }): Promise<CriticOutput> =>
      runCritic(
        {
          model: route,
          task: state.task,
          outcomes,
          iteration,
          maxIterations: state.settings.maxIterations,
          promptBudget: state.settings.promptBudget,
          ...(panel ? { panel } : {}),
        },
        callOptions(deps, state.runId, config, meter),
      );
    try {
      if (reviewers > 1) {
        // A panel: every reviewer judges on its own, at once; the verdicts are combined by vote.
        const model = route.candidates[0] ? choiceId(route.candidates[0].choice) : undefined;
        const settled = await Promise.allSettled(Array.from({ length: reviewers }, (_, index) => review({ index: index + 1, size: reviewers })));
        const budget = settled.find((outcome) => outcome.status === "rejected" && isBudgetExhausted(outcome.reason));
        if (budget) throw (budget as PromiseRejectedResult).reason;
        if (config.signal?.aborted) throw config.signal.reason;
        const reviews: PanelReview[] = settled.map((outcome, index) => {
          const reviewer = { reviewer: `reviewer-${index + 1}`, ...(model ? { model } : {}) };
          return outcome.status === "fulfilled"
            ? { ...reviewer, verdict: withUnfinishedWork(toVerdict(outcome.value, iteration), outcomes) }
            : { ...reviewer, error: errorMessage(outcome.reason) };
        });
        verdict = combinePanel(reviews, iteration, state.settings.consensusThreshold ?? LIMITS.consensusThreshold);
      } else {
        verdict = toVerdict(await review(), iteration);
      }
    } catch (error) {
      if (config.signal?.aborted) throw error;
      if (isBudgetExhausted(error)) {
        announceBudgetStop(deps, state.runId, config, error);
        const metrics = { nodeVisits: 1, ...meter.usage };
        return { needsReview: false, reviewDecisions: [decision], stopReason: "budget_exhausted", budgetStop: error.stop, nodes: ["critic"], modelIncidents: meter.incidents, metrics };
      }
      const scores = { accuracy: 0, completeness: 0, relevance: 0, logic: 0 };
      verdict = toVerdict({ scores, issues: [`the critic failed: ${errorMessage(error)}`], redo: [], replan: false }, iteration);
    }
    verdict = withUnfinishedWork(verdict, outcomes);
    emit(config, { type: "critic-verdict", verdict });
    const { update, anotherRound } = applyVerdict(state, verdict);
    return {
      ...update,
      reviews: [verdict],
      reviewDecisions: [decision],
      needsReview: false,
      nodes: ["critic"],
      modelIncidents: meter.incidents,
      metrics: { nodeVisits: 1, reflectionCount: anotherRound ? 1 : 0, ...meter.usage },
    };
  };
}

/**
 * A verdict cannot pass while work the answer rests on is not done: whatever the scores, a
 * failed or skipped subtask keeps the review from passing, and is named in its issues. So does a
 * map whose items were to make files the workspace does not hold (a partly failed map is done for
 * its dependents, but not for the files it was asked for); it is sent back to run those items again.
 */
export function withUnfinishedWork(verdict: CriticVerdict, outcomes: ReadonlyArray<{ id: string; status: string; error?: string; missingFiles?: MissingFiles }>): CriticVerdict {
  const unfinished = outcomes.filter((outcome) => outcome.status !== "done");
  const incomplete = outcomes.filter((outcome) => outcome.status === "done" && outcome.missingFiles !== undefined);
  if (unfinished.length === 0 && incomplete.length === 0) return verdict;
  const named = unfinished.filter((outcome) => !verdict.issues.some((issue) => mentions(issue, outcome.id)));
  const issues = [
    ...verdict.issues,
    ...named.map((outcome) => `${outcome.id} is ${outcome.status}${outcome.error ? `: ${outcome.error}` : ""}`),
    ...incomplete.map(({ id, missingFiles: missing }) => `${id}: ${missing?.items} of its items did not leave the files they were to make (${missing?.paths.join(", ")}${(missing?.items ?? 0) > (missing?.paths.length ?? 0) ? ", …" : ""})`),
  ];
  const redo = [...verdict.redo, ...incomplete.map((outcome) => outcome.id).filter((id) => !verdict.redo.includes(id))];
  return { ...verdict, issues, redo, passed: false };
}

/** The issues still open when the answer is written: those of the last verdict, unless it passed. */
