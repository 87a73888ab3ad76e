import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { ElicitRequestFormParams, ServerNotification, ServerRequest } from "@modelcontextprotocol/sdk/types.js";
import { questionOf } from "../../core/elicitation-answer.js";
import type { InterruptKind } from "../../core/run.js";
import { isApproval, resumeBodyOf } from "../interrupt-prompt.js";
import type { ResumeBody } from "../schemas.js";
import type { McpContext } from "./mcp-context.js";
import type { RunOutcome } from "./run-outcome.js";

/** The form a waiting run's question becomes: approve or reject (with feedback) for an approval, an answer for a question, a tool server's own form for its question. */
function formFor(kind: InterruptKind, question: string, payload: Record<string, unknown>): ElicitRequestFormParams {
  if (kind === "mcp-elicitation") {
    // The server's form, as troupe rebuilt it; its words come inside troupe's message that says whose they are.
    return { mode: "form", message: question, requestedSchema: questionOf(payload).requestedSchema as ElicitRequestFormParams["requestedSchema"] };
  }
  if (isApproval(kind)) {
    return {
      mode: "form",
      message: question,
      requestedSchema: {
        type: "object",
        properties: {
          decision: { type: "string", title: "Decision", enum: ["approve", "reject"], enumNames: ["Approve", "Reject"] },
          feedback: { type: "string", title: "Feedback", description: "when rejecting: what to change" },
        },
        required: ["decision"],
      },
    };
  }
  return {
    mode: "form",
    message: question,
    requestedSchema: { type: "object", properties: { answer: { type: "string", title: "Answer", minLength: 1 } }, required: ["answer"] },
  };
}

/**
 * Asks the person at the client what a waiting run asks, when the client can be asked
 * (elicitation). Accepted: the reply as a resume body. Declined: a rejection. Dismissed, not
 * supported, timed out, or a reply that does not fit: undefined, and the run keeps waiting for
 * `resume_run`.
 */
export async function askThroughElicitation(
  context: McpContext,
  interrupt: NonNullable<RunOutcome["interrupt"]>,
  extra: RequestHandlerExtra<ServerRequest, ServerNotification>,
  timeoutMs: number,
): Promise<ResumeBody | undefined> {
  const server = context.server.server;
  if (!server.getClientCapabilities()?.elicitation || timeoutMs <= 0) return undefined;
  const kind = interrupt.kind as InterruptKind;
  try {
    const result = await server.elicitInput(formFor(kind, interrupt.question, interrupt.payload ?? {}), { relatedRequestId: extra.requestId, timeout: timeoutMs, signal: extra.signal });
    if (result.action === "decline") return kind === "mcp-elicitation" ? { decision: "reject" } : { decision: "reject", feedback: "declined at the client" };
    if (result.action !== "accept") return undefined;
    if (kind === "mcp-elicitation") return { decision: "answer", content: (result.content ?? {}) as NonNullable<ResumeBody["content"]> };
    const content = (result.content ?? {}) as Record<string, unknown>;
    const text = (key: string): string | undefined => (typeof content[key] === "string" && (content[key] as string).trim() !== "" ? (content[key] as string) : undefined);
    return resumeBodyOf(kind, isApproval(kind) ? { decision: text("decision") ?? "", ...(text("feedback") ? { feedback: text("feedback") } : {}) } : { decision: "answer", ...(text("answer") ? { answer: text("answer") } : {}) });
  } catch {
    return undefined;
  }
}
