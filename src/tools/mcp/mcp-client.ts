import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { z } from "zod";
import { errorMessage, ToolError } from "../../core/errors.js";
import { preview, truncate } from "../../core/text.js";
import { heldLabel, LabelledValue, sourceOf } from "../../core/provenance.js";
import { defineTool, type PermissionLevel, type RiskLevel, type ToolDefinition } from "../define-tool.js";
import type { McpServerConfig } from "./mcp-config.js";
import { CallSlot, type ElicitationRouter } from "./mcp-elicitation.js";
import { SCHEMA_CHECK_MS, shallowValidator, violationsOffLoop } from "./mcp-schema-check.js";

/**
 * Tools from MCP servers, through the official SDK's client (stdio or streamable HTTP). Each
 * server tool becomes a troupe tool named `server.tool`, so it goes through the same registry:
 * permissions, approval, audit, timeouts. Read-only tools (the `readOnlyHint` annotation) need
 * READ; the others the server's level (EXECUTE by default); destructive ones are high-risk.
 */

export interface McpConnection {
  server: string;
  tools: ToolDefinition[];
  close(): Promise<void>;
}

/** What a tool of a connected server calls through: its session, its question router, and the retry after a person authorized. */
export interface McpSession {
  client: Client;
  router: ElicitationRouter;
  /** Runs a request; when the server asks for more authorization (a step-up) and a person gives it, once more. */
  authorized<T>(attempt: () => Promise<T>): Promise<T>;
}

export interface ListedTool {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  annotations?: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean; title?: string };
}

/** A troupe tool name for a server's tool: `server.tool`, with other characters replaced. */
export function mcpToolName(server: string, tool: string): string {
  return `${server}.${tool.replace(/[^A-Za-z0-9_.-]/g, "_")}`.slice(0, 64);
}

function contentText(content: unknown): string {
  if (!Array.isArray(content)) return "";
  return content
    .map((part: { type?: string; text?: string; resource?: { uri?: string; text?: string }; mimeType?: string }) => {
      if (part.type === "text") return part.text ?? "";
      if (part.type === "resource") return part.resource?.text ?? `[resource ${part.resource?.uri ?? ""}]`;
      return `[${part.type ?? "content"}${part.mimeType ? ` ${part.mimeType}` : ""}]`;
    })
    .join("\n");
}

/** A server's tool as a troupe tool. */
export function toDefinition(server: string, config: McpServerConfig, session: McpSession, tool: ListedTool): ToolDefinition {
  const override = config.tools[tool.name] ?? {};
  const readOnly = override.readOnly ?? tool.annotations?.readOnlyHint === true;
  const level: PermissionLevel = override.level ?? (readOnly ? "READ" : config.level);
  const riskLevel: RiskLevel = override.riskLevel ?? (tool.annotations?.destructiveHint === true && !readOnly ? "high" : readOnly ? "low" : "medium");
  // Servers declare draft-07 or 2020-12; the keywords tools use are the same, so the dialect tag is dropped.
  const { $schema: _dialect, ...declared } = tool.inputSchema;
  const inputSchema = { type: "object", ...declared };
  // Arguments are checked in two parts: the shallow, linear one here; the whole schema off the event loop before the call is sent.
  const validate = shallowValidator(inputSchema);
  const schema = z.record(z.string(), z.unknown()).superRefine((value, context) => {
    if (validate && !validate(value)) {
      for (const issue of validate.errors ?? []) context.addIssue({ code: "custom", message: `${issue.instancePath || "/"} ${issue.message ?? issue.keyword}` });
    }
  });
  const name = mcpToolName(server, tool.name);
  // At most half the call's time, so a check stopped at its deadline leaves the call time to say why.
  const checkMs = Math.min(SCHEMA_CHECK_MS, Math.ceil(config.timeoutMs / 2));
  return defineTool({
    name,
    description: truncate(tool.description ?? tool.annotations?.title ?? `${tool.name} (MCP server ${server})`, 1_000),
    schema,
    parameters: inputSchema,
    permission: level,
    riskLevel,
    idempotent: readOnly || tool.annotations?.idempotentHint === true,
    timeoutMs: config.timeoutMs,
    source: `mcp:${server}`,
    // A tool that is not read-only: its schema does not say which arguments are content, so each may choose what the effect acts on.
    ...(readOnly ? {} : { targets: (args: Record<string, unknown>) => ({ targets: Object.fromEntries(Object.keys(args).map((key) => [key, "name" as const])) }) }),
    ...(config.trusted ? {} : { origin: () => [sourceOf("mcp", `${server}.${tool.name}`)] }),
    // Its server may ask a person something mid-call (docs/tools.md, "Questions from MCP servers").
    ...(config.elicitation.mode === "ask" ? { mayAsk: true } : {}),
    // Every argument goes to the server: data read from the workspace, memory or another tool needs the task's or the config's word to go there (docs/trust.md).
    sends: (args: Record<string, unknown>) => ({ destination: { kind: "mcp" as const, name: server }, payload: Object.fromEntries(Object.keys(args).map((key) => [key, "name" as const])) }),
    describe: (args: Record<string, unknown>) => `call ${tool.name} on the MCP server ${server} with ${preview(args, 300)}`,
    async execute(args, context) {
      const violations = await violationsOffLoop(args, inputSchema, checkMs, context.signal, `the arguments for ${name}`);
      if (violations.length > 0) throw new ToolError("invalid_arguments", `invalid arguments for ${name}: ${violations.slice(0, 5).join("; ")}`);
      const slot = new CallSlot(name, context);
      const signal = context.signal ? AbortSignal.any([context.signal, slot.signal]) : slot.signal;
      let result;
      try {
        result = await session.router.within(slot, () => session.authorized(() => session.client.callTool({ name: tool.name, arguments: args }, undefined, { signal, timeout: config.timeoutMs })));
      } catch (error) {
        if (slot.paused) throw new ToolError("input_required", `${name} waits for a person's answer to its server's question`);
        if (slot.stopped) throw new ToolError("mcp_failed", slot.stopped, { retryable: false });
        throw new ToolError("mcp_failed", `${server}.${tool.name}: ${errorMessage(error)}`, { retryable: false });
      }
      if (tool.outputSchema && result.structuredContent !== undefined && !result.isError) {
        const wrong = await violationsOffLoop(result.structuredContent, tool.outputSchema, checkMs, context.signal, `the result of ${name}`);
        if (wrong.length > 0) throw new ToolError("mcp_failed", `${server}.${tool.name}: its structured content does not match the tool's output schema: ${wrong.slice(0, 5).join("; ")}`, { retryable: false });
      }
      const text = contentText(result.content);
      if (result.isError) throw new ToolError("mcp_tool_error", text || `${server}.${tool.name} reported an error`);
      const value = result.structuredContent !== undefined ? { text, structured: result.structuredContent } : { text };
      // A trusted server's result is trusted, and still the server's private data (for the egress check).
      return config.trusted ? new LabelledValue(value, heldLabel([sourceOf("mcp", `${server}.${tool.name}`)])) : value;
    },
    summarize: (value) => truncate(String((value as { text?: string }).text ?? "").replace(/\s+/g, " "), 300) || "done",
  });
}

