import { elicitationDecision } from "../core/elicitation-answer.js";
import { InputError } from "../core/errors.js";
import type { InterruptKind, ResumeDecision } from "../core/run.js";
import type { ResumeBody } from "./schemas.js";

/**
 * A person's answer over HTTP as the engine's decision, checked against what the run waits for:
 * editing a plan needs a plan, editing an answer needs the answer, a question needs an answer,
 * and a tool call waiting for approval is approved or rejected (the engine refuses anything else,
 * and the check here keeps that refusal in the request rather than in the background run).
 */
export function decisionFor(kind: InterruptKind, body: ResumeBody, payload: Record<string, unknown> = {}): ResumeDecision {
  if (kind === "mcp-elicitation") {
    // A tool server's question: answered with its form's content (checked here, in the request), or declined.
    const given: ResumeDecision =
      body.decision === "answer" ? { decision: "answer", answer: body.content !== undefined ? JSON.stringify(body.content) : (body.answer as string) } : body.decision === "reject" ? { decision: "reject" } : { decision: "approve" };
    return elicitationDecision(payload, given);
  }
  if (body.content !== undefined) throw new InputError("decision_invalid", "content answers a question of an MCP server (mcp-elicitation); this task waits for something else");
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
