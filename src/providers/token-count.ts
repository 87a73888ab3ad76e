import type { BaseMessage } from "@langchain/core/messages";
import type { Tiktoken } from "js-tiktoken/lite";

let encoder: Promise<Tiktoken> | undefined;

/** The cl100k_base encoder, loaded on first use (about 0.3 s) and shared by every call. */
function getEncoder(): Promise<Tiktoken> {
  encoder ??= (async () => {
    const [{ Tiktoken }, { default: ranks }] = await Promise.all([import("js-tiktoken/lite"), import("js-tiktoken/ranks/cl100k_base")]);
    return new Tiktoken(ranks);
  })();
  return encoder;
}

/** The text a message costs: its content plus any tool calls it carries. */
function messageText(message: BaseMessage): string {
  const content = typeof message.content === "string" ? message.content : JSON.stringify(message.content);
  const toolCalls = "tool_calls" in message && Array.isArray(message.tool_calls) && message.tool_calls.length > 0 ? JSON.stringify(message.tool_calls) : "";
  return content + toolCalls;
}

/** Tokens of a list of messages, counted the way chat APIs do (about 4 tokens of framing each). */
export async function countMessageTokens(messages: readonly BaseMessage[]): Promise<number> {
  const tiktoken = await getEncoder();
  let total = 3;
  for (const message of messages) total += 4 + tiktoken.encode(messageText(message)).length;
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
  const tiktoken = await getEncoder();
  return tiktoken.encode(text).length;
}
