import { describe, expect, it } from "vitest";
import { backoffDelay, classifyFailure, DEFAULT_CALL_POLICY, retryAfterMsOf, TruncatedStreamError } from "./call-policy.js";

const httpError = (status: number, headers: Record<string, string> = {}) => Object.assign(new Error(`${status} failed`), { status, headers: new Headers(headers) });

describe("classifyFailure", () => {
  it("retries 408, 409, 429 and 5xx, and not other client errors", () => {
    for (const status of [408, 409, 429, 500, 502, 503, 529]) expect(classifyFailure(httpError(status)).retryable).toBe(true);
    for (const status of [400, 401, 403, 404, 422]) expect(classifyFailure(httpError(status)).retryable).toBe(false);
    expect(classifyFailure(httpError(401)).reason).toBe("HTTP 401: 401 failed");
  });

  it("retries connection resets and refusals found anywhere in the cause chain, timeouts and cut-off streams", () => {
    const reset = Object.assign(new TypeError("fetch failed"), { cause: Object.assign(new Error("other side closed"), { code: "ECONNRESET" }) });
    expect(classifyFailure(reset)).toEqual({ retryable: true, reason: "connection reset" });
    expect(classifyFailure(Object.assign(new Error("x"), { code: "ECONNREFUSED" })).reason).toBe("network error ECONNREFUSED");
    expect(classifyFailure(Object.assign(new Error("Request timed out."), { name: "TimeoutError" })).retryable).toBe(true);
    expect(classifyFailure(new TruncatedStreamError()).retryable).toBe(true);
    expect(classifyFailure(new Error("something else")).retryable).toBe(false);
  });

  it("reads Retry-After in seconds, as a date, and retry-after-ms", () => {
    expect(retryAfterMsOf(httpError(429, { "retry-after": "2" }))).toBe(2000);
    expect(retryAfterMsOf(httpError(429, { "retry-after-ms": "250" }))).toBe(250);
    const now = Date.parse("2025-01-01T00:00:00Z");
    expect(retryAfterMsOf(httpError(429, { "retry-after": "Wed, 01 Jan 2025 00:00:03 GMT" }), now)).toBe(3000);
    expect(retryAfterMsOf(httpError(429))).toBeUndefined();
    expect(classifyFailure(httpError(429, { "retry-after": "1.5" }))).toEqual({ retryable: true, reason: "HTTP 429", retryAfterMs: 1500 });
  });
});

describe("backoffDelay", () => {
  it("doubles from the base with jitter in the upper half, is capped, and never undercuts Retry-After", () => {
    const policy = { ...DEFAULT_CALL_POLICY, backoffBaseMs: 100, backoffMaxMs: 1000 };
    expect([1, 2, 3].map((retry) => backoffDelay(retry, policy, undefined, () => 0))).toEqual([50, 100, 200]);
    expect([1, 2, 3].map((retry) => backoffDelay(retry, policy, undefined, () => 1))).toEqual([100, 200, 400]);
    expect(backoffDelay(10, policy, undefined, () => 1)).toBe(1000);
    expect(backoffDelay(1, policy, 5000, () => 1)).toBe(5000);
  });
});
