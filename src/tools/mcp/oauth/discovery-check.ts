import type { OAuthDiscoveryState } from "@modelcontextprotocol/sdk/client/auth.js";
import { ConfigError } from "../../../core/errors.js";
import type { NetworkRules } from "../../net/address-guard.js";
import { refusalOf } from "./oauth-fetch.js";

/** Whether two issuer identifiers are the same URL, a trailing slash aside (as the SDK compares them). */
function sameIssuer(left: string, right: string): boolean {
  const normal = (value: string): string => {
    try {
      return new URL(value).href.replace(/\/$/, "");
    } catch {
      return value.replace(/\/$/, "");
    }
  };
  return normal(left) === normal(right);
}

/**
 * Checks what discovery found before anything is sent to it: the authorization server's URL
 * passes the same rules as any URL a server names (https, public addresses); its metadata names
 * itself as the issuer it was fetched for (RFC 8414 §3.3, OpenID Discovery §4.3: a document that
 * does not "MUST NOT be used"; the SDK does not check it); and the endpoints it lists — where the authorization code, the
 * PKCE verifier and any client secret are sent — are on its own origin (or one the config trusts),
 * so a metadata document cannot point the token request at another host or an internal address.
 */
export function checkDiscovery(state: OAuthDiscoveryState, server: URL, rules: NetworkRules, trustedOrigins: readonly string[]): void {
  const refuse = (why: string): never => {
    throw new ConfigError("mcp_oauth_refused", `troupe refused the authorization server the MCP server ${server.origin} named: ${why}`, { server: server.href });
  };
  let authorizationServer: URL;
  try {
    authorizationServer = new URL(state.authorizationServerUrl);
  } catch {
    return refuse(`${JSON.stringify(String(state.authorizationServerUrl).slice(0, 200))} is not a URL`);
  }
  const named = refusalOf(authorizationServer, server, rules);
  if (named) refuse(`${authorizationServer.origin}: ${named}`);
  const metadata = state.authorizationServerMetadata;
  if (!metadata) return;
  let issuer: URL;
  try {
    issuer = new URL(metadata.issuer);
  } catch {
    return refuse(`its metadata's issuer ${JSON.stringify(String(metadata.issuer).slice(0, 200))} is not a URL`);
  }
  // Named by the server's protected-resource metadata: the issuer must be that URL exactly. Without
  // such metadata (the 2025-03-26 spec), troupe took the server's own origin as the authorization
  // server, and the issuer may add a path there, but not leave that origin.
  const exact = state.resourceMetadata !== undefined;
  if (exact ? !sameIssuer(metadata.issuer, state.authorizationServerUrl) : issuer.origin !== authorizationServer.origin) {
    refuse(`its metadata names the issuer ${JSON.stringify(metadata.issuer.slice(0, 200))}, not ${state.authorizationServerUrl} where it was fetched (RFC 8414 §3.3)`);
  }
  const origins = new Set([issuer.origin, ...trustedOrigins.map((origin) => new URL(origin).origin)]);
  const endpoints: Array<[string, string | undefined]> = [
    ["authorization_endpoint", metadata.authorization_endpoint],
    ["token_endpoint", metadata.token_endpoint],
    ["registration_endpoint", metadata.registration_endpoint],
  ];
  for (const [name, value] of endpoints) {
    if (value === undefined) continue;
    let endpoint: URL;
    try {
      endpoint = new URL(value);
    } catch {
      return refuse(`its ${name} is not a URL`);
    }
    if (!origins.has(endpoint.origin)) refuse(`its ${name} ${endpoint.origin}${endpoint.pathname} is on another origin than the authorization server (add the origin to oauth.trustedOrigins if it is meant)`);
    // The authorization endpoint is only shown to a person; the others are fetched by troupe.
    const why = name === "authorization_endpoint" ? (endpoint.protocol === "https:" || (endpoint.protocol === "http:" && refusalOf(endpoint, server, rules) === undefined) ? undefined : "it is not https") : refusalOf(endpoint, server, rules);
    if (why) refuse(`its ${name} ${endpoint.origin}${endpoint.pathname}: ${why}`);
  }
}
