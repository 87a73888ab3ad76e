import path from "node:path";
import { loadConfig } from "../config/config-file.js";
import { parseEnv } from "../config/env.js";
import { resolveToolsConfig } from "../config/tools-config.js";
import { ConfigError } from "../core/errors.js";
import { openStore, type Store } from "../store/index.js";
import type { McpServerConfig } from "../tools/mcp/mcp-config.js";
import { type LoginResult, loginMcpServer, logoutMcpServer } from "../tools/mcp/oauth/mcp-login.js";
import type { NetworkRules } from "../tools/net/address-guard.js";
import { mcpCredentialsOf } from "./mcp-credentials.js";

/**
 * The MCP servers' authorization, for `troupe mcp login | logout | auth`: the config's servers and
 * the store's credentials, without starting an engine (whose start needs the servers authorized).
 */
export interface McpAuthOptions {
  dataDir?: string;
  databaseUrl?: string;
  configFile?: string;
  configDir?: string;
}

interface McpAuthSetup {
  servers: Record<string, McpServerConfig>;
  rules: NetworkRules;
  store: Store;
}

async function setup(options: McpAuthOptions): Promise<McpAuthSetup & { env: ReturnType<typeof parseEnv> }> {
  const env = parseEnv();
  const loaded = await loadConfig(options.configDir, options.configFile ?? env.TROUPE_CONFIG);
  const tools = resolveToolsConfig(loaded.config.tools, { base: loaded.file ? path.dirname(loaded.file) : path.resolve(options.configDir ?? process.cwd()), file: loaded.file });
  const databaseUrl = options.databaseUrl ?? env.TROUPE_DATABASE_URL;
  const store = await openStore({ dataDir: options.dataDir ?? env.TROUPE_DATA_DIR, ...(databaseUrl ? { databaseUrl } : {}) });
  const rules: NetworkRules = { allowHosts: tools.fetch.allowHosts ?? [], denyHosts: tools.fetch.denyHosts ?? [], allowAddresses: tools.fetch.allowAddresses ?? [] };
  return { servers: tools.mcp.servers, rules, store, env };
}

function serverOf(servers: Record<string, McpServerConfig>, name: string): McpServerConfig {
  const server = servers[name];
  if (!server) {
    const known = Object.keys(servers);
    throw new ConfigError("invalid_config", `no MCP server "${name}" in the config's tools.mcp.servers${known.length > 0 ? ` (it has ${known.join(", ")})` : " (it has none)"}`, { server: name });
  }
  return server;
}

/** Authorizes troupe with a server's authorization server; the tokens are kept sealed in the store. */
export async function mcpLogin(name: string, options: McpAuthOptions & { present(url: URL): void | Promise<void>; timeoutMs?: number }): Promise<LoginResult> {
  const { servers, rules, store, env } = await setup(options);
  try {
    return await loginMcpServer(name, serverOf(servers, name), { credentials: mcpCredentialsOf(store, env), rules, present: options.present, ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}) });
  } finally {
    await store.close();
  }
}

/** Forgets what troupe keeps for a server; resolves with how many credentials were dropped. */
export async function mcpLogout(name: string, options: McpAuthOptions): Promise<number> {
  const { servers, store, env } = await setup(options);
  try {
    // A server no longer in the config may still have credentials kept: they can be forgotten too.
    if (!servers[name] && (await store.mcpCredentials.list()).every((credential) => credential.server !== name)) serverOf(servers, name);
    return await logoutMcpServer(name, mcpCredentialsOf(store, env));
  } finally {
    await store.close();
  }
}
