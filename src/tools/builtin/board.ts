import { type BoardMessage, BoardPostArgs, BoardReadArgs, describeAudience } from "../../core/board.js";
import { ToolError } from "../../core/errors.js";
import { joinLabels, LabelledValue } from "../../core/provenance.js";
import { truncate } from "../../core/text.js";
import { type BoardAccess, defineTool, type ToolContext } from "../define-tool.js";
import { argumentLabel } from "../trust-policy.js";

function boardOf(context: ToolContext): BoardAccess {
  if (!context.board) throw new ToolError("no_board", "the shared board exists only inside a run's subtask");
  return context.board;
}

/** A message as a reader sees it: who from, to whom, the text. */
function shown(message: BoardMessage): Record<string, unknown> {
  return { id: message.id, from: message.from, agent: message.agent, to: describeAudience(message.audience), text: message.text };
}

/**
 * Posts a message on the run's shared board: to a subtask (by id), to every subtask of an agent,
 * to a topic, or to everyone. The message is kept with the run (checkpointed) and shown in its
 * trace; the board is bounded (messages per run, per subtask, characters per message).
 */
export const boardPostTool = defineTool({
  name: "board_post",
  description: "Post a message on the run's shared board for other subtasks: to a subtask id or an agent name (to), to a topic, or to everyone (neither).",
  schema: BoardPostArgs,
  permission: "NONE",
  powers: ["run.write"],
  // Posting again gives the message the same id (the subtask, its attempt and the post's number), which the board keeps once.
  idempotent: true,
  timeoutMs: 1_000,
  // The value is the message as kept (the subtask collects its posts from its calls' values, replayed ones too).
  async execute(args, context) {
    // A subtask that had read untrusted content posts untrusted text: whoever reads it sees it as data.
    return boardOf(context).post(args, argumentLabel("text", args.text, context.provenance));
  },
  summarize: (value) => {
    const message = value as BoardMessage;
    return `posted ${message.id} to ${describeAudience(message.audience)}: ${truncate(message.text, 120)}`;
  },
});

/** Reads the messages on the run's shared board sent to this subtask, its agent, everyone, or the topics named. */
export const boardReadTool = defineTool({
  name: "board_read",
  description: "Read the messages other subtasks posted for you (to your subtask, your agent or everyone) and, with topics, those on these topics.",
  schema: BoardReadArgs,
  permission: "NONE",
  powers: ["run.read"],
  idempotent: true,
  timeoutMs: 1_000,
  async execute(args, context) {
    const { messages, more } = boardOf(context).read(args);
    return new LabelledValue({ messages: messages.map(shown), more }, joinLabels(...messages.map((message) => message.label)));
  },
  summarize: (value) => {
    const { messages, more } = value as { messages: unknown[]; more: number };
    return `${messages.length} message${messages.length === 1 ? "" : "s"}${more > 0 ? ` (${more} earlier not shown)` : ""}`;
  },
});
