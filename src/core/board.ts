import { z } from "zod";
import { Label } from "./provenance.js";
import { LIMITS } from "./limits.js";

/**
 * The run's shared board: messages agents post while a run goes — to one subtask, to every
 * subtask of an agent, to a topic, or to everyone — and read when they are addressed to them.
 * Messages are part of the graph state (a channel with `mergeBoard` as its reducer, so they are
 * checkpointed with the run) and bounded in count and size.
 */

/** Who a message is for: everyone, one subtask (by id), every subtask of an agent, or whoever reads a topic. */
export const BoardAudience = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("everyone") }),
  z.object({ kind: z.literal("subtask"), id: z.string().min(1) }),
  z.object({ kind: z.literal("agent"), name: z.string().min(1) }),
  z.object({ kind: z.literal("topic"), name: z.string().min(1) }),
]);
export type BoardAudience = z.infer<typeof BoardAudience>;

export const BoardMessage = z.object({
  /** `<subtask>.<attempt>[.i<item>].<n>`: the same post of the same attempt keeps its id when a run replays it. */
  id: z.string().min(1),
  /** The subtask that posted it, and its agent. */
  from: z.string().min(1),
  agent: z.string().min(1),
  audience: BoardAudience,
  text: z.string().min(1).max(LIMITS.boardMessageMaxChars),
  /** When it was posted (ms since the epoch). */
  at: z.number(),
  /** The review round it was posted in. */
  round: z.number().int().min(0),
  /** Where its text came from: a subtask that had read untrusted content posts untrusted text. */
  label: Label.optional(),
});
export type BoardMessage = z.infer<typeof BoardMessage>;

/** A topic name: short, readable, no spaces. */
export const TOPIC_PATTERN = /^[A-Za-z0-9][\w.-]{0,63}$/;

/** `board_post`'s arguments. */
export const BoardPostArgs = z
  .object({
    text: z.string().min(1).max(LIMITS.boardMessageMaxChars).describe(`the message, at most ${LIMITS.boardMessageMaxChars} characters`),
    to: z.string().min(1).max(64).optional().describe("a subtask id or an agent name; leave it out (and topic) to post to everyone"),
    topic: z.string().regex(TOPIC_PATTERN).optional().describe("post to a topic instead: whoever reads that topic sees it"),
  })
  .strict();
export type BoardPostArgs = z.infer<typeof BoardPostArgs>;

/** `board_read`'s arguments. */
export const BoardReadArgs = z
  .object({
    topics: z.array(z.string().regex(TOPIC_PATTERN)).max(10).optional().describe("topics to read as well as what is sent to you and to everyone"),
    after: z.string().min(1).optional().describe("only messages after this message id"),
  })
  .strict();
export type BoardReadArgs = z.infer<typeof BoardReadArgs>;

/** Who reads: a subtask, its agent, and the topics it follows. */
export interface BoardReader {
  subtaskId: string;
  agent: string;
  topics?: readonly string[];
}

/** Whether a message is for this reader (never its own subtask's posts). */
export function isAddressedTo(message: BoardMessage, reader: BoardReader): boolean {
  if (message.from === reader.subtaskId) return false;
  switch (message.audience.kind) {
    case "everyone":
      return true;
    case "subtask":
      return message.audience.id === reader.subtaskId;
    case "agent":
      return message.audience.name === reader.agent;
    case "topic":
      return (reader.topics ?? []).includes(message.audience.name);
  }
}

/** The audience in words: `everyone`, `s2`, `agent research`, `topic #findings`. */
export function describeAudience(audience: BoardAudience): string {
  switch (audience.kind) {
    case "everyone":
      return "everyone";
    case "subtask":
      return audience.id;
    case "agent":
      return `agent ${audience.name}`;
    case "topic":
      return `topic #${audience.name}`;
  }
}

/**
 * The messages for a reader, oldest first: those after `after` (a message id), at most `max`
 * (the newest of them).
 */
export function messagesFor(messages: readonly BoardMessage[], reader: BoardReader, options: { after?: string; max?: number } = {}): BoardMessage[] {
  let start = 0;
  if (options.after !== undefined) {
    const index = messages.findIndex((message) => message.id === options.after);
    if (index >= 0) start = index + 1;
  }
  const addressed = messages.slice(start).filter((message) => isAddressedTo(message, reader));
  return addressed.slice(-(options.max ?? LIMITS.boardReadMax));
}

/**
 * The board's reducer: new messages appended in order, a message already there (the same id, as
 * when a replay hands back a subtask's posts) kept once, and at most `LIMITS.boardMaxMessages`
 * kept — the newest (posting refuses beyond the bound, so this only guards the state).
 */
export function mergeBoard(current: readonly BoardMessage[], next: readonly BoardMessage[]): BoardMessage[] {
  if (next.length === 0) return [...current];
  const seen = new Set(current.map((message) => message.id));
  const merged = [...current];
  for (const message of next) {
    if (seen.has(message.id)) continue;
    seen.add(message.id);
    merged.push(message);
  }
  return merged.length > LIMITS.boardMaxMessages ? merged.slice(-LIMITS.boardMaxMessages) : merged;
}
