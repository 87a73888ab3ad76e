import { describeElicitation } from "../core/elicitation-prompt.js";
import { approvalCard } from "../core/approval-card.js";
import { InputError } from "../core/errors.js";
import type { InterruptInfo, InterruptKind } from "../core/run.js";
import { preview, truncate } from "../core/text.js";
import type { ResumeBody } from "./schemas.js";

/**
 * What a run waiting for a person asks, in words a protocol client can show (an MCP host's
 * elicitation form, an A2A `input-required` message), and how a reply in those protocols becomes
 * the REST API's resume body. One place for MCP and A2A, so both ask and read alike.
 */

/** A person's reply, from a form or a message: a decision word and its text. */
export interface PersonReply {
  decision?: string;
  feedback?: string;
  answer?: string;
}

const APPROVALS: ReadonlySet<InterruptKind> = new Set(["plan-approval", "answer-approval", "tool-approval"]);

/** Whether the interrupt is a yes/no approval (else a question that wants an answer). */
export function isApproval(kind: InterruptKind): boolean {
  return APPROVALS.has(kind);
}

interface PlanLine {
  id?: string;
  label?: string;
  agent?: string;
}

/** The question a waiting run asks, in words, with what it is about. */
export function describeInterrupt(interrupt: InterruptInfo): string {
  const payload = interrupt.payload;
  switch (interrupt.kind) {
    case "plan-approval": {
      const plan = Array.isArray(payload.plan) ? (payload.plan as PlanLine[]) : [];
      const lines = plan.slice(0, 20).map((subtask) => `- ${subtask.id ?? "?"} (${subtask.agent ?? "?"}): ${truncate(subtask.label ?? "", 200)}`);
      const more = plan.length > 20 ? `\n- … and ${plan.length - 20} more` : "";
      return `Approve this plan of ${plan.length} subtask${plan.length === 1 ? "" : "s"}? Reply approve, or reject with what to change.\n${lines.join("\n")}${more}`;
    }
    case "answer-approval":
      return `Approve this answer? Reply approve, or reject with what to change.\n\n${truncate(String(payload.answer ?? ""), 4_000)}`;
    case "tool-approval": {
      const tool = String(payload.tool ?? "a tool");
      const agent = String(payload.agent ?? "an agent");
      const remote = typeof payload.question === "string" ? `\n${agent} asks: ${truncate(payload.question, 2_000)}` : "";
      // The card a person reads anywhere (docs/trust.md): what it would do, and the untrusted source or the data that would leave.
      const card = approvalCard(payload).join("\n");
      return `Approve ${agent}'s call to ${tool} with ${preview(payload.args ?? {}, 500)}? Reply approve, or reject with a reason.\n${card}\n${String(payload.reason ?? "")}${remote}`.trim();
    }
    case "question":
      return String(payload.question ?? "The run asks a question; reply with the answer.");
    case "mcp-elicitation":
      return describeElicitation(payload);
  }
}



/**
 * A reply as the resume body for the interrupt's kind: an approval takes approve or reject (with
 * feedback); a question takes an answer (or reject). A reply in plain words is read by its first
 * word (`approve`, `yes`, `ok`; `reject`, `no`, with the rest as feedback); for a question the
 * words are the answer. Anything else is bad input, named.
 */
export function resumeBodyOf(kind: InterruptKind, reply: PersonReply | string): ResumeBody {
  if (kind === "mcp-elicitation") {
    // Words or a form's content: reject declines, anything else is the answer (checked against the form on resume).
    const text = typeof reply === "string" ? reply.trim() : (reply.answer ?? "");
    const decision = typeof reply === "string" ? (/^(reject|rejected|decline|declined)\b/i.test(text) && !text.startsWith("{") ? "reject" : "answer") : reply.decision?.toLowerCase();
    if (decision === "reject") return { decision: "reject" };
    if (text === "") throw new InputError("elicitation_answer_required", "the run waits for an answer to a tool server's question: reply with its fields as a JSON object ({} accepts the defaults), or reject");
    return { decision: "answer", answer: text };
  }
  const structured: PersonReply = typeof reply === "string" ? wordsOf(kind, reply) : reply;
  const decision = structured.decision?.toLowerCase();
  if (isApproval(kind)) {
    if (decision === "approve") return { decision: "approve" };
    if (decision === "reject") return structured.feedback ? { decision: "reject", feedback: structured.feedback } : { decision: "reject" };
    throw new InputError("decision_invalid", `the run waits for ${kind}: reply approve, or reject with feedback`);
  }
  if (decision === "reject") return structured.feedback ? { decision: "reject", feedback: structured.feedback } : { decision: "reject" };
  const answer = structured.answer ?? (decision === "answer" ? undefined : structured.feedback);
  if (!answer || answer.trim() === "") throw new InputError("answer_required", "the run waits for an answer to its question: reply with the answer (or reject)");
  return { decision: "answer", answer };
}

function wordsOf(kind: InterruptKind, text: string): PersonReply {
  const trimmed = text.trim();
  const match = /^(\w+)[\s:,.!-]*([\s\S]*)$/.exec(trimmed);
  const word = match?.[1]?.toLowerCase() ?? "";
  const rest = match?.[2]?.trim() ?? "";
  if (["approve", "approved", "yes", "ok", "okay", "lgtm"].includes(word)) return isApproval(kind) ? { decision: "approve" } : { decision: "answer", answer: trimmed };
  if (["reject", "rejected", "no", "deny"].includes(word)) return { decision: "reject", ...(rest ? { feedback: rest } : {}) };
  return isApproval(kind) ? { decision: word } : { decision: "answer", answer: trimmed };
}
