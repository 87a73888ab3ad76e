import { interrupt, type LangGraphRunnableConfig } from "@langchain/langgraph";
import { z } from "zod";
import { PlannedSubtask } from "../../core/plan.js";
import { ResumeDecision, type InterruptInfo } from "../../core/run.js";
import { emit, type GraphDeps, planView } from "../deps.js";
import type { State, Update } from "../state.js";
import { announceRoute, checkPlan } from "./planner.js";

/** Interrupts the run; the engine reports the request and validates the person's decision on resume. */
function ask(info: InterruptInfo): ResumeDecision {
  const parsed = ResumeDecision.safeParse(interrupt(info));
  return parsed.success ? parsed.data : { decision: "reject", feedback: "the resume value was not a valid decision" };
}

/** Pauses for a person to approve, reject (with feedback: re-plan) or edit the plan. */
export function createApprovePlanNode(deps: GraphDeps) {
  return (state: State, config: LangGraphRunnableConfig): Update => {
    const decision = ask({ kind: "plan-approval", payload: { plan: planView(state), ...(state.planAnswer ? { answer: state.planAnswer } : {}) } });
    const visit: Update = { nodes: ["approve_plan"], metrics: { nodeVisits: 1 } };
    switch (decision.decision) {
      case "approve":
      case "continue":
        return { ...visit, planStatus: "approved" };
      case "edit": {
        const edited = z.array(PlannedSubtask).safeParse(decision.plan ?? []);
        // The plan's answer stays when it still reads for the edited steps.
        const checked = edited.success ? checkPlan(edited.data, deps, state, config, state.planAnswer ?? undefined) : { errors: [z.prettifyError(edited.error)] };
        if ("subtasks" in checked) {
          emit(config, { type: "plan-ready", attempt: state.planAttempts, subtasks: checked.subtasks, ...(checked.notes.length > 0 ? { notes: checked.notes } : {}), ...(checked.answer !== undefined ? { answer: checked.answer } : {}) });
          announceRoute(config, checked.subtasks, state.settings.review, checked.answer);
          return { ...visit, plan: checked.subtasks, planNotes: checked.notes, planAnswer: checked.answer ?? null, planStatus: "approved" };
        }
        return replan(state, visit, [`The person's edited plan was invalid: ${checked.errors.join("; ")}`]);
      }
      case "answer":
        return replan(state, visit, [decision.answer]);
      case "reject":
        if (!decision.feedback) return { ...visit, stopReason: "rejected" };
        return replan(state, visit, [decision.feedback]);
      case "elicitation":
        // Only a tool server's question takes this (the engine refuses it here): nothing approved it.
        return { ...visit, stopReason: "rejected" };
    }
  };
}

/** Back to the planner with a person's words, added to what it was told before (a second rejection's feedback does not undo the first's). */
function replan(state: State, visit: Update, feedback: string[]): Update {
  if (state.rejections + 1 > state.settings.maxIterations) return { ...visit, stopReason: "rejected" };
  return { ...visit, planStatus: "none", planAttempts: 0, planErrors: [], planFeedback: [...state.planFeedback, ...feedback].slice(-20), rejections: state.rejections + 1 };
}

/** Pauses to put the planner's question to a person; the answer goes back to the planner. */
export function createAskHumanNode() {
  return (state: State): Update => {
    const decision = ask({ kind: "question", payload: { question: state.question ?? "" } });
    const visit: Update = { nodes: ["ask_human"], metrics: { nodeVisits: 1 } };
    const answer =
      decision.decision === "answer"
        ? decision.answer
        : decision.decision === "edit" && decision.answer
          ? decision.answer
          : decision.decision === "reject"
            ? undefined
            : "(no answer; proceed with your best judgement)";
    if (answer === undefined) return { ...visit, stopReason: "rejected" };
    return { ...visit, humanAnswers: [`${state.question ?? ""} → ${answer}`], planStatus: "none", planAttempts: 0, question: null };
  };
}
