import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { AIMessage, BaseMessage } from "@langchain/core/messages";
import { roleOf } from "../core/prompt-protocol.js";
import type { ToolSpec } from "../core/tool-spec.js";

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
  | { kind: "hold"; release: Promise<void>; reached?: () => void };

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
  /** Tokens the fake reported for it (input, output); absent for failed requests. */
  usage?: { input: number; output: number };
  /** The client went away before the answer was complete (a cancelled or timed-out call). */
  abandoned: boolean;
  /** When the request arrived (Date.now()). */
  receivedAt: number;
}

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
    const reply = await this.think(brainRequest);
    const usage = { input: fakeTokens(JSON.stringify(body.messages ?? "") + JSON.stringify(body.system ?? "")), output: fakeTokens(reply.text + JSON.stringify(reply.toolCalls.map((call) => call.args))) };
    record.usage = usage;
    await this.respond(response, body, brainRequest, reply, usage, fault);
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

  protected abstract route(method: string, path: string): boolean;
  /** A route that is not a chat call (an embeddings endpoint): its role in the request log and how it answers. */
  protected otherRoute(_method: string, _path: string): { role: string; respond: (body: Record<string, unknown>, response: ServerResponse) => Promise<void> } | undefined {
    return undefined;
  }
  protected abstract parseRequest(body: Record<string, unknown>): BrainRequest;
  protected abstract structuredKind(body: Record<string, unknown>): FakeRequest["structured"];
  protected abstract sendError(response: ServerResponse, status: number, message: string, headers?: Record<string, string>): void;
  protected abstract respond(
    response: ServerResponse,
    body: Record<string, unknown>,
    request: BrainRequest,
    reply: BrainReply,
    usage: { input: number; output: number },
    fault: Fault | undefined,
  ): Promise<void>;
}

/** Splits text into pieces of a few characters, as streaming APIs send it. */
export function pieces(text: string, size = 12): string[] {
  const out: string[] = [];
  for (let index = 0; index < text.length; index += size) out.push(text.slice(index, index + size));
  return out;
}
