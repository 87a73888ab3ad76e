import type { ServerResponse } from "node:http";
import { AIMessage, type BaseMessage, HumanMessage, SystemMessage, ToolMessage } from "@langchain/core/messages";
import type { ToolSpec } from "../core/tool-spec.js";
import { type BrainReply, type BrainRequest, type Fault, FakeProviderServer, type FakeRequest, pieces } from "./fake-server.js";

type Block =
  | { type: "text"; text: string }
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> }
  | { type: "tool_result"; tool_use_id: string; content?: string | Array<{ type: string; text?: string }> };

type WireMessage = { role: "user" | "assistant"; content: string | Block[] };

function blocksOf(content: WireMessage["content"]): Block[] {
  return typeof content === "string" ? [{ type: "text", text: content }] : content;
}

function resultText(content: Extract<Block, { type: "tool_result" }>["content"]): string {
  if (typeof content === "string") return content;
  return (content ?? []).map((part) => part.text ?? "").join("");
}

const ERROR_TYPES: Record<number, string> = { 400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error", 429: "rate_limit_error", 529: "overloaded_error" };

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

  protected async respond(
    response: ServerResponse,
    body: Record<string, unknown>,
    request: BrainRequest,
    reply: BrainReply,
    usage: { input: number; output: number },
    fault: Fault | undefined,
  ): Promise<void> {
    const invalid = fault?.kind === "invalid-json";
    const jsonOutput = this.structuredKind(body) === "json_schema";
    let content: Block[];
    if (jsonOutput) {
      const structured = reply.toolCalls.find((call) => call.name === request.structuredName);
      content = [{ type: "text", text: invalid ? '{"scores": {"accuracy": ' : structured ? JSON.stringify(structured.args) : reply.text }];
    } else {
      content = [];
      if (reply.text) content.push({ type: "text", text: reply.text });
      // Tool input is a JSON object on this wire, so a broken answer is one that breaks the schema.
      for (const call of reply.toolCalls) content.push({ type: "tool_use", id: `toolu_${call.id}`, name: call.name, input: invalid ? { unexpected: "not the requested shape" } : call.args });
    }
    const stopReason = content.some((block) => block.type === "tool_use") ? "tool_use" : "end_turn";
    const id = `msg_fake_${this.requests.length}`;
    const model = String(body.model ?? "fake");
    if (body.stream !== true) {
      response.writeHead(200, { "content-type": "application/json", "request-id": `req_fake_${this.requests.length}` });
      response.end(JSON.stringify({ id, type: "message", role: "assistant", model, content, stop_reason: stopReason, stop_sequence: null, usage: { input_tokens: usage.input, output_tokens: usage.output } }));
      return;
    }
    this.startStream(response);
    this.sendEvent(
      response,
      { type: "message_start", message: { id, type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: usage.input, output_tokens: 1 } } },
      "message_start",
    );
    for (const [index, block] of content.entries()) {
      if (block.type === "text") {
        this.sendEvent(response, { type: "content_block_start", index, content_block: { type: "text", text: "" } }, "content_block_start");
        const parts = pieces(block.text);
        const half = Math.ceil(parts.length / 2);
        for (const [position, part] of parts.entries()) {
          if (position === half && (await this.streamFault(response, fault))) return;
          this.sendEvent(response, { type: "content_block_delta", index, delta: { type: "text_delta", text: part } }, "content_block_delta");
        }
      } else if (block.type === "tool_use") {
        this.sendEvent(response, { type: "content_block_start", index, content_block: { type: "tool_use", id: block.id, name: block.name, input: {} } }, "content_block_start");
        for (const part of pieces(JSON.stringify(block.input), 40)) {
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
