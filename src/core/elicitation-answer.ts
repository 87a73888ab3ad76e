import { type ElicitationForm, type ElicitationQuestion, checkContent, contentFromText, formOf } from "./elicitation.js";
import { InputError } from "./errors.js";
import type { ResumeDecision } from "./run.js";

type ElicitationDecision = Extract<ResumeDecision, { decision: "elicitation" }>;

/** The question a waiting run's `mcp-elicitation` interrupt holds, read back from its payload (its form rebuilt once more). */
export function questionOf(payload: Record<string, unknown>): Pick<ElicitationQuestion, "server" | "fingerprint" | "requestedSchema"> {
  const rebuilt = formOf(payload.requestedSchema);
  const form: ElicitationForm = "form" in rebuilt ? rebuilt.form : { type: "object", properties: {} };
  return { server: String(payload.server ?? "?"), fingerprint: String(payload.fingerprint ?? ""), requestedSchema: form };
}

/**
 * A person's decision at a tool server's question, as the answer the server is sent: an answer
 * (a JSON object of the form's fields, or words for a one-field form) accepts, checked against the
 * form with its defaults filled in; reject declines. Approve is refused: the question is the
 * server's, not an approval of troupe's, and accepting it must be said with its content (`{}`
 * accepts the defaults). A bad answer is an InputError naming each wrong field, so the person
 * hears of it where they answered and the run keeps waiting.
 */
export function elicitationDecision(payload: Record<string, unknown>, decision: ResumeDecision): ElicitationDecision {
  const question = questionOf(payload);
  const { fingerprint } = question;
  const accepted = (given: unknown): ElicitationDecision => {
    const checked = checkContent(question.requestedSchema, given);
    if ("violations" in checked) {
      throw new InputError("elicitation_answer_invalid", `the answer does not fit the form the MCP server "${question.server}" asked for: ${checked.violations.join("; ")}`, { violations: checked.violations });
    }
    return { decision: "elicitation", action: "accept", content: checked.content, fingerprint };
  };
  switch (decision.decision) {
    case "elicitation":
      if (decision.fingerprint !== fingerprint) throw new InputError("elicitation_answer_invalid", `the answer was given to another question than the one the run waits on (from the MCP server "${question.server}")`);
      return decision.action === "accept" ? accepted(decision.content ?? {}) : { decision: "elicitation", action: decision.action, fingerprint };
    case "reject":
      return { decision: "elicitation", action: "decline", fingerprint };
    case "answer": {
      const read = contentFromText(question.requestedSchema, decision.answer);
      if ("violations" in read) throw new InputError("elicitation_answer_invalid", `the answer to the MCP server "${question.server}" could not be read: ${read.violations.join("; ")}`, { violations: read.violations });
      return accepted(read.content);
    }
    default:
      throw new InputError(
        "elicitation_answer_required",
        `the run waits for an answer to a question of the MCP server "${question.server}", which is not an approval of troupe's: answer it with its fields (--answer '{…}'; {} accepts its defaults) or decline with --reject`,
      );
  }
}
