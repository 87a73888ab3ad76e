import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { AIMessage, BaseMessage } from "@langchain/core/messages";
import { createHash } from "node:crypto";
import { roleOf } from "../core/prompt-protocol.js";
import type { ToolSpec } from "../core/tool-spec.js";
import { type Misbehaviour, misbehave, type WireAnswer } from "./misbehaviour.js";
import { valueFromSchema } from "./schema-following-chat-model.js";

/** A failure a fake provider server plays instead of (or in the middle of) a normal answer. */
export type Fault =
  /** An HTTP error with the provider's error body; `retryAfter` sets the Retry-After header (seconds). */
  | { kind: "status"; status: number; retryAfter?: string; message?: string }
  /** The connection is reset before any byte of the response. */
  | { kind: "reset" }
  /** The answer comes only after `ms` (set it past the client's timeout). */
  | { kind: "delay"; ms: number }
  /** A structured answer whose JSON is broken (tool arguments or JSON content). */
  | { kind: "invalid-json" }
  /** A streamed answer stops half way: the connection is reset, or (`end`) closed without the end marker. */
  | { kind: "truncate"; mode?: "reset" | "end" }
  /** A streamed answer sends its first half, then waits for `release` before the rest. */
  | { kind: "hold"; release: Promise<void>; reached?: () => void }
  /** The answer misbehaves the way real models do (see misbehaviour.ts), in the wire format, streaming or not. */
  | { kind: "misbehave"; as: Misbehaviour }
  /** The prompt is refused as larger than the model's context window, with the provider's own error. */
  | { kind: "context-overflow" };

export interface FaultRule {
  fault: Fault;
  /** How many requests it applies to (default 1). */
  times: number;
  /** Only requests of this role (planner, critic, synthesizer, a worker's agent). */
  role?: string;
  /** Matching requests to let through before the fault starts. */
  skip: number;
}

/** One request the fake received, as a test inspects it. */
export interface FakeRequest {
  index: number;
  path: string;
  body: Record<string, unknown>;
  /** The troupe role named in the system prompt. */
  role: string | undefined;
  stream: boolean;
  /** How a structured answer was asked for, if it was. */
  structured: "tool" | "json_schema" | undefined;
  fault: Fault["kind"] | undefined;
  /** Tokens the fake reported for it (input, output; of the input, read from and written to its prompt cache); absent for failed requests. */
  usage?: FakeUsage;
  /** The output limit the request asked for (max_tokens, max_completion_tokens). */
  maxTokens?: number;
  /** The client went away before the answer was complete (a cancelled or timed-out call). */
  abandoned: boolean;
  /** When the request arrived (Date.now()). */
  receivedAt: number;
}

/** Tokens of one answered request: input (cached and written parts included) and output. */
export interface FakeUsage {
  input: number;
  output: number;
  /** Of the input, the tokens served from the fake's prompt cache. */
  cacheRead: number;
  /** Of the input, the tokens written to it (a wire with explicit breakpoints). */
  cacheWrite: number;
  /** Of the output, the tokens a reasoning model thought with. */
  reasoning: number;
}

/** A piece of a request's prompt in the order the provider reads it (tools, system, messages), and whether it ends at a cache breakpoint. */
export interface PromptUnit {
  text: string;
  breakpoint?: boolean;
}

/** The smallest prefix a provider caches, in tokens. */
const MIN_CACHED_TOKENS = 1024;

/** What the brain answered, in protocol-neutral form. */
export interface BrainReply {
  text: string;
  toolCalls: Array<{ id: string; name: string; args: Record<string, unknown> }>;
}

/** A request in protocol-neutral form, for the brain. */
export interface BrainRequest {
  messages: BaseMessage[];
  tools: ToolSpec[];
  /** The name of the function the answer must be given through (forced tool or JSON schema). */
  structuredName?: string;
}

/** Tokens a fake reports for some text: about four characters each, and at least one. */
export function fakeTokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

/**
 * The common part of troupe's fake provider servers: an HTTP server on an ephemeral loopback
 * port that answers with a LangChain chat model as its "brain" (the offline model, or a scripted
 * one), logs every request, and plays injected faults. Protocol files turn requests and replies
 * into the real wire format, so the real client libraries are exercised end to end.
 */
export abstract class FakeProviderServer {
  readonly requests: FakeRequest[] = [];
  readonly #brain: BaseChatModel;
  readonly #rules: FaultRule[] = [];
  #server: Server | undefined;
  #port = 0;
  /**
   * Caches prompt prefixes as the provider does (off by default, so costs stay the plain ones):
   * `automatic` (OpenAI: any prefix of 1,024 tokens or more, in steps of 128) or `breakpoints`
   * (Anthropic: prefixes that end at a `cache_control` breakpoint), reported in the usage.
   */
  caching: "automatic" | "breakpoints" | undefined;
  /** Requests whose prompt is larger than this many tokens are refused as the provider refuses them (context_length_exceeded). */
  contextWindow: number | undefined;
  readonly #cachedPrefixes = new Set<string>();

  constructor(brain: BaseChatModel) {
    this.#brain = brain;
  }

  /** The base URL clients are given (e.g. `http://127.0.0.1:PORT/v1`). */
  abstract get baseUrl(): string;

  protected get origin(): string {
    return `http://127.0.0.1:${this.#port}`;
  }

  async start(): Promise<this> {
    const server = createServer((request, response) => {
      void this.#serve(request, response).catch((error: unknown) => {
        if (!response.headersSent) {
          response.writeHead(500, { "content-type": "application/json" });
          response.end(JSON.stringify({ error: { message: `fake server error: ${String(error)}` } }));
        } else {
          response.destroy();
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    this.#port = (server.address() as AddressInfo).port;
    this.#server = server;
    return this;
  }

  async close(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    this.#server = undefined;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Plays `fault` on the next `times` requests (of `role`, when given), after letting `skip` of them through. */
  inject(fault: Fault, options: { times?: number; role?: string; skip?: number } = {}): this {
    this.#rules.push({ fault, times: options.times ?? 1, skip: options.skip ?? 0, ...(options.role ? { role: options.role } : {}) });
    return this;
  }

  /** Requests of one role. */
  requestsFor(role: string): FakeRequest[] {
    return this.requests.filter((request) => request.role === role);
  }

  /** Tokens reported over all requests. */
  reportedUsage(): { input: number; output: number } {
    return this.requests.reduce((sum, request) => ({ input: sum.input + (request.usage?.input ?? 0), output: sum.output + (request.usage?.output ?? 0) }), { input: 0, output: 0 });
  }

  #takeFault(role: string | undefined): Fault | undefined {
    const index = this.#rules.findIndex((rule) => rule.times > 0 && (rule.role === undefined || rule.role === role));
    if (index < 0) return undefined;
    const rule = this.#rules[index] as FaultRule;
    if (rule.skip > 0) {
      rule.skip -= 1;
      return undefined;
    }
    rule.times -= 1;
    if (rule.times === 0) this.#rules.splice(index, 1);
    return rule.fault;
  }

  async #serve(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const receivedAt = Date.now();
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const path = (request.url ?? "/").split("?")[0] ?? "/";
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as Record<string, unknown>;
    } catch {
      this.sendError(response, 400, "the request body is not JSON");
      return;
    }
    const other = this.otherRoute(request.method ?? "GET", path);
    if (other) {
      // A route beside chat (embeddings): recorded and faulted like the others, answered by the protocol file.
      const fault = this.#takeFault(other.role);
      this.requests.push({ index: this.requests.length, path, body, role: other.role, stream: false, structured: undefined, fault: fault?.kind, abandoned: false, receivedAt });
      if (fault?.kind === "reset") {
        request.socket.destroy();
        return;
      }
      if (fault?.kind === "status") {
        this.sendError(response, fault.status, fault.message ?? `injected ${fault.status}`, fault.retryAfter !== undefined ? { "retry-after": fault.retryAfter } : {});
        return;
      }
      await other.respond(body, response);
      return;
    }
    const route = this.route(request.method ?? "GET", path);
    if (!route) {
      this.sendError(response, 404, `no route ${request.method} ${path}`);
      return;
    }
    const brainRequest = this.parseRequest(body);
    const system = brainRequest.messages.find((message) => message.getType() === "system");
    const role = system ? roleOf(typeof system.content === "string" ? system.content : system.text) : undefined;
    const fault = this.#takeFault(role);
    const record: FakeRequest = {
      index: this.requests.length,
      path,
      body,
      role,
      stream: body.stream === true,
      structured: this.structuredKind(body),
      fault: fault?.kind,
      abandoned: false,
      receivedAt,
    };
    this.requests.push(record);
    const gone = new AbortController();
    response.on("close", () => {
      if (!response.writableFinished) record.abandoned = true;
      gone.abort();
    });
    if (fault?.kind === "reset") {
      request.socket.destroy();
      return;
    }
    if (fault?.kind === "status") {
      const headers: Record<string, string> = fault.retryAfter !== undefined ? { "retry-after": fault.retryAfter } : {};
      this.sendError(response, fault.status, fault.message ?? `injected ${fault.status}`, headers);
      return;
    }
    if (fault?.kind === "delay") {
      await sleep(fault.ms, undefined, { signal: gone.signal }).catch(() => undefined);
      if (response.destroyed) return;
    }
    if (fault?.kind === "context-overflow") {
      const tokens = fakeTokens(this.promptUnits(body).map((unit) => unit.text).join(""));
      this.sendContextOverflow(response, tokens, Math.max(1, tokens - 1));
      return;
    }
    const units = this.promptUnits(body);
    const promptText = units.map((unit) => unit.text).join("");
    const maxTokens = this.maxTokensOf(body);
    if (maxTokens !== undefined) record.maxTokens = maxTokens;
    if (this.contextWindow !== undefined && fakeTokens(promptText) > this.contextWindow) {
      this.sendContextOverflow(response, fakeTokens(promptText), this.contextWindow);
      return;
    }
    const refused = this.refuseRequest(body);
    if (refused) {
      this.sendError(response, 400, refused);
      return;
    }
    const misbehaviour = fault?.kind === "misbehave" ? fault.as : undefined;
    const reply = misbehaviour === "schema-filler" ? this.fillSchema(brainRequest) : await this.think(brainRequest);
    let answer = this.shapeAnswer(brainRequest, reply, record.structured, fault?.kind === "invalid-json");
    if (misbehaviour) answer = misbehave(answer, misbehaviour);
    const reasoning = this.reasoningTokens(body);
    const output = fakeTokens(answer.text + (answer.refusal ?? "") + answer.calls.map((call) => call.arguments).join("")) + reasoning;
    const usage: FakeUsage = { input: fakeTokens(promptText), output, cacheRead: 0, cacheWrite: 0, reasoning };
    if (this.caching) Object.assign(usage, this.#cache(units, this.caching));
    record.usage = usage;
    await this.respond(response, body, brainRequest, answer, usage, fault);
  }

  /** The brain's answer in wire-neutral form: a JSON-schema answer as content, every call with its arguments as JSON text. */
  protected shapeAnswer(request: BrainRequest, reply: BrainReply, structured: FakeRequest["structured"], invalid: boolean): WireAnswer {
    let text = reply.text;
    let calls = reply.toolCalls.map((call) => ({ id: call.id, name: call.name, arguments: JSON.stringify(call.args), input: call.args }));
    if (structured === "json_schema") {
      // The JSON-schema response format answers in the content, not through a tool.
      const answer = calls.find((call) => call.name === request.structuredName);
      text = invalid ? '{"subtasks": [ {"id": "s1", ' : answer ? answer.arguments : text;
      calls = [];
    } else if (invalid && calls[0]) {
      calls[0] = { ...calls[0], arguments: '{"subtasks": [ {"id": ', input: { unexpected: "not the requested shape" } };
    }
    return { text, calls, finish: calls.length > 0 ? "tool_calls" : "stop" };
  }

  /** A careless schema-following server's answer: every field the request's schema allows filled; plain text when it asks for none. */
  protected fillSchema(request: BrainRequest): BrainReply {
    const tool = request.tools.find((spec) => spec.function.name === request.structuredName);
    if (!request.structuredName || !tool) return { text: "ok", toolCalls: [] };
    const args = valueFromSchema((tool.function.parameters ?? {}) as Record<string, unknown>, "value", "everything") as Record<string, unknown>;
    return { text: "", toolCalls: [{ id: `call_${this.requests.length}_filled`, name: request.structuredName, args }] };
  }

  /**
   * The prompt cache's part of a request's usage: the longest prefix an earlier request left in
   * the cache (at a unit boundary, or — with breakpoints — at one of this request's breakpoints
   * or up to 20 units before one), and what this one writes there.
   */
  #cache(units: readonly PromptUnit[], mode: "automatic" | "breakpoints"): Pick<FakeUsage, "cacheRead" | "cacheWrite"> {
    const prefixes: Array<{ key: string; tokens: number; breakpoint: boolean }> = [];
    const hash = createHash("sha256");
    let text = "";
    for (const unit of units) {
      hash.update(unit.text);
      text += unit.text;
      prefixes.push({ key: hash.copy().digest("hex"), tokens: fakeTokens(text), breakpoint: unit.breakpoint === true });
    }
    const breakpoints = prefixes.flatMap((prefix, index) => (prefix.breakpoint ? [index] : []));
    let read = 0;
    if (mode === "automatic") {
      for (const prefix of prefixes) if (prefix.tokens >= MIN_CACHED_TOKENS && this.#cachedPrefixes.has(prefix.key)) read = Math.floor(prefix.tokens / 128) * 128;
      for (const prefix of prefixes) if (prefix.tokens >= MIN_CACHED_TOKENS) this.#cachedPrefixes.add(prefix.key);
      return { cacheRead: read, cacheWrite: 0 };
    }
    for (const at of breakpoints) {
      for (let index = at; index >= Math.max(0, at - 20); index -= 1) {
        const prefix = prefixes[index] as (typeof prefixes)[number];
        if (this.#cachedPrefixes.has(prefix.key)) {
          read = Math.max(read, prefix.tokens);
          break;
        }
      }
    }
    let written = 0;
    for (const at of breakpoints) {
      const prefix = prefixes[at] as (typeof prefixes)[number];
      if (prefix.tokens < MIN_CACHED_TOKENS || this.#cachedPrefixes.has(prefix.key)) continue;
      this.#cachedPrefixes.add(prefix.key);
      written = Math.max(written, prefix.tokens - read);
    }
    return { cacheRead: read, cacheWrite: written };
  }

  /**
   * Asks the brain, with the request's tools bound (a JSON-schema answer becomes a forced tool,
   * named in `tool_choice` as a structured request names it).
   */
  protected async think(request: BrainRequest): Promise<BrainReply> {
    const forced = request.structuredName ? { tool_choice: request.structuredName } : {};
    const model = request.tools.length > 0 && typeof this.#brain.bindTools === "function" ? this.#brain.bindTools(request.tools, forced) : this.#brain;
    const message = (await model.invoke(request.messages)) as AIMessage;
    const text = typeof message.content === "string" ? message.content : message.text;
    let counter = 0;
    const toolCalls = (message.tool_calls ?? []).map((call) => {
      counter += 1;
      return { id: `call_${this.requests.length}_${counter}`, name: call.name, args: call.args as Record<string, unknown> };
    });
    return { text, toolCalls };
  }

  /** Writes server-sent events: `event` lines when the protocol names them (Anthropic), `data` lines always. */
  protected startStream(response: ServerResponse): void {
    response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  }

  protected sendEvent(response: ServerResponse, data: unknown, event?: string): void {
    response.write(`${event ? `event: ${event}\n` : ""}data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`);
  }

  /** Plays the middle of a streaming fault: true when the stream must stop here. */
  protected async streamFault(response: ServerResponse, fault: Fault | undefined): Promise<boolean> {
    if (fault?.kind === "truncate") {
      if (fault.mode === "end") response.end();
      else response.destroy();
      return true;
    }
    if (fault?.kind === "hold") {
      fault.reached?.();
      await fault.release;
    }
    return response.destroyed;
  }

  /** The request's prompt in the order the provider reads it, for token counts and the prompt cache. */
  protected abstract promptUnits(body: Record<string, unknown>): PromptUnit[];
  /** The output limit a request asks for. */
  protected abstract maxTokensOf(body: Record<string, unknown>): number | undefined;
  /** Refuses a request as the provider would (a parameter it does not take), with the message; undefined to answer it. */
  protected refuseRequest(_body: Record<string, unknown>): string | undefined {
    return undefined;
  }
  /** The tokens a reasoning model thinks with before it answers (none by default); part of the output tokens. */
  protected reasoningTokens(_body: Record<string, unknown>): number {
    return 0;
  }
  /** The provider's answer to a prompt larger than its context window. */
  protected abstract sendContextOverflow(response: ServerResponse, tokens: number, window: number): void;
  protected abstract route(method: string, path: string): boolean;
  /** A route that is not a chat call (an embeddings endpoint): its role in the request log and how it answers. */
  protected otherRoute(_method: string, _path: string): { role: string; respond: (body: Record<string, unknown>, response: ServerResponse) => Promise<void> } | undefined {
    return undefined;
  }
  protected abstract parseRequest(body: Record<string, unknown>): BrainRequest;
  protected abstract structuredKind(body: Record<string, unknown>): FakeRequest["structured"];
  protected abstract sendError(response: ServerResponse, status: number, message: string, headers?: Record<string, string>): void;
  protected abstract respond(response: ServerResponse, body: Record<string, unknown>, request: BrainRequest, answer: WireAnswer, usage: FakeUsage, fault: Fault | undefined): Promise<void>;
}

/** Splits text into pieces of a few characters, as streaming APIs send it. */
export function pieces(text: string, size = 12): string[] {
  const out: string[] = [];
  for (let index = 0; index < text.length; index += size) out.push(text.slice(index, index + size));
  return out;
}
