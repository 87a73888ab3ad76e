import type { BaseMessage } from "@langchain/core/messages";

type Counter = (text: string) => number;

let counter: Promise<Counter> | undefined;

/**
 * cl100k_base, from gpt-tokenizer, loaded on first use and shared by every call. gpt-tokenizer
 * rather than js-tiktoken: the same counts, but its merge step is not quadratic in practice (a
 * 5,000-character run of random letters: 30 ms against js-tiktoken's 3.9 s on this machine).
 */
function getCounter(): Promise<Counter> {
  counter ??= import("gpt-tokenizer/encoding/cl100k_base").then((encoding) => (text: string) => encoding.countTokens(text));
  return counter;
}

/**
 * The longest piece handed to the tokenizer. Byte-pair merging costs about the square of a
 * pre-tokenized piece's length, and a piece can be as long as the text (a run of one letter, of
 * punctuation, of spaces): pieces of at most this many characters make the cost linear in the
 * text, whatever it holds.
 */
export const MAX_PIECE_CHARS = 128;

const isSpace = (code: number): boolean => code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d || code === 0x0b || code === 0x0c;
const SPACE = 0x20;

/**
 * Cuts text into pieces of at most `max` characters. Where it can, a cut falls just before a
 * space that starts a word (" word"), where the tokenizer's own pre-tokenizer starts a piece too,
 * so ordinary text counts exactly as it would whole (not before a line break: cl100k joins line
 * breaks with what comes before them, "\n\n" or ":\n"); a run longer than `max`
 * with no such place (one letter repeated, a long token of base64) is cut at `max`, which moves
 * its count by at most a token or so per cut.
 */
export function boundedPieces(text: string, max = MAX_PIECE_CHARS): string[] {
  if (text.length <= max) return [text];
  const pieces: string[] = [];
  let start = 0;
  while (text.length - start > max) {
    let cut = -1;
    for (let index = start + max; index > start; index -= 1) {
      if (text.charCodeAt(index) === SPACE && index + 1 < text.length && !isSpace(text.charCodeAt(index + 1))) {
        cut = index;
        break;
      }
    }
    if (cut < 0) {
      cut = start + max;
      // Never between the two halves of a surrogate pair.
      const before = text.charCodeAt(cut - 1);
      if (before >= 0xd800 && before <= 0xdbff) cut -= 1;
    }
    pieces.push(text.slice(start, cut));
    start = cut;
  }
  pieces.push(text.slice(start));
  return pieces;
}

function countBounded(count: Counter, text: string): number {
  let total = 0;
  for (const piece of boundedPieces(text)) total += count(piece);
  return total;
}

/** The text a message costs: its content plus any tool calls it carries. */
function messageText(message: BaseMessage): string {
  const content = typeof message.content === "string" ? message.content : JSON.stringify(message.content);
  const toolCalls = "tool_calls" in message && Array.isArray(message.tool_calls) && message.tool_calls.length > 0 ? JSON.stringify(message.tool_calls) : "";
  return content + toolCalls;
}

/** Tokens of a list of messages, counted the way chat APIs do (about 4 tokens of framing each). */
export async function countMessageTokens(messages: readonly BaseMessage[]): Promise<number> {
  const count = await getCounter();
  let total = 3;
  for (const message of messages) total += 4 + countBounded(count, messageText(message));
  return total;
}

/**
 * An upper bound on `countMessageTokens`, without the tokenizer: a byte-level BPE token covers at
 * least one byte, so a message costs at most its UTF-8 bytes plus the framing. Cheap enough to
 * check every prompt against a budget before counting for real.
 */
export function messageTokensUpperBound(messages: readonly BaseMessage[]): number {
  let total = 3;
  for (const message of messages) total += 4 + Buffer.byteLength(messageText(message), "utf8");
  return total;
}

export async function countTextTokens(text: string): Promise<number> {
  return countBounded(await getCounter(), text);
}
