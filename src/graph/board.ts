import { type BoardAudience, type BoardMessage, type BoardPostArgs, type BoardReadArgs, mergeBoard, messagesFor } from "../core/board.js";
import { ToolError } from "../core/errors.js";
import { LIMITS } from "../core/limits.js";
import { isUntrusted, type Label } from "../core/provenance.js";
import type { BoardAccess } from "../tools/define-tool.js";

/** Who posts and reads through one subtask's access, and what it may address. */
export interface BoardSeat {
  subtaskId: string;
  agent: string;
  attempt: number;
  round: number;
  /** The item of a mapped subtask, which posts under its own ids. */
  item?: number;
  /** The subtask ids and agent names a message can be sent to. */
  subtasks: () => readonly string[];
  agents: readonly string[];
  /** Told of each message posted, as it is posted. */
  onPost: (message: BoardMessage) => void;
}

/**
 * The shared board while a node runs its subtasks: the state's messages, and every message posted
 * since by the subtasks running side by side — so one sees what another posted a moment ago,
 * without waiting for the node to end. What reaches the state (and the checkpoint) is each
 * subtask's own posts, in its task's update; a replayed task hands its posts back here too.
 */
export class LiveBoard {
  #messages: BoardMessage[];

  constructor(initial: readonly BoardMessage[]) {
    this.#messages = [...initial];
  }

  /** Every message, oldest first. */
  messages(): readonly BoardMessage[] {
    return this.#messages;
  }

  /** Adds messages posted elsewhere (a replayed subtask's), each once. */
  absorb(messages: readonly BoardMessage[]): void {
    if (messages.length > 0) this.#messages = mergeBoard(this.#messages, messages);
  }

  /** What one subtask's tools use to post and read. */
  access(seat: BoardSeat): BoardAccess {
    let posted = 0;
    const follows = new Set<string>();
    return {
      post: (args: BoardPostArgs, label?: Label): BoardMessage => {
        if (args.to !== undefined && args.topic !== undefined) throw new ToolError("invalid_arguments", "give either to (a subtask or an agent) or topic, not both");
        if (this.#messages.length >= LIMITS.boardMaxMessages) throw new ToolError("board_full", `the board holds its ${LIMITS.boardMaxMessages} messages; nothing more can be posted in this run`);
        if (posted >= LIMITS.boardPostsPerSubtask) throw new ToolError("board_limit", `a subtask posts at most ${LIMITS.boardPostsPerSubtask} messages`);
        const audience = this.#audience(args, seat);
        posted += 1;
        const item = seat.item !== undefined ? `.i${seat.item}` : "";
        const message: BoardMessage = { id: `${seat.subtaskId}.${seat.attempt}${item}.${posted}`, from: seat.subtaskId, agent: seat.agent, audience, text: args.text, at: Date.now(), round: seat.round };
        if (isUntrusted(label)) message.label = label;
        this.absorb([message]);
        seat.onPost(message);
        return message;
      },
      read: (args: BoardReadArgs) => {
        for (const topic of args.topics ?? []) follows.add(topic);
        const reader = { subtaskId: seat.subtaskId, agent: seat.agent, topics: [...follows] };
        const all = messagesFor(this.#messages, reader, { ...(args.after !== undefined ? { after: args.after } : {}), max: Number.MAX_SAFE_INTEGER });
        const shown = all.slice(-LIMITS.boardReadMax);
        return { messages: shown, more: all.length - shown.length };
      },
    };
  }

  #audience(args: BoardPostArgs, seat: BoardSeat): BoardAudience {
    if (args.topic !== undefined) return { kind: "topic", name: args.topic };
    if (args.to === undefined || args.to === "*" || args.to === "everyone") return { kind: "everyone" };
    if (seat.subtasks().includes(args.to)) return { kind: "subtask", id: args.to };
    if (seat.agents.includes(args.to)) return { kind: "agent", name: args.to };
    throw new ToolError("unknown_recipient", `"${args.to}" is neither a subtask of this plan (${seat.subtasks().join(", ")}) nor an agent (${seat.agents.join(", ")})`);
  }
}
