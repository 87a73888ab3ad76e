import type { BaseMessage } from "@langchain/core/messages";
import { describeShape } from "../core/json-path.js";
import { HANDLE_KEY } from "../core/prompt-protocol.js";
import { truncate } from "../core/text.js";
import { countMessageTokens, messageTokensUpperBound } from "../providers/token-count.js";

/**
 * Levels of detail a prompt is rendered at, from full to bare. Each builder scales the sizes
 * of what it shows (previews, summaries, item lists) by the level; the first level whose
 * rendering fits the token budget is sent.
 */
export const DETAIL_LEVELS = [1, 0.5, 0.25, 0.12, 0.06, 0.03, 0] as const;

export interface FittedPrompt {
  messages: BaseMessage[];
  /** Tokens counted, or an upper bound on them when that was enough to know the prompt fits. */
  tokens: number;
  detail: number;
  /** True when even the barest rendering is over the budget (its fixed parts alone are larger). */
  overBudget: boolean;
}

/**
 * Renders a prompt at decreasing detail until it fits `budget` tokens (counted with the same
 * tokenizer the metrics use). Everything a builder shows is bounded at every level, so the
 * size of a prompt does not follow the size of the data behind it.
 */
export async function fitToBudget(render: (detail: number) => BaseMessage[], budget: number): Promise<FittedPrompt> {
  let last: FittedPrompt | undefined;
  for (const detail of DETAIL_LEVELS) {
    const messages = render(detail);
    // Most prompts are far under the budget: the byte bound settles those without the tokenizer.
    const bound = messageTokensUpperBound(messages);
    if (bound <= budget) return { messages, tokens: bound, detail, overBudget: false };
    const tokens = await countMessageTokens(messages);
    last = { messages, tokens, detail, overBudget: tokens > budget };
    if (tokens <= budget) return last;
  }
  return last as FittedPrompt;
}

/** `max * detail` characters, but never fewer than `floor`. */
export function scaled(max: number, detail: number, floor: number): number {
  return Math.max(floor, Math.round(max * detail));
}

export { HANDLE_KEY } from "../core/prompt-protocol.js";

/** What a prompt shows of a value too large to inline: a handle, its size and shape, and a preview. */
export interface ValueHandle {
  [HANDLE_KEY]: string;
  bytes: number;
  shape: string;
  preview?: string;
}

export function isValueHandle(value: unknown): value is { [HANDLE_KEY]: string } {
  return typeof value === "object" && value !== null && !Array.isArray(value) && typeof (value as Record<string, unknown>)[HANDLE_KEY] === "string";
}

/** A value with its JSON text measured once, for prompts rendered at several levels of detail. */
export interface PreparedValue {
  value: unknown;
  text: string;
  bytes: number;
  shape: string;
}

export function prepareValue(value: unknown): PreparedValue {
  const text = typeof value === "string" ? value : (JSON.stringify(value) ?? "null");
  return { value, text, bytes: Buffer.byteLength(text, "utf8"), shape: describeShape(value) };
}

/**
 * A value as a prompt shows it: itself when its JSON fits in `inlineChars`, otherwise a handle
 * with its size, shape and a preview of `previewChars` (none at 0).
 */
export function promptValue(prepared: PreparedValue, key: string, inlineChars: number, previewChars: number): unknown {
  if (prepared.text.length <= inlineChars) return prepared.value;
  const handle: ValueHandle = { [HANDLE_KEY]: key, bytes: prepared.bytes, shape: prepared.shape };
  if (previewChars > 0) handle.preview = truncate(prepared.text, previewChars);
  return handle;
}
