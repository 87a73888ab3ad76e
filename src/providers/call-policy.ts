import { ContextOverflowError } from "@langchain/core/errors";

/** How troupe calls a model: per-call timeout, retries and backoff. The same for every provider. */
export interface CallPolicy {
  /** Per attempt; for a stream, the longest wait for the next piece. */
  timeoutMs: number;
  /** Retries after the first attempt. */
  maxRetries: number;
  /** First backoff delay; each retry doubles it, with jitter. */
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** The longest Retry-After troupe waits for; a longer one counts as a failure of that model. */
  retryAfterMaxMs: number;
}

export const DEFAULT_CALL_POLICY: CallPolicy = {
  timeoutMs: 60_000,
  maxRetries: 3,
  backoffBaseMs: 500,
  backoffMaxMs: 20_000,
  retryAfterMaxMs: 60_000,
};

/** What a failed attempt means for the next one. */
export interface FailureClass {
  retryable: boolean;
  /** Why, in a few words: `HTTP 429`, `connection reset`, `timed out after 60 s`. */
  reason: string;
  /** The wait the server asked for (Retry-After / retry-after-ms), when it did. */
  retryAfterMs?: number;
}

const NETWORK_CODES = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EAI_AGAIN",
  "ENETUNREACH",
  "EHOSTUNREACH",
  "UND_ERR_SOCKET",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
  "UND_ERR_CLOSED",
]);

type Loose = Record<string, unknown>;

function asObject(value: unknown): Loose | undefined {
  return typeof value === "object" && value !== null ? (value as Loose) : undefined;
}

/** The HTTP status an error from any of the provider clients carries. */
export function statusOf(error: unknown): number | undefined {
  const object = asObject(error);
  if (!object) return undefined;
  for (const value of [object.status, object.status_code, object.statusCode, asObject(object.response)?.status]) {
    if (typeof value === "number" && value >= 100 && value < 600) return value;
  }
  return undefined;
}

function header(error: unknown, name: string): string | undefined {
  const object = asObject(error);
  for (const headers of [object?.headers, asObject(object?.response)?.headers]) {
    if (!headers) continue;
    if (typeof (headers as Headers).get === "function") {
      const value = (headers as Headers).get(name);
      if (value !== null) return value;
    } else {
      const record = headers as Record<string, unknown>;
      const value = record[name] ?? record[name.toLowerCase()];
      if (typeof value === "string") return value;
    }
  }
  return undefined;
}

/** Retry-After in seconds or as an HTTP date, or retry-after-ms (OpenAI, Anthropic), in milliseconds. */
export function retryAfterMsOf(error: unknown, now = Date.now()): number | undefined {
  const milliseconds = header(error, "retry-after-ms");
  if (milliseconds !== undefined && /^\d+(\.\d+)?$/.test(milliseconds.trim())) return Number(milliseconds);
  const value = header(error, "retry-after")?.trim();
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** The network error code somewhere in an error's cause chain. */
function networkCodeOf(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current; depth += 1) {
    const object = asObject(current);
    const code = object?.code;
    if (typeof code === "string" && NETWORK_CODES.has(code)) return code;
    current = object?.cause;
  }
  return undefined;
}

function nameOf(error: unknown): string {
  const name = asObject(error)?.name;
  return typeof name === "string" ? name : "";
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Sorts a failed attempt: 408, 409, 429 and 5xx, connection resets and refusals, timeouts and
 * cut-off streams are worth another attempt; anything else (a bad request, a wrong key, a
 * missing model) is not — the next model of the fallback chain may still serve.
 */
export function classifyFailure(error: unknown): FailureClass {
  const status = statusOf(error);
  if (status !== undefined) {
    const retryable = status === 408 || status === 409 || status === 429 || status >= 500;
    const retryAfterMs = retryAfterMsOf(error);
    return { retryable, reason: `HTTP ${status}${retryable ? "" : `: ${messageOf(error).split("\n")[0]?.slice(0, 200) ?? ""}`}`, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
  }
  const code = networkCodeOf(error);
  if (code) return { retryable: true, reason: code === "ECONNRESET" || code === "UND_ERR_SOCKET" ? "connection reset" : `network error ${code}` };
  const name = nameOf(error);
  if (name === "APIConnectionTimeoutError" || name === "TimeoutError") return { retryable: true, reason: "timed out" };
  if (name === "APIConnectionError" || /^(fetch failed|terminated|Connection error\.?)$/i.test(messageOf(error))) return { retryable: true, reason: "connection failed" };
  if (name === "TruncatedStreamError") return { retryable: true, reason: messageOf(error) };
  return { retryable: false, reason: messageOf(error).split("\n")[0]?.slice(0, 200) ?? "failed" };
}

const CONTEXT_OVERFLOW = /context[_ ]length[_ ]exceeded|maximum context length|context window|prompt is too long|too many (?:input )?tokens|input length and `?max_tokens`? exceed/i;

/**
 * Whether a failure says the prompt does not fit the model's context window (OpenAI's
 * `context_length_exceeded`, Anthropic's "prompt is too long", and the wordings of
 * OpenAI-compatible servers). Not worth the same call again: the prompt must shrink first.
 */
export function isContextOverflow(error: unknown): boolean {
  // The provider packages wrap what they recognise in LangChain's own error.
  if (ContextOverflowError.isInstance(error)) return true;
  const status = statusOf(error);
  if (status !== undefined && status !== 400 && status !== 413) return false;
  const object = asObject(error);
  const code = object?.code ?? asObject(object?.error)?.code;
  if (code === "context_length_exceeded") return true;
  return status !== undefined && CONTEXT_OVERFLOW.test(messageOf(error));
}

/** The backoff before a retry, shared with tool calls (src/core/retry.ts). */
export { backoffDelay } from "../core/retry.js";

/** An error for a stream that ended before the model said it had finished. */
export class TruncatedStreamError extends Error {
  constructor(message = "the stream ended before the model finished its answer") {
    super(message);
    this.name = "TruncatedStreamError";
  }
}
