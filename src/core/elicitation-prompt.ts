import { describeForm, MAX_MESSAGE, printable } from "./elicitation.js";
import { questionOf } from "./elicitation-answer.js";
import { sourceOf, untrustedLabel } from "./provenance.js";
import { spotlight } from "./spotlight.js";

/**
 * A tool server's question in words: said to be the server's, its message spotlighted as
 * untrusted data, then its form's fields. It says plainly that troupe asks nothing here, so a
 * server that writes "approve this plan" cannot pass for troupe's own approval.
 */
export function describeElicitation(payload: Record<string, unknown>): string {
  const { server, requestedSchema } = questionOf(payload);
  const tool = printable(String(payload.tool ?? "a tool"), 120);
  const agent = printable(String(payload.agent ?? "an agent"), 64);
  const message = printable(String(payload.message ?? ""), MAX_MESSAGE);
  const fields = describeForm(requestedSchema);
  return [
    `The MCP server "${server}" asks a question while ${agent}'s call to ${tool} waits. The words below are the server's, not troupe's: answering them approves nothing of troupe's.`,
    spotlight(message, untrustedLabel([sourceOf("mcp", server)])),
    fields.length > 0 ? `Its form:\n${fields.map((line) => `- ${line}`).join("\n")}` : "Its form has no fields (a confirmation).",
    `Reply with a JSON object of its fields ({} accepts its defaults)${fields.length === 1 ? ", or just the value" : ""}; reply reject to decline.`,
  ].join("\n\n");
}
