import type { ServerResponse } from "node:http";
import { AIMessage, type BaseMessage, HumanMessage, SystemMessage, ToolMessage } from "@langchain/core/messages";
import type { ToolSpec } from "../core/tool-spec.js";
import { type BrainRequest, type Fault, FakeProviderServer, type FakeRequest, type FakeUsage, fakeTokens, pieces, type PromptUnit } from "./fake-server.js";
import type { WireAnswer } from "./misbehaviour.js";
import { HashingEmbeddings } from "./hashing-embeddings.js";

type WireMessage = {
  role: string;
  content?: string | Array<{ type: string; text?: string }> | null;
  tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
  name?: string;
};

function textOf(content: WireMessage["content"]): string {
  if (typeof content === "string") return content;
  return (content ?? []).map((part) => part.text ?? "").join("");
}

/** Dimensions of the fake's embeddings. */
const EMBEDDING_DIMENSIONS = 256;

/**
 * A deterministic embedding of a text: its words (lower-cased, a plural `s` dropped) hashed into
 * a fixed number of dimensions, normalised — texts that share words are near, others far, as with
 * a real model's vectors for this purpose.
 */
export function fakeEmbedding(text: string): number[] {
  const vector = new Array<number>(EMBEDDING_DIMENSIONS).fill(0);
  for (const raw of text.toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
    if (raw.length < 3) continue;
    const word = raw.length > 3 && raw.endsWith("s") ? raw.slice(0, -1) : raw;
    let hash = 2166136261;
    for (const char of word) hash = Math.imul(hash ^ char.charCodeAt(0), 16777619) >>> 0;
    vector[hash % EMBEDDING_DIMENSIONS] = (vector[hash % EMBEDDING_DIMENSIONS] ?? 0) + 1;
  }
  const norm = Math.sqrt(vector.reduce((sum, value) => sum + value * value, 0)) || 1;
  return vector.map((value) => value / norm);
}

/**
 * A fake OpenAI-compatible server: `POST /v1/chat/completions` in the real wire format — tool
 * calls, the JSON-schema response format, streaming as server-sent events with a usage chunk,
 * and errors with the OpenAI error body and Retry-After — and `POST /v1/embeddings`, answered
 * by a hashing model (`HashingEmbeddings`: texts that share letter trigrams are near).
 */
export class FakeOpenAIServer extends FakeProviderServer {
  /** The texts of every embeddings request, in order. */
  readonly embeddingRequests: Array<{ model: string; input: string[] }> = [];

  get baseUrl(): string {
    return `${this.origin}/v1`;
  }

  protected route(method: string, path: string): boolean {
    return method === "POST" && path === "/v1/chat/completions";
  }

  /** `POST /v1/embeddings`: vectors of a hashing model (HashingEmbeddings), as floats or base64 as the client asks. */
  protected override otherRoute(method: string, path: string) {
    if (method !== "POST" || path !== "/v1/embeddings") return undefined;
    return {
      role: "embeddings",
      respond: async (body: Record<string, unknown>, response: ServerResponse): Promise<void> => {
        const inputs = Array.isArray(body.input) ? body.input.map(String) : [String(body.input ?? "")];
        this.embeddingRequests.push({ model: String(body.model ?? "fake"), input: inputs });
        const model = new HashingEmbeddings({ dims: typeof body.dimensions === "number" ? body.dimensions : 64 });
        const base64 = body.encoding_format === "base64";
        const data = inputs.map((input, index) => {
          const vector = model.vector(input);
          const embedding = base64 ? Buffer.from(Float32Array.from(vector).buffer).toString("base64") : vector;
          return { object: "embedding", index, embedding };
        });
        const tokens = inputs.reduce((sum, input) => sum + fakeTokens(input), 0);
        response.writeHead(200, { "content-type": "application/json" });
        response.end(JSON.stringify({ object: "list", data, model: String(body.model ?? "fake"), usage: { prompt_tokens: tokens, total_tokens: tokens } }));
      },
    };
  }

  protected structuredKind(body: Record<string, unknown>): FakeRequest["structured"] {
    const format = body.response_format as { type?: string } | undefined;
    if (format?.type === "json_schema") return "json_schema";
    const choice = body.tool_choice as { type?: string } | string | undefined;
    return typeof choice === "object" && choice?.type === "function" ? "tool" : undefined;
  }

  protected parseRequest(body: Record<string, unknown>): BrainRequest {
    const messages: BaseMessage[] = [];
    for (const message of (body.messages ?? []) as WireMessage[]) {
      const text = textOf(message.content);
      if (message.role === "system" || message.role === "developer") messages.push(new SystemMessage(text));
      else if (message.role === "user") messages.push(new HumanMessage(text));
      else if (message.role === "tool") messages.push(new ToolMessage({ content: text, tool_call_id: message.tool_call_id ?? "", name: message.name }));
      else if (message.role === "assistant") {
        const toolCalls = (message.tool_calls ?? []).map((call) => ({ id: call.id, name: call.function.name, args: safeJson(call.function.arguments), type: "tool_call" as const }));
        messages.push(new AIMessage({ content: text, tool_calls: toolCalls }));
      }
    }
    const tools = ((body.tools ?? []) as ToolSpec[]).filter((tool) => tool.type === "function");
    const format = body.response_format as { type?: string; json_schema?: { name: string; schema?: Record<string, unknown> } } | undefined;
    if (format?.type === "json_schema" && format.json_schema) {
      const { name, schema = {} } = format.json_schema;
      return { messages, tools: [...tools, { type: "function", function: { name, description: "", parameters: schema } }], structuredName: name };
    }
    const choice = body.tool_choice as { function?: { name?: string } } | undefined;
    return { messages, tools, ...(choice?.function?.name ? { structuredName: choice.function.name } : {}) };
  }

  protected sendError(response: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
    const type = status === 429 ? "rate_limit_exceeded" : status >= 500 ? "server_error" : "invalid_request_error";
    response.writeHead(status, { "content-type": "application/json", ...headers });
    response.end(JSON.stringify({ error: { message, type, param: null, code: type } }));
  }

  protected sendContextOverflow(response: ServerResponse, tokens: number, window: number): void {
    response.writeHead(400, { "content-type": "application/json" });
    response.end(
      JSON.stringify({
        error: {
          message: `This model's maximum context length is ${window} tokens. However, your messages resulted in ${tokens} tokens. Please reduce the length of the messages.`,
          type: "invalid_request_error",
          param: "messages",
          code: "context_length_exceeded",
        },
      }),
    );
  }

  /** Tools, then each message, as OpenAI reads them (its cache keys on that prefix). */
  protected promptUnits(body: Record<string, unknown>): PromptUnit[] {
    const units: PromptUnit[] = [];
    if (body.tools !== undefined) units.push({ text: JSON.stringify(body.tools) });
    if (body.response_format !== undefined) units.push({ text: JSON.stringify(body.response_format) });
    for (const message of (body.messages ?? []) as unknown[]) units.push({ text: JSON.stringify(message) });
    return units;
  }

  protected maxTokensOf(body: Record<string, unknown>): number | undefined {
    const limit = body.max_completion_tokens ?? body.max_tokens;
    return typeof limit === "number" ? limit : undefined;
  }

  /** Reasoning models (o-series, gpt-5) refuse a temperature other than 1 and `max_tokens`, as OpenAI's API does. */
  protected override refuseRequest(body: Record<string, unknown>): string | undefined {
    if (!isReasoningModel(String(body.model ?? ""))) return undefined;
    if (body.temperature !== undefined && body.temperature !== 1) return `Unsupported value: 'temperature' does not support ${String(body.temperature)} with this model. Only the default (1) value is supported.`;
    if (body.max_tokens !== undefined) return "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.";
    return undefined;
  }

  /** A reasoning model thinks before it answers: its usage names the tokens (`completion_tokens_details.reasoning_tokens`). */
  protected override reasoningTokens(body: Record<string, unknown>): number {
    return isReasoningModel(String(body.model ?? "")) ? 64 : 0;
  }

  protected async respond(response: ServerResponse, body: Record<string, unknown>, _request: BrainRequest, answer: WireAnswer, usage: FakeUsage, fault: Fault | undefined): Promise<void> {
    const toolCalls = answer.calls.map((call) => ({ id: call.id, type: "function" as const, function: { name: call.name, arguments: call.arguments } }));
    const finishReason = answer.finish === "refusal" ? "stop" : answer.finish;
    const content = answer.finish === "refusal" ? null : answer.text;
    const refusal = answer.refusal ?? null;
    const model = String(body.model ?? "fake");
    const id = `chatcmpl-fake-${this.requests.length}`;
    const created = Math.floor(Date.now() / 1000);
    const wireUsage = {
      prompt_tokens: usage.input,
      completion_tokens: usage.output,
      total_tokens: usage.input + usage.output,
      prompt_tokens_details: { cached_tokens: usage.cacheRead, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: usage.reasoning, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
    };
    if (body.stream !== true) {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(
        JSON.stringify({
          id,
          object: "chat.completion",
          created,
          model,
          choices: [{ index: 0, message: { role: "assistant", content: toolCalls.length > 0 && !content ? null : content, refusal, ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}) }, logprobs: null, finish_reason: finishReason }],
          usage: wireUsage,
        }),
      );
      return;
    }
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({ id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
    this.startStream(response);
    this.sendEvent(response, chunk({ role: "assistant", content: "" }));
    for (const part of pieces(refusal ?? "")) this.sendEvent(response, chunk({ refusal: part }));
    const parts = pieces(content ?? "");
    const half = Math.ceil(parts.length / 2);
    for (const [index, part] of parts.entries()) {
      if (index === half && (await this.streamFault(response, fault))) return;
      this.sendEvent(response, chunk({ content: part }));
    }
    if (parts.length === 0 && (await this.streamFault(response, fault))) return;
    for (const [index, call] of toolCalls.entries()) {
      this.sendEvent(response, chunk({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.function.name, arguments: "" } }] }));
      for (const part of pieces(call.function.arguments, 40)) this.sendEvent(response, chunk({ tool_calls: [{ index, function: { arguments: part } }] }));
    }
    this.sendEvent(response, chunk({}, finishReason));
    const options = body.stream_options as { include_usage?: boolean } | undefined;
    if (options?.include_usage) this.sendEvent(response, { id, object: "chat.completion.chunk", created, model, choices: [], usage: wireUsage });
    this.sendEvent(response, "[DONE]");
    response.end();
  }
}

/** Whether OpenAI treats the model as a reasoning model (o-series, gpt-5 but not its chat variant). */
function isReasoningModel(model: string): boolean {
  return /^o\d/.test(model) || (model.startsWith("gpt-5") && !model.startsWith("gpt-5-chat"));
}

function safeJson(text: string): Record<string, unknown> {
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return {};
  }
}
