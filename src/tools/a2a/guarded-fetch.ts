import { fetch as undiciFetch, Response } from "undici";
import { ToolError } from "../../core/errors.js";
import { checkUrl, type NetworkRules, SSRF_CODE } from "../net/address-guard.js";
import { createGuardedDispatcher } from "../net/guarded-dispatcher.js";
import { cappedBody } from "../capped-body.js";

/** The most bytes one A2A response may bring (a card, a task with its artifacts, a stream). */
export const MAX_A2A_RESPONSE_BYTES = 64 * 1024 * 1024;
const MAX_REDIRECTS = 5;

export interface GuardedFetchOptions {
  rules: NetworkRules;
  /** Headers sent only to this origin (the card's): a bearer key never goes to a host the card names elsewhere. */
  credentials?: { origin: string; headers: Record<string, string> };
  maxBytes?: number;
}

function capped(body: ReadableStream<Uint8Array>, maxBytes: number, url: string): ReadableStream<Uint8Array> {
  return cappedBody(body, maxBytes, () => new ToolError("remote_too_large", `${url} sent more than ${maxBytes} bytes`, { url }));
}

/**
 * A `fetch` for A2A clients that goes through troupe's network guard: the URL's scheme, host
 * lists and literal address are checked before each request and each redirect (GET only, at most
 * five), every DNS answer and the connected peer at connect time (private addresses refused
 * unless `tools.fetch.allowAddresses` admits them), response bodies are capped, and credentials
 * go to the card's origin only.
 */
export function createGuardedFetch(options: GuardedFetchOptions): typeof fetch {
  const dispatcher = createGuardedDispatcher(options.rules);
  const maxBytes = options.maxBytes ?? MAX_A2A_RESPONSE_BYTES;
  const guarded = async (input: string | URL | Request, init: RequestInit = {}): Promise<globalThis.Response> => {
    let url = new URL(input instanceof Request ? input.url : input.toString());
    const method = (init.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase();
    for (let hops = 0; ; hops += 1) {
      checkUrl(url, options.rules);
      const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
      if (options.credentials && url.origin === options.credentials.origin) for (const [name, value] of Object.entries(options.credentials.headers)) headers.set(name, value);
      else headers.delete("authorization");
      let response;
      try {
        response = await undiciFetch(url, { ...(init as object), method, headers, redirect: "manual", dispatcher } as never);
      } catch (error) {
        throw reachFailure(error, url.href);
      }
      const location = response.headers.get("location");
      if (response.status >= 300 && response.status < 400 && location) {
        await response.body?.cancel().catch(() => undefined);
        if (method !== "GET" || hops >= MAX_REDIRECTS) throw new ToolError("remote_redirect", `${url.href} redirected (${response.status}) where troupe does not follow`, { url: url.href });
        url = new URL(location, url);
        continue;
      }
      const declared = Number(response.headers.get("content-length") ?? "0");
      if (declared > maxBytes) {
        await response.body?.cancel().catch(() => undefined);
        throw new ToolError("remote_too_large", `${url.href} would send ${declared} bytes, more than ${maxBytes}`, { url: url.href });
      }
      const body = response.body ? capped(response.body as ReadableStream<Uint8Array>, maxBytes, url.href) : null;
      return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers }) as unknown as globalThis.Response;
    }
  };
  return guarded as typeof fetch;
}

/** The system error code under an error (ECONNREFUSED, the guard's blocked_address…), if one. */
export function networkCodeOf(error: unknown): string | undefined {
  let cause: unknown = error;
  for (let depth = 0; depth < 5 && cause instanceof Error; depth += 1) {
    const code = (cause as NodeJS.ErrnoException).code;
    if (typeof code === "string" && (code === SSRF_CODE || /^(E[A-Z]+|UND_ERR_[A-Z_]+)$/.test(code))) return code;
    cause = cause.cause;
  }
  return undefined;
}

/** Why a peer could not be reached, as a ToolError: refused by the guard, or the network's answer. */
export function reachFailure(error: unknown, url: string): ToolError {
  let cause: unknown = error;
  for (let depth = 0; depth < 5 && cause instanceof Error; depth += 1) {
    if (cause instanceof ToolError) return cause;
    const code = (cause as NodeJS.ErrnoException).code;
    if (code === SSRF_CODE) return new ToolError(SSRF_CODE, `${cause.message} (${url}); allow it with tools.fetch.allowAddresses`, { url });
    if (!cause.cause) break;
    cause = cause.cause;
  }
  const code = (cause as NodeJS.ErrnoException | undefined)?.code;
  const why = code === "ECONNREFUSED" ? "connection refused" : code === "ENOTFOUND" ? "no such host" : code ? `${code}: ${(cause as Error).message}` : (cause as Error | undefined)?.message ?? String(error);
  return new ToolError("remote_unreachable", `${url} cannot be reached: ${why}`, { url, retryable: code !== "ENOTFOUND" });
}
