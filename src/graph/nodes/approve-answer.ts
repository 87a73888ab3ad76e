import { interrupt } from "@langchain/langgraph";
import { type AnswerSource, ResumeDecision } from "../../core/run.js";
import type { State, Update } from "../state.js";

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
