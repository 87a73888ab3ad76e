import { type AIMessage, type BaseMessage, SystemMessage } from "@langchain/core/messages";

/**
 * What a provider's answer says about itself, read the same way for every provider: whether it
 * was cut off at the output limit, whether the model refused, and how a request marks its
 * prompt-cache breakpoints.
 */

function metadataOf(message: AIMessage): Record<string, unknown> {
  return { ...message.additional_kwargs, ...message.response_metadata } as Record<string, unknown>;
}

/** Why the model stopped, as the provider said it: OpenAI's finish_reason, Anthropic's stop_reason, Ollama's done_reason. */
export function stopReasonOf(message: AIMessage): string | undefined {
  const metadata = metadataOf(message);
  const reason = metadata.finish_reason ?? metadata.stop_reason ?? metadata.done_reason;
  return typeof reason === "string" ? reason : undefined;
}

/** Whether the answer was cut off at the output limit (`finish_reason: "length"`, `stop_reason: "max_tokens"`). */
export function isCutOff(message: AIMessage): boolean {
  const reason = stopReasonOf(message);
  return reason === "length" || reason === "max_tokens";
}

function textOf(message: AIMessage): string {
  return (typeof message.content === "string" ? message.content : message.text).trim();
}

/**
 * The model's refusal, when it refused: OpenAI's `refusal` field (kept by troupe's completions
 * client), Anthropic's `stop_reason: "refusal"`, or a provider's content filter. Undefined when
 * the answer is not a refusal.
 */
export function refusalOf(message: AIMessage): string | undefined {
  const metadata = metadataOf(message);
  if (typeof metadata.refusal === "string" && metadata.refusal.trim() !== "") return metadata.refusal.trim();
  const reason = stopReasonOf(message);
  if (reason === "refusal") return textOf(message) || "the model declined to answer";
  if (reason === "content_filter") return textOf(message) || "the provider's content filter stopped the answer";
  return undefined;
}

/** Whether the answer holds nothing: no text, no tool call, no refusal. */
export function isEmptyAnswer(message: AIMessage): boolean {
  return textOf(message) === "" && (message.tool_calls ?? []).length === 0 && (message.invalid_tool_calls ?? []).length === 0 && refusalOf(message) === undefined;
}

const EPHEMERAL = { type: "ephemeral" } as const;

/**
 * The messages with an Anthropic prompt-cache breakpoint on the system prompt, so the tools and
 * the system prompt (the stable start of every call of a role) are cached apart from what
 * follows; the request's own top-level `cache_control` places the second breakpoint on its last
 * block. Other messages are left as they are.
 */
export function withCacheBreakpoint(messages: readonly BaseMessage[]): BaseMessage[] {
  const [first, ...rest] = messages;
  if (!first || first.getType() !== "system") return [...messages];
  const text = typeof first.content === "string" ? first.content : first.text;
  if (text === "") return [...messages];
  return [new SystemMessage({ content: [{ type: "text", text, cache_control: EPHEMERAL }] }), ...rest];
}
