import { auth } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { ConfigError, errorMessage, isTroupeError } from "../../core/errors.js";
import type { NetworkRules } from "../net/address-guard.js";
import type { ToolDefinition } from "../define-tool.js";
import { type ListedTool, type McpConnection, type McpSession, toDefinition } from "./mcp-client.js";
import type { McpHttpServer, McpOAuth, McpServerConfig } from "./mcp-config.js";
import { ElicitationRouter } from "./mcp-elicitation.js";
import { deferredOutputValidator } from "./mcp-schema-check.js";
import { type CredentialKeeping, CredentialVault } from "./oauth/credential-vault.js";
import { createMcpFetch } from "./oauth/oauth-fetch.js";
import { type Authorizer, TroupeOAuthProvider } from "./oauth/oauth-provider.js";

export interface McpConnectOptions {
  /** Where OAuth credentials are kept (the store, sealed). Without it, a server that asks for OAuth cannot be used. */
  credentials?: CredentialKeeping;
  /** troupe's network rules (tools.fetch): what the URLs a server's OAuth metadata names may reach. */
  rules?: NetworkRules;
  /** A person authorizing now (troupe mcp login). Absent in runs: a server that needs one fails with mcp_login_required. */
  authorizer?: Authorizer;
  /** Told about what the server did that troupe refused outside any call (a question it could not attribute). */
  warn?: (message: string) => void;
}

const NO_RULES: NetworkRules = { allowHosts: [], denyHosts: [], allowAddresses: [] };
/** Codes that say what to do about the server's authorization: passed on as they are, not as mcp_unavailable. */
const AUTH_CODES = new Set(["mcp_login_required", "mcp_oauth_refused", "mcp_credentials_unreadable", "secret_key_invalid", "secret_key_unsafe"]);

/** The OAuth settings a streamable HTTP server gets: the config's, or the defaults; none when turned off or a static Authorization header is given. */
export function oauthOf(config: McpHttpServer): McpOAuth | undefined {
  if (config.oauth === false) return undefined;
  if (config.oauth) return config.oauth;
  if (Object.keys(config.headers).some((name) => name.toLowerCase() === "authorization")) return undefined;
  return { grant: "authorization_code", algorithm: "ES256", callbackPort: 0, trustedOrigins: [] };
}

/** The provider of an HTTP server that may use OAuth, or undefined (stdio, turned off, nowhere to keep tokens). */
export async function providerFor(server: string, config: McpServerConfig, options: McpConnectOptions): Promise<TroupeOAuthProvider | undefined> {
  if ("command" in config || !options.credentials) return undefined;
  const oauth = oauthOf(config);
  if (!oauth) return undefined;
  const url = new URL(config.url);
  return TroupeOAuthProvider.open({
    server,
    url,
    config: oauth,
    vault: new CredentialVault(server, url.href, options.credentials),
    rules: options.rules ?? NO_RULES,
    ...(options.authorizer ? { authorizer: options.authorizer } : {}),
  });
}

function transportFor(config: McpServerConfig, provider: TroupeOAuthProvider | undefined, rules: NetworkRules): Transport {
  if ("command" in config) {
    return new StdioClientTransport({
      command: config.command,
      args: config.args,
      env: { ...getDefaultEnvironment(), ...config.env },
      ...(config.cwd !== undefined ? { cwd: config.cwd } : {}),
      stderr: "ignore",
    });
  }
  const url = new URL(config.url);
  // The static headers go to the server's endpoint only (never to an authorization server it names).
  const fetch = createMcpFetch({ server: url, headers: config.headers, rules });
  return new StreamableHTTPClientTransport(url, { fetch, ...(provider ? { authProvider: provider } : {}) });
}

/**
 * Connects to one server and lists its tools. troupe's client declares elicitation (form mode), so
 * a server may ask a person something during a call (see mcp-elicitation.ts); over HTTP, a server
 * that answers 401 gets OAuth through the SDK's client auth with troupe's provider. A server that
 * cannot be reached is a ConfigError naming it; one that needs a person to log in first says so.
 */
export async function connectMcpServer(server: string, config: McpServerConfig, options: McpConnectOptions = {}): Promise<McpConnection> {
  const router = new ElicitationRouter(server, config.elicitation, options.warn);
  const rules = options.rules ?? NO_RULES;
  const where = "command" in config ? `${config.command} ${config.args.join(" ")}`.trim() : config.url;
  let provider: TroupeOAuthProvider | undefined;
  let client: Client | undefined;
  try {
    provider = await providerFor(server, config, options);
    const made = provider;
    // After a person authorized (troupe mcp login, a step-up), the code is exchanged and the request made once more; at most twice.
    const retried = async <T>(attempt: () => Promise<T>, finish: (code: string) => Promise<void>): Promise<T> => {
      for (let round = 0; ; round += 1) {
        try {
          return await attempt();
        } catch (error) {
          const code = made?.takeCode();
          if (code === undefined || round >= 2) throw error;
          await finish(code);
        }
      }
    };
    let transport: Transport | undefined;
    const opened = await retried(
      async () => {
        const fresh = new Client({ name: "troupe", version: "0.1.0" }, { capabilities: { elicitation: { form: {} } }, jsonSchemaValidator: deferredOutputValidator });
        fresh.setRequestHandler(ElicitRequestSchema, (request) => router.handle(request.params));
        transport = transportFor(config, made, rules);
        try {
          await fresh.connect(transport, { timeout: config.timeoutMs });
          const listed: ListedTool[] = [];
          let cursor: string | undefined;
          do {
            const page = await fresh.listTools(cursor ? { cursor } : undefined, { timeout: config.timeoutMs });
            listed.push(...(page.tools as ListedTool[]));
            cursor = page.nextCursor;
          } while (cursor);
          return { client: fresh, transport, listed };
        } catch (error) {
          await fresh.close().catch(() => undefined);
          throw error;
        }
      },
      async (code) => {
        if (transport instanceof StreamableHTTPClientTransport) await transport.finishAuth(code);
        else if (made && !("command" in config)) await auth(made, { serverUrl: config.url, authorizationCode: code, fetchFn: createMcpFetch({ server: new URL(config.url), headers: config.headers, rules }) });
      },
    );
    client = opened.client;
    const session: McpSession = {
      client: opened.client,
      router,
      authorized: (attempt) =>
        retried(attempt, async (code) => {
          if (opened.transport instanceof StreamableHTTPClientTransport) await opened.transport.finishAuth(code);
        }),
    };
    const tools: ToolDefinition[] = opened.listed.map((tool) => toDefinition(server, config, session, tool));
    const connected = opened.client;
    return { server, tools, close: () => connected.close().catch(() => undefined) };
  } catch (error) {
    await client?.close().catch(() => undefined);
    if (isTroupeError(error) && AUTH_CODES.has(error.code)) throw error;
    throw new ConfigError("mcp_unavailable", `the MCP server "${server}" (${where}) could not be used: ${errorMessage(error)}`, { server });
  }
}
