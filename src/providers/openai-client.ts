import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { AIMessage, type BaseMessage, type BaseMessageChunk } from "@langchain/core/messages";
import { makeInvalidToolCall, parseToolCall } from "@langchain/core/output_parsers/openai_tools";
import { ChatOpenAI, ChatOpenAICompletions, type ChatOpenAIFields } from "@langchain/openai";

/** A Chat Completions message or response, as far as troupe reads them (the client's own types are its SDK's). */
type CompletionsMessage = { refusal?: unknown } & object;
type CompletionsResponse = object;

/**
 * The Chat Completions client of `@langchain/openai`, keeping what it drops: the answer's
 * `refusal` (OpenAI's structured outputs put a refusal there, with no content), whole or as
 * streamed pieces, goes into `additional_kwargs.refusal`, where troupe reads it.
 */
export class RefusalAwareCompletions extends ChatOpenAICompletions {
  protected override _convertCompletionsMessageToBaseMessage(message: CompletionsMessage, rawResponse: CompletionsResponse): BaseMessage {
    // Tool calls none of which can be read (their arguments cut off at the output limit): the
    // client would keep the raw list beside an empty `tool_calls`, which LangChain's AIMessage takes
    // for an outdated package's message and answers with a console warning ("New LangChain packages
    // are available…") every time one is built. They are kept as the client keeps unreadable calls,
    // in `invalid_tool_calls`, and the raw list is not passed on (sent back, calls without
    // `tool_calls` ids would be refused anyway).
    const raw = (message as { tool_calls?: unknown }).tool_calls;
    const unreadable = Array.isArray(raw) && raw.length > 0 && raw.every((call) => parseProblem(call as Record<string, unknown>) !== undefined);
    const converted = super._convertCompletionsMessageToBaseMessage((unreadable ? { ...message, tool_calls: undefined } : message) as never, rawResponse as never);
    if (unreadable && AIMessage.isInstance(converted)) {
      converted.invalid_tool_calls = (raw as Array<Record<string, unknown>>).map((call) => makeInvalidToolCall(call, parseProblem(call)));
    }
    const refusal = (message as { refusal?: unknown }).refusal;
    if (typeof refusal === "string" && refusal !== "") converted.additional_kwargs = { ...converted.additional_kwargs, refusal };
    return converted;
  }

  /**
   * A JSON-schema answer asked for without streaming goes through the client's plain `create`,
   * not its `parse`: `parse` throws away an answer it cannot read (fenced JSON, a refusal, one cut
   * off at the length limit) and troupe reads those itself, from the content and the finish reason.
   */
  override async completionWithRetry(request: never, requestOptions?: never): Promise<never> {
    const params = request as { stream?: boolean; response_format?: { type?: string } };
    if (params.stream === true || params.response_format?.type !== "json_schema") return (await super.completionWithRetry(request, requestOptions)) as never;
    const { maxRetries, ...sdkOptions } = (requestOptions ?? {}) as { maxRetries?: number } & Record<string, unknown>;
    const clientOptions = this._getClientOptions(sdkOptions);
    const client = this.client as unknown as { chat: { completions: { create: (body: unknown, options: unknown) => Promise<unknown> } } };
    return (await this.caller.callWithOptions({ ...(maxRetries !== undefined ? { maxRetries } : {}) }, () => client.chat.completions.create(request, clientOptions))) as never;
  }

  protected override _convertCompletionsDeltaToBaseMessageChunk(delta: Record<string, unknown>, rawResponse: CompletionsResponse, defaultRole?: string): BaseMessageChunk {
    const chunk = super._convertCompletionsDeltaToBaseMessageChunk(delta, rawResponse as never, defaultRole as never);
    if (typeof delta.refusal === "string" && delta.refusal !== "") chunk.additional_kwargs = { ...chunk.additional_kwargs, refusal: delta.refusal };
    return chunk;
  }
}

/** Why a raw tool call's arguments cannot be read, as the client says it; undefined when they can. */
function parseProblem(call: Record<string, unknown>): string | undefined {
  try {
    parseToolCall(call, { returnId: true });
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/** `ChatOpenAI` whose Chat Completions calls go through RefusalAwareCompletions. */
export function createChatOpenAI(fields: ChatOpenAIFields): ChatOpenAI {
  return new ChatOpenAI({ ...fields, completions: new RefusalAwareCompletions(fields) });
}

/**
 * A model like `model` (ChatOpenAI or its completions client) that answers within `maxTokens`:
 * an object on top of it with the limit changed (and so for the clients it delegates to), which
 * keeps its client, its settings and anything wrapped around it.
 */
export function withOpenAIOutputLimit(model: BaseChatModel, maxTokens: number): BaseChatModel {
  const limited = Object.create(model) as BaseChatModel & { maxTokens?: number; completions?: object; responses?: object };
  limited.maxTokens = maxTokens;
  for (const part of ["completions", "responses"] as const) {
    const inner = (model as unknown as Record<string, object | undefined>)[part];
    if (inner) {
      const copy = Object.create(inner) as { maxTokens?: number };
      copy.maxTokens = maxTokens;
      limited[part] = copy;
    }
  }
  return limited;
}
