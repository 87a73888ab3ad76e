import { interrupt, type LangGraphRunnableConfig } from "@langchain/langgraph";
import { runCritic } from "../../agents/critic.js";
import { UsageMeter } from "../../agents/model-call.js";
import { runSynthesizer } from "../../agents/synthesizer.js";
import { errorMessage } from "../../core/errors.js";
import { type CriticVerdict, toVerdict } from "../../core/review.js";
import { ResumeDecision } from "../../core/run.js";
import { emit, type GraphDeps, outcomes } from "../deps.js";
import type { State, Update } from "../state.js";

/** Reviews the settled work. A critic that fails yields a failing verdict with the reason, not a crash. */
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
      verdict = {
        ...toVerdict({ scores: { accuracy: 0, completeness: 0, relevance: 0, logic: 0 }, issues: [`the critic failed: ${errorMessage(error)}`], redo: [], replan: false }, iteration),
      };
    }
    emit(config, { type: "critic-verdict", verdict });
    return { reviews: [verdict], needsReview: false, nodes: ["critic"], metrics: { nodeVisits: 1, ...meter.usage } };
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
        { model: deps.models.synthesizer, task: state.task, context: state.context, outcomes: views, issues: openIssues(state), feedback: state.answerFeedback },
        { meter, signal: config.signal },
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
          answer: undefined,
          answerStatus: "none",
          answerFeedback: [...state.answerFeedback, decision.feedback],
          rejections: state.rejections + 1,
        };
    }
  };
}

/** The end of every run: the stop reason is set (completed unless something else stopped it). */
export function finalize(state: State): Update {
  return { stopReason: state.stopReason ?? "completed", finished: true, nodes: ["finalize"], metrics: { nodeVisits: 1 } };
}
