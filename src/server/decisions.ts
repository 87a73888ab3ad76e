import { InputError } from "../core/errors.js";
import type { InterruptKind, ResumeDecision } from "../core/run.js";
import type { ResumeBody } from "./schemas.js";

/**
 * A person's answer over HTTP as the engine's decision, checked against what the run waits for:
 * editing a plan needs a plan, editing an answer needs the answer, a question needs an answer,
 * and a tool call waiting for approval is approved or rejected (the engine refuses anything else,
 * and the check here keeps that refusal in the request rather than in the background run).
 */
export function decisionFor(kind: InterruptKind, body: ResumeBody): ResumeDecision {
  if (kind === "tool-approval" && body.decision !== "approve" && body.decision !== "reject") {
    throw new InputError("decision_invalid", "the task waits for a tool call to be approved: send decision approve, or reject (with feedback for the agent)");
  }
  switch (body.decision) {
    case "approve":
      if (kind === "question") throw new InputError("answer_required", "the task waits for an answer to a question: send decision answer with an answer (or reject)");
      return { decision: "approve" };
    case "reject":
      return body.feedback ? { decision: "reject", feedback: body.feedback } : { decision: "reject" };
    case "answer":
      return { decision: "answer", answer: body.answer as string };
    case "edit":
      if (kind === "plan-approval") {
        if (!body.plan) throw new InputError("plan_required", "editing a plan needs the plan to run (plan: a list of subtasks)");
        return { decision: "edit", plan: body.plan };
      }
      if (!body.answer) throw new InputError("answer_required", `editing at ${kind} needs the answer text (answer)`);
      return { decision: "edit", answer: body.answer };
  }
}
