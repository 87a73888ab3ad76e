import { interrupt, type LangGraphRunnableConfig, Overwrite } from "@langchain/langgraph";
import { runCritic } from "../../agents/critic.js";
import { UsageMeter } from "../../agents/model-call.js";
import { runSynthesizer } from "../../agents/synthesizer.js";
import { errorMessage } from "../../core/errors.js";
import type { SubtaskResult } from "../../core/plan.js";
import { type CriticVerdict, toVerdict } from "../../core/review.js";
import { ResumeDecision } from "../../core/run.js";
import { emit, type GraphDeps, outcomes } from "../deps.js";
import { allSettled, dependentsOf, statusOf } from "../schedule.js";
import type { State, Update } from "../state.js";

/**
 * The transition a verdict causes: nothing when it passes; otherwise a stop at max_iterations,
 * a fresh plan, or only the named subtasks (and those skipped because of them) sent back with
 * the critic's issues. A failing verdict with nothing to redo goes on to the answer.
 */
export function applyVerdict(state: State, verdict: CriticVerdict): { update: Update; anotherRound: boolean } {
  const done = (update: Update = {}) => ({ update, anotherRound: false });
  if (verdict.passed) return done();
  if (verdict.iteration >= state.settings.maxIterations) return done({ stopReason: "max_iterations" });
  if (verdict.replan) {
    const update: Update = {
      plan: [],
      planStatus: "none",
      planAttempts: 0,
      planErrors: [],
      planFeedback: verdict.issues.length > 0 ? verdict.issues : ["the critic asked for a different plan"],
      results: new Overwrite({}),
      redoFeedback: {},
    };
    return { update, anotherRound: true };
  }
  const ids = new Set(state.plan.map((subtask) => subtask.id));
  let redo = verdict.redo.filter((id) => ids.has(id));
  if (redo.length === 0) redo = state.plan.filter((subtask) => statusOf(state.results, subtask.id) === "failed").map((subtask) => subtask.id);
  if (redo.length === 0) return done();
  const reset: Record<string, SubtaskResult> = {};
  const skipped = dependentsOf(state.plan, redo).filter((id) => statusOf(state.results, id) === "skipped");
  for (const id of [...redo, ...skipped]) reset[id] = { status: "pending", attempts: state.results[id]?.attempts ?? 0 };
  const redoFeedback: Record<string, string[]> = {};
  for (const id of redo) {
    const mentioned = verdict.issues.filter((issue) => new RegExp(`\\b${id.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\b`).test(issue));
    redoFeedback[id] = mentioned.length > 0 ? mentioned : verdict.issues;
  }
  return { update: { results: reset, redoFeedback }, anotherRound: true };
}

/** Reviews the settled work and applies the verdict. A critic that fails yields a failing verdict with the reason, not a crash. */
export function createCriticNode(deps: GraphDeps) {
  return async (state: State, config: LangGraphRunnableConfig): Promise<Update> => {
    const meter = new UsageMeter();
    const iteration = state.reviews.length + 1;
    let verdict: CriticVerdict;
    try {
      const output = await runCritic(
        { model: deps.models.critic, task: state.task, outcomes: outcomes(state), iteration, maxIterations: state.settings.maxIterations },
        { meter, signal: config.signal },
      );
      verdict = toVerdict(output, iteration);
    } catch (error) {
      if (config.signal?.aborted) throw error;
      const scores = { accuracy: 0, completeness: 0, relevance: 0, logic: 0 };
      verdict = toVerdict({ scores, issues: [`the critic failed: ${errorMessage(error)}`], redo: [], replan: false }, iteration);
    }
    emit(config, { type: "critic-verdict", verdict });
    const { update, anotherRound } = applyVerdict(state, verdict);
    return {
      ...update,
      reviews: [verdict],
      needsReview: false,
      nodes: ["critic"],
      metrics: { nodeVisits: 1, reflectionCount: anotherRound ? 1 : 0, ...meter.usage },
    };
  };
}

/** The issues still open when the answer is written: those of the last verdict, unless it passed. */
export function openIssues(state: Pick<State, "reviews">): string[] {
  const last = state.reviews.at(-1);
  return last && !last.passed ? last.issues : [];
}

/** Writes the answer. If the synthesizer model fails, the answer lists the results and the run fails. */
export function createSynthesizerNode(deps: GraphDeps) {
  return async (state: State, config: LangGraphRunnableConfig): Promise<Update> => {
    const meter = new UsageMeter();
    const visit = (update: Update): Update => ({ ...update, nodes: ["synthesizer"], metrics: { nodeVisits: 1, ...meter.usage } });
    const views = outcomes(state);
    try {
      const answer = await runSynthesizer(
        { model: deps.models.synthesizer, task: state.task, context: state.context ?? undefined, outcomes: views, issues: openIssues(state), feedback: state.answerFeedback },
        {
          meter,
          signal: config.signal,
          callbacks: config.callbacks,
          // Tokens only when the caller watches live (InvokeOptions.streamAnswer): streaming costs a little per token.
          ...(config.configurable?.stream_answer === true ? { onToken: (text: string) => emit(config, { type: "answer-token", text }) } : {}),
        },
      );
      emit(config, { type: "answer", text: answer });
      return visit({ answer, answerStatus: "draft" });
    } catch (error) {
      if (config.signal?.aborted) throw error;
      const lines = views.map((view) => `- ${view.id} ${view.label}: ${view.status === "done" ? (view.summary ?? "done") : `${view.status} ${view.error ?? ""}`}`);
      const answer = [`The synthesizer failed (${errorMessage(error)}). Results of the subtasks:`, ...lines].join("\n");
      return visit({ answer, answerStatus: "draft", stopReason: state.stopReason ?? "failed", failure: `the synthesizer failed: ${errorMessage(error)}` });
    }
  };
}

/** Pauses for a person to approve, reject (with feedback: rewrite) or edit the answer. */
export function createApproveAnswerNode() {
  return (state: State): Update => {
    const parsed = ResumeDecision.safeParse(interrupt({ kind: "answer-approval", payload: { answer: state.answer ?? "" } }));
    const decision = parsed.success ? parsed.data : ({ decision: "reject", feedback: "the resume value was not a valid decision" } as const);
    const visit: Update = { nodes: ["approve_answer"], metrics: { nodeVisits: 1 } };
    switch (decision.decision) {
      case "approve":
      case "continue":
        return { ...visit, answerStatus: "approved" };
      case "edit":
        return decision.answer ? { ...visit, answer: decision.answer, answerStatus: "approved" } : { ...visit, answerStatus: "approved" };
      case "answer":
        return { ...visit, answer: decision.answer, answerStatus: "approved" };
      case "reject":
        if (!decision.feedback || state.rejections + 1 > state.settings.maxIterations) return { ...visit, stopReason: "rejected" };
        return {
          ...visit,
          answer: null,
          answerStatus: "none",
          answerFeedback: [...state.answerFeedback, decision.feedback],
          rejections: state.rejections + 1,
        };
    }
  };
}

/** The end of every run: the stop reason is set (completed unless something else stopped it). */
export function finalize(state: State): Update {
  const visit: Update = { finished: true, nodes: ["finalize"], metrics: { nodeVisits: 1 } };
  if (state.stopReason) return { ...visit, stopReason: state.stopReason };
  if (state.planStatus === "approved" && !allSettled(state.plan, state.results)) {
    return { ...visit, stopReason: "failed", failure: "no subtask can start: the dependencies cannot be satisfied" };
  }
  return { ...visit, stopReason: "completed" };
}
