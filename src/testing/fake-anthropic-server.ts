import type { ServerResponse } from "node:http";
import { AIMessage, type BaseMessage, HumanMessage, SystemMessage, ToolMessage } from "@langchain/core/messages";
import type { ToolSpec } from "../core/tool-spec.js";
import { createHash } from "node:crypto";
import { type BrainRequest, type Fault, FakeProviderServer, type FakeRequest, type FakeUsage, pieces, type PromptUnit } from "./fake-server.js";
import type { WireAnswer } from "./misbehaviour.js";

type Block =
  | { type: "text"; text: string; cache_control?: unknown }
  | { type: "thinking"; thinking: string; signature: string }
  | { type: "redacted_thinking"; data: string }
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown>; cache_control?: unknown }
  | { type: "tool_result"; tool_use_id: string; content?: string | Array<{ type: string; text?: string }>; cache_control?: unknown };

type WireMessage = { role: "user" | "assistant"; content: string | Block[] };

function blocksOf(content: WireMessage["content"]): Block[] {
  return typeof content === "string" ? [{ type: "text", text: content }] : content;
}

function resultText(content: Extract<Block, { type: "tool_result" }>["content"]): string {
  if (typeof content === "string") return content;
  return (content ?? []).map((part) => part.text ?? "").join("");
}

const ERROR_TYPES: Record<number, string> = { 400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error", 429: "rate_limit_error", 529: "overloaded_error" };

/** What the fake thinks, when thinking is on (the text is the same each time; the signature proves it came from here). */
const THINKING = "Let me work out what is asked and which tool answers it.";

/** The signature of a thinking block, as the fake signs it: a thinking block sent back must carry it unchanged. */
function signatureOf(thinking: string): string {
  return `fake-signature-${createHash("sha256").update(thinking).digest("hex").slice(0, 24)}`;
}

const STOP_REASONS: Record<WireAnswer["finish"], string> = { stop: "end_turn", tool_calls: "tool_use", length: "max_tokens", refusal: "refusal" };

/**
 * A fake Anthropic Messages API: `POST /v1/messages` in the real wire format — tool use with a
 * forced `tool_choice`, JSON outputs (`output_config.format`), streaming as named server-sent
 * events (message_start … message_stop) with usage, and errors with Anthropic's error body.
 */
export class FakeAnthropicServer extends FakeProviderServer {
  get baseUrl(): string {
    return this.origin;
  }

  protected route(method: string, path: string): boolean {
    return method === "POST" && path === "/v1/messages";
  }

  protected structuredKind(body: Record<string, unknown>): FakeRequest["structured"] {
    const format = (body.output_config as { format?: { type?: string } } | undefined)?.format;
    if (format?.type === "json_schema") return "json_schema";
    return (body.tool_choice as { type?: string } | undefined)?.type === "tool" ? "tool" : undefined;
  }

  protected parseRequest(body: Record<string, unknown>): BrainRequest {
    const messages: BaseMessage[] = [];
    const system = body.system;
    if (typeof system === "string") messages.push(new SystemMessage(system));
    else if (Array.isArray(system)) messages.push(new SystemMessage((system as Array<{ text?: string }>).map((block) => block.text ?? "").join("\n")));
    // tool_result blocks carry only the id; the name comes from the tool_use they answer.
    const toolNames = new Map<string, string>();
    for (const message of (body.messages ?? []) as WireMessage[]) {
      const blocks = blocksOf(message.content);
      if (message.role === "assistant") {
        for (const block of blocks) if (block.type === "tool_use") toolNames.set(block.id, block.name);
        const text = blocks.flatMap((block) => (block.type === "text" ? [block.text] : [])).join("");
        const toolCalls = blocks.flatMap((block) => (block.type === "tool_use" ? [{ id: block.id, name: block.name, args: block.input, type: "tool_call" as const }] : []));
        messages.push(new AIMessage({ content: text, tool_calls: toolCalls }));
        continue;
      }
      for (const block of blocks) {
        if (block.type === "tool_result") messages.push(new ToolMessage({ content: resultText(block.content), tool_call_id: block.tool_use_id, name: toolNames.get(block.tool_use_id) }));
        else if (block.type === "text") messages.push(new HumanMessage(block.text));
      }
    }
    const tools: ToolSpec[] = ((body.tools ?? []) as Array<{ name: string; description?: string; input_schema?: Record<string, unknown> }>).map((tool) => ({
      type: "function",
      function: { name: tool.name, description: tool.description ?? "", parameters: tool.input_schema ?? {} },
    }));
    const format = (body.output_config as { format?: { type?: string; schema?: Record<string, unknown> } } | undefined)?.format;
    if (format?.type === "json_schema") {
      const name = typeof format.schema?.title === "string" ? format.schema.title : "answer";
      return { messages, tools: [...tools, { type: "function", function: { name, description: "", parameters: format.schema ?? {} } }], structuredName: name };
    }
    const choice = body.tool_choice as { type?: string; name?: string } | undefined;
    return { messages, tools, ...(choice?.type === "tool" && choice.name ? { structuredName: choice.name } : {}) };
  }

  protected sendError(response: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
    const type = ERROR_TYPES[status] ?? (status >= 500 ? "api_error" : "invalid_request_error");
    response.writeHead(status, { "content-type": "application/json", "request-id": `req_fake_${this.requests.length}`, ...headers });
    response.end(JSON.stringify({ type: "error", error: { type, message } }));
  }

  protected sendContextOverflow(response: ServerResponse, tokens: number, window: number): void {
    this.sendError(response, 400, `prompt is too long: ${tokens} tokens > ${window} maximum`);
  }

  /**
   * Tools, system blocks, then each message's blocks, as Anthropic reads them; a block with
   * `cache_control` ends at a breakpoint, and the request's top-level `cache_control` puts one on
   * its last block.
   */
  protected promptUnits(body: Record<string, unknown>): PromptUnit[] {
    const units: PromptUnit[] = [];
    const marked = (value: unknown): boolean => typeof value === "object" && value !== null && "cache_control" in value && (value as { cache_control?: unknown }).cache_control !== undefined;
    for (const tool of (body.tools ?? []) as unknown[]) units.push({ text: JSON.stringify(tool), breakpoint: marked(tool) });
    if (typeof body.system === "string") units.push({ text: body.system });
    else for (const block of (body.system ?? []) as unknown[]) units.push({ text: JSON.stringify(block), breakpoint: marked(block) });
    for (const message of (body.messages ?? []) as WireMessage[]) {
      if (typeof message.content === "string") units.push({ text: `${message.role}:${message.content}` });
      else for (const block of message.content) units.push({ text: `${message.role}:${JSON.stringify({ ...block, cache_control: undefined })}`, breakpoint: marked(block) });
    }
    const last = units.at(-1);
    if (last && body.cache_control !== undefined) last.breakpoint = true;
    return units;
  }

  protected maxTokensOf(body: Record<string, unknown>): number | undefined {
    return typeof body.max_tokens === "number" ? body.max_tokens : undefined;
  }

  /**
   * With extended thinking on, the API refuses a forced tool, and an assistant turn with tool use
   * sent back without the thinking block that came with it (signed as it was given).
   */
  protected override refuseRequest(body: Record<string, unknown>): string | undefined {
    if (!thinkingOn(body)) return undefined;
    const choice = body.tool_choice as { type?: string } | undefined;
    if (choice?.type === "tool" || choice?.type === "any") return "Thinking may not be enabled when tool_choice forces tool use.";
    for (const [index, message] of ((body.messages ?? []) as WireMessage[]).entries()) {
      if (message.role !== "assistant" || typeof message.content === "string") continue;
      const blocks = message.content;
      if (!blocks.some((block) => block.type === "tool_use")) continue;
      const first = blocks[0];
      if (first?.type !== "thinking" && first?.type !== "redacted_thinking") {
        return `messages.${index}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${first?.type ?? "nothing"}\`. When \`thinking\` is enabled, an assistant message with tool use must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks).`;
      }
      if (first.type === "thinking" && first.signature !== signatureOf(first.thinking)) return `messages.${index}.content.0: Invalid \`signature\` in \`thinking\` block`;
    }
    return undefined;
  }

  protected async respond(response: ServerResponse, body: Record<string, unknown>, _request: BrainRequest, answer: WireAnswer, usage: FakeUsage, fault: Fault | undefined): Promise<void> {
    const content: Block[] = [];
    if (thinkingOn(body)) content.push({ type: "thinking", thinking: THINKING, signature: signatureOf(THINKING) });
    const text = answer.finish === "refusal" ? (answer.refusal ?? "") : answer.text;
    if (text) content.push({ type: "text", text });
    for (const call of answer.calls) content.push({ type: "tool_use", id: call.id.startsWith("toolu_") ? call.id : `toolu_${call.id}`, name: call.name, input: call.input });
    const stopReason = STOP_REASONS[answer.finish];
    const id = `msg_fake_${this.requests.length}`;
    const model = String(body.model ?? "fake");
    // Anthropic's input_tokens leaves out what was read from or written to the cache.
    const wireUsage = { input_tokens: usage.input - usage.cacheRead - usage.cacheWrite, output_tokens: usage.output, cache_read_input_tokens: usage.cacheRead, cache_creation_input_tokens: usage.cacheWrite };
    if (body.stream !== true) {
      response.writeHead(200, { "content-type": "application/json", "request-id": `req_fake_${this.requests.length}` });
      response.end(JSON.stringify({ id, type: "message", role: "assistant", model, content, stop_reason: stopReason, stop_sequence: null, usage: wireUsage }));
      return;
    }
    this.startStream(response);
    this.sendEvent(response, { type: "message_start", message: { id, type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null, usage: { ...wireUsage, output_tokens: 1 } } }, "message_start");
    const calls = new Map(answer.calls.map((call) => [call.id.startsWith("toolu_") ? call.id : `toolu_${call.id}`, call.arguments]));
    for (const [index, block] of content.entries()) {
      if (block.type === "thinking") {
        this.sendEvent(response, { type: "content_block_start", index, content_block: { type: "thinking", thinking: "", signature: "" } }, "content_block_start");
        for (const part of pieces(block.thinking)) this.sendEvent(response, { type: "content_block_delta", index, delta: { type: "thinking_delta", thinking: part } }, "content_block_delta");
        this.sendEvent(response, { type: "content_block_delta", index, delta: { type: "signature_delta", signature: block.signature } }, "content_block_delta");
      } else if (block.type === "text") {
        this.sendEvent(response, { type: "content_block_start", index, content_block: { type: "text", text: "" } }, "content_block_start");
        const parts = pieces(block.text);
        const half = Math.ceil(parts.length / 2);
        for (const [position, part] of parts.entries()) {
          if (position === half && (await this.streamFault(response, fault))) return;
          this.sendEvent(response, { type: "content_block_delta", index, delta: { type: "text_delta", text: part } }, "content_block_delta");
        }
      } else if (block.type === "tool_use") {
        this.sendEvent(response, { type: "content_block_start", index, content_block: { type: "tool_use", id: block.id, name: block.name, input: {} } }, "content_block_start");
        // The arguments as written: JSON pieces, possibly cut off (an answer stopped at max_tokens).
        for (const part of pieces(calls.get(block.id) ?? JSON.stringify(block.input), 40)) {
          this.sendEvent(response, { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: part } }, "content_block_delta");
        }
      }
      this.sendEvent(response, { type: "content_block_stop", index }, "content_block_stop");
    }
    this.sendEvent(response, { type: "message_delta", delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: usage.output } }, "message_delta");
    this.sendEvent(response, { type: "message_stop" }, "message_stop");
    response.end();
  }
}

function thinkingOn(body: Record<string, unknown>): boolean {
  const thinking = body.thinking as { type?: string } | undefined;
  return thinking?.type === "enabled" || thinking?.type === "adaptive";
}
