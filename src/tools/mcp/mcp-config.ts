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

/** What troupe does when a server asks a person something mid-call (MCP elicitation, form mode). */
const Elicitation = z
  .object({
    /** ask: the run waits for a person's answer (as for an approval); decline: the server is told no at once. Either way it is audited. */
    mode: z.enum(["ask", "decline"]).default("ask"),
    /** The most questions one call may ask (answers replayed included); past it the call stops, so a server cannot ask in a loop. */
    maxPerCall: z.number().int().min(1).max(20).default(5),
    /** How long a question waits for a person before `troupe serve` answers it cancel (0: as long as an approval waits). */
    timeoutMs: z.number().int().min(0).max(30 * 24 * 3_600_000).default(24 * 3_600_000),
  })
  .strict();
export type ElicitationSettings = z.infer<typeof Elicitation>;
const ELICITATION_DEFAULTS: ElicitationSettings = { mode: "ask", maxPerCall: 5, timeoutMs: 24 * 3_600_000 };

/**
 * OAuth 2.1 to a server that asks for it (the MCP authorization spec), through the MCP SDK's
 * client auth: protected-resource metadata (RFC 9728), authorization-server discovery (RFC 8414,
 * OpenID), PKCE, dynamic client registration (RFC 7591) unless a client is given here, tokens
 * kept sealed in the store and refreshed. A person authorizes once with `troupe mcp login`.
 */
export const McpOAuth = z
  .object({
    /** authorization_code: a person logs in (troupe mcp login); client_credentials: machine to machine, no person. */
    grant: z.enum(["authorization_code", "client_credentials"]).default("authorization_code"),
    /** The scopes to ask for when neither the server's 401 nor its metadata names them. */
    scope: z.string().min(1).max(1_000).optional(),
    /** A client registered beforehand (no dynamic registration): its id, and its secret for a confidential client. */
    clientId: z.string().min(1).max(500).optional(),
    clientSecret: z.string().min(1).max(2_000).optional(),
    /** client_credentials with private_key_jwt: the PKCS#8 PEM key the client signs its assertion with, and the algorithm. */
    privateKey: z.string().min(1).max(20_000).optional(),
    algorithm: z.enum(["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512"]).default("ES256"),
    /** An https URL of a client ID metadata document (SEP-991), used as the client id where the authorization server takes one. */
    clientMetadataUrl: z.url({ protocol: /^https$/ }).optional(),
    /** The loopback port `troupe mcp login` listens on for the redirect (0: the registered one, else a free one). */
    callbackPort: z.number().int().min(0).max(65_535).default(0),
    /** Origins besides the authorization server's own that its endpoints may be on (a token endpoint on another host). */
    trustedOrigins: z.array(z.url({ protocol: /^https$/ })).max(20).default([]),
  })
  .strict()
  .superRefine((value, context) => {
    if (value.grant === "client_credentials" && !value.clientId) context.addIssue({ code: "custom", path: ["clientId"], message: "client_credentials needs the client's id (and its clientSecret or privateKey)" });
    if (value.grant === "client_credentials" && !value.clientSecret && !value.privateKey) context.addIssue({ code: "custom", path: ["clientSecret"], message: "client_credentials needs clientSecret or privateKey" });
    if (value.clientSecret && !value.clientId) context.addIssue({ code: "custom", path: ["clientId"], message: "a clientSecret needs its clientId" });
  });
export type McpOAuth = z.infer<typeof McpOAuth>;

const common = {
  /** The level a tool of this server needs, unless it is marked read-only (READ) or overridden. */
  level: PermissionLevelName.default("EXECUTE"),
  timeoutMs: z.number().int().positive().max(600_000).default(30_000),
  tools: z.record(z.string(), ToolOverride).default({}),
  /** When set, a server that cannot be reached is skipped with a warning instead of stopping troupe. */
  optional: z.boolean().default(false),
  /** Its results are the user's own data; otherwise they are untrusted (docs/trust.md). */
  trusted: z.boolean().default(false),
  elicitation: Elicitation.default(ELICITATION_DEFAULTS),
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
    /** OAuth when the server asks for it (on by default; false turns it off, as does an Authorization header given above). */
    oauth: z.union([z.literal(false), McpOAuth]).optional(),
    ...common,
  })
  .strict();

export type McpHttpServer = z.infer<typeof McpHttpServer>;

export const McpServerConfig = z.union([McpStdioServer, McpHttpServer]);
export type McpServerConfig = z.infer<typeof McpServerConfig>;

/** Servers by name; the name prefixes their tools (`name.tool`). */
export const McpServers = z.record(z.string().regex(/^[A-Za-z][A-Za-z0-9_-]{0,31}$/, { error: "a server name is letters, digits, '_' or '-'" }), McpServerConfig);
export type McpServers = z.infer<typeof McpServers>;
