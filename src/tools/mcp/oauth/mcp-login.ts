import type { OAuthClientInformationMixed } from "@modelcontextprotocol/sdk/shared/auth.js";
import { ConfigError } from "../../../core/errors.js";
import type { NetworkRules } from "../../net/address-guard.js";
import type { McpServerConfig } from "../mcp-config.js";
import { connectMcpServer, oauthOf } from "../mcp-connect.js";
import { type CredentialKeeping, CredentialVault } from "./credential-vault.js";
import { LoopbackReceiver, loopbackAuthorizer } from "./oauth-callback.js";
import { isLoopbackHost } from "./oauth-fetch.js";

export interface LoginOptions {
  credentials: CredentialKeeping;
  rules: NetworkRules;
  /** Sends the person to the authorization URL: the CLI prints it (and opens it with --open). */
  present(url: URL): void | Promise<void>;
  /** How long the person has to finish (default 5 minutes). */
  timeoutMs?: number;
}

export interface LoginResult {
  /** The server's tools, listed with the new authorization. */
  tools: string[];
  /** Whether a person authorized (a server that never asked needs nobody). */
  authorized: boolean;
}

/** The port a login listens on: the config's, else the one of the redirect URI registered before (strict servers compare it), else a free one. */
async function callbackPort(vault: CredentialVault, configured: number): Promise<number> {
  if (configured > 0) return configured;
  const client = (await vault.read<OAuthClientInformationMixed>("client"))?.value;
  const registered = client && "redirect_uris" in client ? client.redirect_uris[0] : undefined;
  if (!registered) return 0;
  try {
    const url = new URL(registered);
    return url.protocol === "http:" && isLoopbackHost(url.hostname) && url.port !== "" ? Number(url.port) : 0;
  } catch {
    return 0;
  }
}

/**
 * `troupe mcp login <server>`: a person authorizes troupe with the server's authorization server
 * (authorization code with PKCE, troupe registering itself first unless a client is configured),
 * and the tokens are kept sealed for every later run. Tokens kept from before are dropped first,
 * so a login always asks anew (another account, more scopes). A client-credentials server needs
 * nobody: its tokens are fetched and kept.
 */
export async function loginMcpServer(name: string, config: McpServerConfig, options: LoginOptions): Promise<LoginResult> {
  if ("command" in config) throw new ConfigError("invalid_config", `the MCP server "${name}" runs on stdio: there is nothing to log in to`, { server: name });
  const oauth = oauthOf(config);
  if (!oauth) throw new ConfigError("invalid_config", `OAuth is off for the MCP server "${name}" (oauth: false, or an Authorization header in its headers)`, { server: name });
  const vault = new CredentialVault(name, new URL(config.url).href, options.credentials);
  await vault.forget("tokens");
  if (oauth.grant === "client_credentials") {
    const connection = await connectMcpServer(name, config, { credentials: options.credentials, rules: options.rules });
    await connection.close();
    return { tools: connection.tools.map((tool) => tool.name), authorized: true };
  }
  const receiver = await LoopbackReceiver.open({ port: await callbackPort(vault, oauth.callbackPort), server: name, timeoutMs: options.timeoutMs ?? 5 * 60_000 });
  let authorized = false;
  try {
    const authorizer = loopbackAuthorizer(receiver, async (url) => {
      authorized = true;
      await options.present(url);
    });
    const connection = await connectMcpServer(name, config, { credentials: options.credentials, rules: options.rules, authorizer });
    await connection.close();
    return { tools: connection.tools.map((tool) => tool.name), authorized };
  } finally {
    await receiver.close();
  }
}

/** `troupe mcp logout <server>`: forgets what troupe keeps for it (tokens, client registration, discovery); resolves with how many were dropped. */
export async function logoutMcpServer(name: string, credentials: CredentialKeeping): Promise<number> {
  return credentials.store.delete(name);
}
