import { isIP } from "node:net";
import { fetch as undiciFetch, Response as UndiciResponse } from "undici";
import { ConfigError, errorMessage, isTroupeError } from "../../../core/errors.js";
import { checkUrl, type NetworkRules } from "../../net/address-guard.js";
import { createGuardedDispatcher } from "../../net/guarded-dispatcher.js";
import { cappedBody } from "../../capped-body.js";

/**
 * The fetch an MCP HTTP client goes through, its OAuth discovery and token requests included
 * (the SDK's `auth()` uses the transport's fetch for them). The server URL is the operator's
 * choice and is fetched as configured, with the config's static headers (and only it gets them).
 * Every other URL was named by a server's metadata — an attacker's choice, if either is hostile —
 * and is held to more: https (plain http only between loopback hosts, for local servers),
 * troupe's network rules (no private, loopback, link-local or metadata address, checked on every
 * DNS answer and on the connected peer, unless `tools.fetch.allowAddresses` admits it; the
 * server's own host is admitted, since the operator named it), no redirect followed here (the SDK
 * follows only those within an origin, each coming back through this fetch), a time limit and a
 * cap on the body, so an authorization server cannot make troupe fetch its internals or fill its
 * memory.
 */

/** The most bytes a metadata, registration or token response may have. */
export const MAX_OAUTH_RESPONSE_BYTES = 1024 * 1024;
const OAUTH_TIMEOUT_MS = 15_000;

export interface McpFetchOptions {
  /** The MCP endpoint as configured. */
  server: URL;
  /** The config's static headers, sent to the endpoint's origin only. */
  headers: Record<string, string>;
  rules: NetworkRules;
  maxBytes?: number;
  timeoutMs?: number;
}

export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  if (isIP(host) === 4) return host.startsWith("127.");
  return host === "::1";
}

function capped(body: ReadableStream<Uint8Array>, maxBytes: number, url: string): ReadableStream<Uint8Array> {
  return cappedBody(body, maxBytes, () => new ConfigError("mcp_oauth_refused", `${url} sent more than ${maxBytes} bytes`, { url }));
}

/** Why a URL named by metadata may not be fetched, or undefined when it may. */
export function refusalOf(url: URL, server: URL, rules: NetworkRules): string | undefined {
  const sameHost = url.hostname === server.hostname;
  if (url.protocol === "http:" && !(isLoopbackHost(url.hostname) && isLoopbackHost(server.hostname))) return `it is plain http (only https is used for authorization, except between loopback hosts)`;
  if (url.protocol !== "https:" && url.protocol !== "http:") return `its scheme ${url.protocol} is not https`;
  if (url.username || url.password) return "it carries a user name or password";
  if (sameHost) return undefined;
  try {
    checkUrl(url, rules);
  } catch (error) {
    return errorMessage(error);
  }
  return undefined;
}

export function createMcpFetch(options: McpFetchOptions): typeof fetch {
  const { server, headers: staticHeaders, rules } = options;
  const maxBytes = options.maxBytes ?? MAX_OAUTH_RESPONSE_BYTES;
  const timeoutMs = options.timeoutMs ?? OAUTH_TIMEOUT_MS;
  let guarded: ReturnType<typeof createGuardedDispatcher> | undefined;
  const mcpFetch = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const url = new URL(input instanceof Request ? input.url : input.toString());
    if (url.origin === server.origin && url.pathname === server.pathname) {
      // The MCP endpoint itself: as configured, its streams unbounded in time.
      const headers = new Headers(init.headers);
      for (const [name, value] of Object.entries(staticHeaders)) if (!headers.has(name)) headers.set(name, value);
      return fetch(url, { ...init, headers });
    }
    const refused = refusalOf(url, server, rules);
    if (refused) throw new ConfigError("mcp_oauth_refused", `troupe did not fetch ${url.origin}${url.pathname}, which the MCP server ${server.origin} or its authorization server named: ${refused}`, { url: url.href });
    const sameHost = url.hostname === server.hostname;
    guarded ??= createGuardedDispatcher(rules);
    const signal = init.signal ? AbortSignal.any([init.signal, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs);
    let response;
    try {
      response = await undiciFetch(url, { ...(init as object), redirect: "manual", signal, ...(sameHost ? {} : { dispatcher: guarded }) } as never);
    } catch (error) {
      if (isTroupeError(error)) throw error;
      let cause: unknown = error;
      while (cause instanceof Error && cause.cause instanceof Error) cause = cause.cause;
      throw new ConfigError("mcp_oauth_refused", `${url.origin}${url.pathname} could not be fetched: ${errorMessage(cause)}`, { url: url.href });
    }
    const declared = Number(response.headers.get("content-length") ?? "0");
    if (declared > maxBytes) {
      await response.body?.cancel().catch(() => undefined);
      throw new ConfigError("mcp_oauth_refused", `${url.origin}${url.pathname} would send ${declared} bytes, more than ${maxBytes}`, { url: url.href });
    }
    const body = response.body ? capped(response.body as ReadableStream<Uint8Array>, maxBytes, `${url.origin}${url.pathname}`) : null;
    const wrapped = new UndiciResponse(body as never, { status: response.status, statusText: response.statusText, headers: response.headers });
    // The SDK reads `url` to describe a redirect it did not follow.
    Object.defineProperty(wrapped, "url", { value: response.url || url.href });
    return wrapped as unknown as Response;
  };
  return mcpFetch as typeof fetch;
}
