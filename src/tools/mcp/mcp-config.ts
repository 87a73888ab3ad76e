import { z } from "zod";
import { PermissionLevelName, RiskLevelName } from "../permissions.js";

/** Per-tool overrides of what an MCP server says about its tools. */
const ToolOverride = z
  .object({
    level: PermissionLevelName.optional(),
    riskLevel: RiskLevelName.optional(),
    /** Whether the tool only reads (over the server's readOnlyHint): a tool that is not has an effect untrusted data must not steer. */
    readOnly: z.boolean().optional(),
  })
  .strict();

const common = {
  /** The level a tool of this server needs, unless it is marked read-only (READ) or overridden. */
  level: PermissionLevelName.default("EXECUTE"),
  timeoutMs: z.number().int().positive().max(600_000).default(30_000),
  tools: z.record(z.string(), ToolOverride).default({}),
  /** When set, a server that cannot be reached is skipped with a warning instead of stopping troupe. */
  optional: z.boolean().default(false),
  /** Its results are the user's own data; otherwise they are untrusted (docs/trust.md). */
  trusted: z.boolean().default(false),
};

/** An MCP server started as a child process, spoken to over stdio. */
export const McpStdioServer = z
  .object({
    command: z.string().min(1),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).default({}),
    cwd: z.string().optional(),
    ...common,
  })
  .strict();

/** An MCP server reached over streamable HTTP. */
export const McpHttpServer = z
  .object({
    url: z.url({ protocol: /^https?$/ }),
    headers: z.record(z.string(), z.string()).default({}),
    ...common,
  })
  .strict();

export const McpServerConfig = z.union([McpStdioServer, McpHttpServer]);
export type McpServerConfig = z.infer<typeof McpServerConfig>;

/** Servers by name; the name prefixes their tools (`name.tool`). */
export const McpServers = z.record(z.string().regex(/^[A-Za-z][A-Za-z0-9_-]{0,31}$/, { error: "a server name is letters, digits, '_' or '-'" }), McpServerConfig);
export type McpServers = z.infer<typeof McpServers>;
