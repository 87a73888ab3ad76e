import { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { CallbackManager, type Callbacks } from "@langchain/core/callbacks/manager";
import type { BaseLanguageModelInput } from "@langchain/core/language_models/base";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { type AIMessage, type AIMessageChunk, type BaseMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import type { Runnable } from "@langchain/core/runnables";
import { z } from "zod";
import { errorMessage, ModelError } from "../core/errors.js";
import type { ToolSpec } from "../core/tool-spec.js";
import { countMessageTokens } from "../providers/token-count.js";

export interface ModelUsage {
  llmCalls: number;
  promptTokens: number;
  completionTokens: number;
  costUsd: number;
}

/** Adds up the model calls of one node. */
export class UsageMeter {
  readonly usage: ModelUsage = { llmCalls: 0, promptTokens: 0, completionTokens: 0, costUsd: 0 };

  add(usage: Partial<ModelUsage>): void {
    this.usage.llmCalls += usage.llmCalls ?? 0;
    this.usage.promptTokens += usage.promptTokens ?? 0;
    this.usage.completionTokens += usage.completionTokens ?? 0;
    this.usage.costUsd += usage.costUsd ?? 0;
  }
}

export type ChatRunnable = Runnable<BaseLanguageModelInput, AIMessageChunk>;

export interface CallOptions {
  signal?: AbortSignal;
  meter: UsageMeter;
  /**
   * Receives the text of the reply as it streams (models that can stream do so when this is set).
   * `callbacks` are the node's own, so the call stays traced under it.
   */
  onToken?: (text: string) => void;
  callbacks?: Callbacks;
}

/** Forwards streamed tokens; `lc_prefer_streaming` makes `invoke` stream on models that can. */
class TokenForwarder extends BaseCallbackHandler {
  name = "troupe-token-forwarder";
  lc_prefer_streaming = true;
  readonly #onToken: (text: string) => void;

  constructor(onToken: (text: string) => void) {
    super();
    this.#onToken = onToken;
  }

  override handleLLMNewToken(token: string): void {
    if (token) this.#onToken(token);
  }
}

/** The node's callbacks with a token forwarder added (explicit callbacks replace the inherited ones). */
function withTokenForwarder(callbacks: Callbacks | undefined, onToken: (text: string) => void): Callbacks {
  const forwarder = new TokenForwarder(onToken);
  if (callbacks instanceof CallbackManager) return callbacks.copy([forwarder]);
  return [...(callbacks ?? []), forwarder];
}

/**
 * One model call, counted: tokens come from the provider's usage metadata when it reports them,
 * otherwise they are counted with js-tiktoken.
 */
export async function callModel(model: ChatRunnable, messages: BaseMessage[], options: CallOptions): Promise<AIMessage> {
  let response: AIMessage;
  try {
    const callbacks = options.onToken ? withTokenForwarder(options.callbacks, options.onToken) : undefined;
    response = (await model.invoke(messages, { signal: options.signal, ...(callbacks ? { callbacks } : {}) })) as AIMessage;
  } catch (error) {
    options.meter.add({ llmCalls: 1 });
    throw error;
  }
  const reported = response.usage_metadata;
  const promptTokens = reported?.input_tokens ?? (await countMessageTokens(messages));
  const completionTokens = reported?.output_tokens ?? (await countMessageTokens([response])) - 3;
  options.meter.add({ llmCalls: 1, promptTokens, completionTokens: Math.max(0, completionTokens) });
  return response;
}

export interface StructuredRequest<Schema extends z.ZodType> {
  model: BaseChatModel;
  schema: Schema;
  name: string;
  description: string;
  messages: BaseMessage[];
}

const schemaCache = new WeakMap<z.ZodType, Record<string, unknown>>();

/** A zod schema as JSON schema, converted once per schema. */
function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  let parameters = schemaCache.get(schema);
  if (!parameters) {
    parameters = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
    delete parameters.$schema;
    schemaCache.set(schema, parameters);
  }
  return parameters;
}

/**
 * Asks for a machine-read answer through the provider's tool calling: the schema is offered as
 * the one function to call. An invalid answer gets one repair round with the validation errors;
 * a second invalid answer is a ModelError the caller turns into a failed step.
 */
export async function invokeStructured<Schema extends z.ZodType>(request: StructuredRequest<Schema>, options: CallOptions): Promise<z.infer<Schema>> {
  const { model, schema, name, description } = request;
  if (typeof model.bindTools !== "function") {
    throw new ModelError("no_tool_calling", `the model ${model.getName()} does not support tool calling`);
  }
  const spec: ToolSpec = { type: "function", function: { name, description, parameters: jsonSchemaOf(schema) } };
  const bound = model.bindTools([spec], { tool_choice: name }) as ChatRunnable;
  const messages = [...request.messages];
  let lastProblem = "";
  for (let attempt = 0; attempt < 2; attempt += 1) {
    const response = await callModel(bound, messages, options);
    const call = response.tool_calls?.find((toolCall) => toolCall.name === name);
    if (call) {
      const parsed = schema.safeParse(call.args);
      if (parsed.success) return parsed.data;
      lastProblem = z.prettifyError(parsed.error);
    } else {
      lastProblem = `the answer did not call ${name}`;
    }
    messages.push(response);
    for (const toolCall of response.tool_calls ?? []) {
      messages.push(new ToolMessage({ tool_call_id: toolCall.id ?? "", name: toolCall.name, content: `invalid: ${lastProblem}` }));
    }
    messages.push(new HumanMessage(`That answer was not valid:\n${lastProblem}\nCall ${name} again with a corrected answer.`));
  }
  throw new ModelError("invalid_structured_output", `the model's ${name} answer was invalid after one repair: ${lastProblem}`, { name });
}

/** A model error as a one-line reason. */
export function modelFailure(error: unknown): string {
  return errorMessage(error).split("\n")[0] ?? "model call failed";
}
