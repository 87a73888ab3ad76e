import { interrupt, type LangGraphRunnableConfig, Overwrite } from "@langchain/langgraph";
import { runCritic } from "../../agents/critic.js";
import { bestAnswerSoFar, runSynthesizer } from "../../agents/synthesizer.js";
import { isBudgetExhausted } from "../../core/budget.js";
import { errorMessage } from "../../core/errors.js";
import type { MissingFiles, PlannedSubtask, SubtaskResult } from "../../core/plan.js";
import { isUntrusted } from "../../core/provenance.js";
import { combinePanel, type CriticOutput, type CriticVerdict, type PanelReview, toVerdict } from "../../core/review.js";
import { LIMITS } from "../../core/limits.js";
import { type AnswerFormat, type AnswerSource, ResumeDecision } from "../../core/run.js";
import { choiceId, routeFor, routeForModel } from "../../providers/registry.js";
import { currentArtifacts } from "../artifacts.js";
import { announceBudgetStop, callOptions, createMeter, emit, type GraphDeps, outcomeSources, planView } from "../deps.js";
import { allSettled, dependentsOf, statusOf } from "../subtask-status.js";
import { evidenceSection } from "../../core/evidence.js";
import { answerEvidence, researchSources } from "../evidence.js";
import { unwrittenSection } from "../unwritten.js";
import { decideReview, unreviewedIssues, workerAnswer } from "../route.js";
import { templateAnswer } from "../template-answer.js";
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
export function openIssues(state: Pick<State, "reviews">): string[] {
  const last = state.reviews.at(-1);
  return last && !last.passed ? last.issues : [];
}

/** Written by code after an answer: the evidence behind a research answer, and files that could not be written ("" when neither). */
async function codeTail(state: State, deps: GraphDeps, answer: string, evidence: boolean): Promise<string> {
  const index = evidence ? answerEvidence(state, answer) : null;
  const parts = [index ? evidenceSection(index) : "", await unwrittenSection(state, deps.stash)].filter(Boolean);
  return parts.length === 0 ? "" : `\n\n${parts.join("\n\n")}`;
}

/**
 * The plan's answer template filled by code from the verified results (graph/template-answer.ts),
 * as the answer's update — or, when it cannot be used, why not (for the synthesizer that
 * words the answer instead to say), or nothing when the plan gave none. It reads as text: what
 * fills it is tool results, which Markdown would misread (14*3*2 is no emphasis).
 */
async function planAnswer(state: State, deps: GraphDeps, config: LangGraphRunnableConfig): Promise<Update & { unused?: string }> {
  const templated = await templateAnswer(state, deps.stash);
  if (!templated) return {};
  if ("unused" in templated) return { unused: templated.unused };
  // No evidence index: every value in it is a verified result put there by code, and its words are the plan's.
  const tail = await codeTail(state, deps, templated.text, false);
  // Whole at once, as any answer not written token by token: its `answer` event carries it (no tokens).
  const answer = `${templated.text}${tail}`;
  emit(config, { type: "answer", text: answer, format: "text" });
  const answerSource: AnswerSource = { by: "template", reason: "the plan stated its answer: filled by code from the verified results", ...(templated.untrusted ? { untrusted: templated.untrusted } : {}) };
  return { answer, answerFormat: "text", answerStatus: "draft", answerSource };
}

/**
 * Writes the answer, streaming it as `answer-token` events when the provider streams. Once the
 * budget is spent, the best answer so far is written by code, so it costs nothing more. If the
 * synthesizer model fails, the answer lists the results and the run fails. Each answer carries
 * how it is meant to be read, by who wrote it: a language model's is Markdown, one written by
 * rules or code (the offline model, a tool's result, a listing, JSON) is text.
 */
export function createSynthesizerNode(deps: GraphDeps) {
  return async (state: State, config: LangGraphRunnableConfig): Promise<Update> => {
    const meter = createMeter(config);
    const visit = (update: Update): Update => ({ ...update, nodes: ["synthesizer"], modelIncidents: meter.incidents, metrics: { nodeVisits: 1, ...meter.usage } });
    const views = planView(state);
    // Whether the answer went out as tokens: what code adds after it then streams too; otherwise the whole answer comes in its `answer` event only.
    let streamed = false;
    const token = (text: string): void => {
      streamed = true;
      emit(config, { type: "answer-token", text });
    };
    const appended = async (answer: string, evidence: boolean): Promise<string> => {
      const tail = await codeTail(state, deps, answer, evidence);
      if (tail && streamed) token(tail);
      return `${answer}${tail}`;
    };
    const answered = (answer: string, answerFormat: AnswerFormat, answerSource: AnswerSource, update: Update = {}): Update => {
      emit(config, { type: "answer", text: answer, format: answerFormat });
      return visit({ answer, answerFormat, answerSource, answerStatus: "draft", ...update });
    };
    if (state.stopReason === "budget_exhausted") {
      return answered(await appended(bestAnswerSoFar(state.task, views, state.budgetStop, openIssues(state)), false), "text", { by: "code", reason: "the budget ran out: the results so far, listed by code" });
    }
    // The plan stated its answer: filled by code from the verified results (no model call).
    const { unused, ...fromPlan } = await planAnswer(state, deps, config);
    if (fromPlan.answer !== undefined) return visit(fromPlan);
    // The fast route: the one worker was told its result is the answer; when it is text, it is (no model call).
    const fromWorker = await workerAnswer(state, deps.stash);
    if (fromWorker !== undefined) {
      token(fromWorker.text);
      return answered(await appended(fromWorker.text, true), workerFormat(deps, fromWorker.subtask), { by: "worker", reason: "the fast route: the plan's one worker's result" });
    }
    const written: AnswerSource = {
      by: "synthesizer",
      reason: unused !== undefined ? `the plan's answer could not be used: ${unused}` : "the plan gave no answer of its own: a model words it",
    };
    try {
      const input = {
        model: routeFor(deps.models, "synthesizer"),
        task: state.task,
        context: state.context ?? undefined,
        outcomes: await outcomeSources(state, deps.stash),
        issues: [...openIssues(state), ...unreviewedIssues(state)],
        feedback: state.answerFeedback,
        promptBudget: state.settings.promptBudget,
        onToken: token,
        cite: researchSources(state).map((source) => source.id),
      };
      const schema = state.settings.outputSchema;
      if (schema) {
        // A typed answer: JSON valid against the run's schema, or a failed step with the validation errors.
        const typed = await runSynthesizer({ ...input, outputSchema: schema }, callOptions(deps, state.runId, config, meter));
        return answered(typed.text, typed.format, written, { output: typed.output ?? null });
      }
      const answer = await runSynthesizer(input, callOptions(deps, state.runId, config, meter));
      return answered(await appended(answer.text, true), answer.format, written);
    } catch (error) {
      if (config.signal?.aborted) throw error;
      if (isBudgetExhausted(error)) {
        announceBudgetStop(deps, state.runId, config, error);
        const answer = await appended(bestAnswerSoFar(state.task, views, error.stop, openIssues(state)), false);
        return answered(answer, "text", { by: "code", reason: "the budget ran out before the synthesizer answered: the results so far, listed by code" }, { stopReason: "budget_exhausted", budgetStop: error.stop });
      }
      const lines = views.map((view) => `- ${view.id} ${view.label}: ${view.status === "done" ? (view.summary ?? "done") : `${view.status} ${view.error ?? ""}`}`);
      const answer = await appended([`The synthesizer failed (${errorMessage(error)}). Results of the subtasks:`, ...lines].join("\n"), false);
      return visit({
        answer,
        answerFormat: "text",
        answerStatus: "draft",
        stopReason: state.stopReason ?? "failed",
        failure: `the synthesizer failed: ${errorMessage(error)}`,
        answerSource: { by: "code", reason: "the synthesizer failed: the results listed by code" },
      });
    }
  };
}

/** How a worker's result reads as the answer: as its agent's model writes (Markdown for a language model, text for the offline model's rules). */
function workerFormat(deps: GraphDeps, subtask: Pick<PlannedSubtask, "agent">): AnswerFormat {
  const model = deps.agents.get(subtask.agent)?.model;
  return routeForModel(deps.models, model, "worker").candidates[0]?.answerFormat ?? "markdown";
}

const PERSON_WROTE: AnswerSource = { by: "person", reason: "a person wrote the answer when asked to approve it" };

/** Pauses for a person to approve, reject (with feedback: rewrite) or edit the answer. */
export function createApproveAnswerNode() {
  return (state: State): Update => {
    const parsed = ResumeDecision.safeParse(interrupt({ kind: "answer-approval", payload: { answer: state.answer ?? "", format: state.answerFormat ?? "markdown" } }));
    const decision = parsed.success ? parsed.data : ({ decision: "reject", feedback: "the resume value was not a valid decision" } as const);
    const visit: Update = { nodes: ["approve_answer"], metrics: { nodeVisits: 1 } };
    switch (decision.decision) {
      case "approve":
      case "continue":
        return { ...visit, answerStatus: "approved" };
      // A person's own words for the answer are Markdown (sanitised where shown), whoever wrote the draft.
      case "edit":
        return decision.answer ? { ...visit, answer: decision.answer, answerFormat: "markdown", answerStatus: "approved", answerSource: PERSON_WROTE } : { ...visit, answerStatus: "approved" };
      case "answer":
        return { ...visit, answer: decision.answer, answerFormat: "markdown", answerStatus: "approved", answerSource: PERSON_WROTE };
      case "reject":
        if (!decision.feedback || state.rejections + 1 > state.settings.maxIterations) return { ...visit, stopReason: "rejected" };
        return {
          ...visit,
          answer: null,
          answerStatus: "none",
          answerFeedback: [...state.answerFeedback, decision.feedback],
          rejections: state.rejections + 1,
        };
      case "elicitation":
        // Only a tool server's question takes this (the engine refuses it here): nothing approved it.
        return { ...visit, stopReason: "rejected" };
    }
  };
}

/**
 * The end of every run: the stop reason is set. A run is `completed` only when every subtask
 * succeeded and the last review passed; otherwise it `failed` — or was `rejected`, when a
 * person's rejection of a tool call is what left work undone — naming the subtasks that did
 * not finish.
 */
export function finalize(state: State): Update {
  const visit: Update = { finished: true, nodes: ["finalize"], metrics: { nodeVisits: 1 } };
  if (state.stopReason) return { ...visit, stopReason: state.stopReason };
  if (state.planStatus === "approved" && !allSettled(state.plan, state.results)) {
    return { ...visit, stopReason: "failed", failure: "no subtask can start: the dependencies cannot be satisfied" };
  }
  const unfinished = state.plan.filter((subtask) => statusOf(state.results, subtask.id) !== "done");
  const verdict = state.reviews.at(-1);
  if (unfinished.length === 0 && (verdict === undefined || verdict.passed)) return { ...visit, stopReason: "completed" };
  const rejected = unfinished.some((subtask) => state.results[subtask.id]?.failureKind === "rejected");
  const failure =
    unfinished.length > 0
      ? `not done: ${unfinished.map((subtask) => `${subtask.id} ${statusOf(state.results, subtask.id)}${state.results[subtask.id]?.error ? ` (${state.results[subtask.id]?.error})` : ""}`).join("; ")}`
      : `the review did not pass (confidence ${verdict?.confidence ?? 0})`;
  return { ...visit, stopReason: rejected ? "rejected" : "failed", failure };
}
