import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { z } from "zod";
import { ConfigError, errorMessage, ToolError } from "../../core/errors.js";
import { preview, truncate } from "../../core/text.js";
import { heldLabel, LabelledValue, sourceOf } from "../../core/provenance.js";
import { defineTool, type PermissionLevel, type RiskLevel, type ToolDefinition } from "../define-tool.js";
import type { McpServerConfig } from "./mcp-config.js";
import { deferredOutputValidator, SCHEMA_CHECK_MS, shallowValidator, violationsOffLoop } from "./mcp-schema-check.js";

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

interface ListedTool {
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

function toDefinition(server: string, config: McpServerConfig, client: Client, tool: ListedTool): ToolDefinition {
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
    // Every argument goes to the server: data read from the workspace, memory or another tool needs the task's or the config's word to go there (docs/trust.md).
    sends: (args: Record<string, unknown>) => ({ destination: { kind: "mcp" as const, name: server }, payload: Object.fromEntries(Object.keys(args).map((key) => [key, "name" as const])) }),
    describe: (args: Record<string, unknown>) => `call ${tool.name} on the MCP server ${server} with ${preview(args, 300)}`,
    async execute(args, context) {
      const violations = await violationsOffLoop(args, inputSchema, checkMs, context.signal, `the arguments for ${name}`);
      if (violations.length > 0) throw new ToolError("invalid_arguments", `invalid arguments for ${name}: ${violations.slice(0, 5).join("; ")}`);
      let result;
      try {
        result = await client.callTool({ name: tool.name, arguments: args }, undefined, { signal: context.signal, timeout: config.timeoutMs });
      } catch (error) {
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

/** Connects to one server and lists its tools. A server that cannot be reached is a ConfigError naming it. */
export async function connectMcpServer(server: string, config: McpServerConfig): Promise<McpConnection> {
  const client = new Client({ name: "troupe", version: "0.1.0" }, { jsonSchemaValidator: deferredOutputValidator });
  let transport: Transport;
  if ("command" in config) {
    transport = new StdioClientTransport({
      command: config.command,
      args: config.args,
      env: { ...getDefaultEnvironment(), ...config.env },
      ...(config.cwd !== undefined ? { cwd: config.cwd } : {}),
      stderr: "ignore",
    });
  } else {
    transport = new StreamableHTTPClientTransport(new URL(config.url), { requestInit: { headers: config.headers } });
  }
  try {
    await client.connect(transport, { timeout: config.timeoutMs });
    const tools: ToolDefinition[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : undefined, { timeout: config.timeoutMs });
      for (const tool of page.tools as ListedTool[]) tools.push(toDefinition(server, config, client, tool));
      cursor = page.nextCursor;
    } while (cursor);
    return { server, tools, close: () => client.close().catch(() => undefined) };
  } catch (error) {
    await client.close().catch(() => undefined);
    const where = "command" in config ? `${config.command} ${config.args.join(" ")}`.trim() : config.url;
    throw new ConfigError("mcp_unavailable", `the MCP server "${server}" (${where}) could not be used: ${errorMessage(error)}`, { server });
  }
}
