import { describe, expect, it } from "vitest";
import { type AttemptResult, describeAttempts, retry } from "./retry.js";

const POLICY = { maxRetries: 2, backoffBaseMs: 1, backoffMaxMs: 4 };

/** An attempt that follows a script: a value, or a failure with its reason and whether to retry. */
function scripted(steps: Array<string | { reason: string; retryable: boolean; retryAfterMs?: number }>): (attempt: number) => Promise<AttemptResult<string, string>> {
  return async (attempt) => {
    const step = steps[attempt - 1];
    if (step === undefined) throw new Error(`no step for attempt ${attempt}`);
    return typeof step === "string" ? { value: step } : { failure: { ...step, error: `error of attempt ${attempt}` } };
  };
}

describe("retry", () => {
  it("keeps every failed attempt, in order, beside the value of the one that worked", async () => {
    const waits: number[] = [];
    const result = await retry(scripted([{ reason: "HTTP 500", retryable: true }, { reason: "reset", retryable: true }, "answer"]), { policy: POLICY, onRetry: (_failure, delayMs) => waits.push(delayMs) });
    expect(result).toMatchObject({ ok: true, value: "answer" });
    expect(result.failures.map((failure) => [failure.attempt, failure.reason, failure.error])).toEqual([
      [1, "HTTP 500", "error of attempt 1"],
      [2, "reset", "error of attempt 2"],
    ]);
    expect(waits).toHaveLength(2);
  });

  it("stops after maxRetries retries and says so, with every attempt's error", async () => {
    const failing = { reason: "HTTP 503", retryable: true };
    const result = await retry(scripted([failing, failing, failing, "never reached"]), { policy: POLICY });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.stop).toBe("retries_exhausted");
    expect(result.failures.map((failure) => failure.error)).toEqual(["error of attempt 1", "error of attempt 2", "error of attempt 3"]);
  });

  it("does not retry a failure a retry cannot help", async () => {
    const result = await retry(scripted([{ reason: "HTTP 400", retryable: false }, "never reached"]), { policy: POLICY });
    expect(result).toMatchObject({ ok: false, stop: "not_retryable", failures: [{ attempt: 1, reason: "HTTP 400" }] });
  });

  it("waits at least as long as the other side asked", async () => {
    const waits: number[] = [];
    await retry(scripted([{ reason: "HTTP 429", retryable: true, retryAfterMs: 30 }, "answer"]), { policy: POLICY, onRetry: (_failure, delayMs) => waits.push(delayMs) });
    expect(waits).toEqual([30]);
  });

  it("a cancellation during the wait ends the retries as aborted, with what the wait rejected with", async () => {
    const controller = new AbortController();
    const reason = new Error("cancelled by the user");
    const result = await retry(scripted([{ reason: "HTTP 500", retryable: true }, "never reached"]), {
      policy: { maxRetries: 3, backoffBaseMs: 60_000, backoffMaxMs: 60_000 },
      signal: controller.signal,
      onRetry: () => controller.abort(reason),
    });
    expect(result).toMatchObject({ ok: false, stop: "aborted", failures: [{ attempt: 1 }] });
    expect(result.ok ? undefined : (result.abortError as Error).cause).toBe(reason);
  });

  it("passes through what an attempt throws, at once", async () => {
    let calls = 0;
    const thrown = retry(async () => {
      calls += 1;
      throw new Error("refused");
    }, { policy: POLICY });
    await expect(thrown).rejects.toThrow("refused");
    expect(calls).toBe(1);
  });
});

describe("describeAttempts", () => {
  it("lists a few attempts whole", () => {
    expect(describeAttempts([{ attempt: 1, reason: "HTTP 500", label: "openai:a" }, { attempt: 1, reason: "HTTP 503", label: "anthropic:b" }])).toBe("openai:a #1: HTTP 500; anthropic:b #1: HTTP 503");
  });

  it("stays bounded for many attempts and long reasons, keeping the first ones and the last", () => {
    const attempts = Array.from({ length: 500 }, (_, index) => ({ attempt: index + 1, reason: `HTTP 500 ${"x".repeat(10_000)}` }));
    const line = describeAttempts(attempts);
    expect(line.length).toBeLessThan(1_200);
    expect(line).toContain("#1: HTTP 500");
    expect(line).toContain("(494 more)");
    expect(line).toContain("#500: HTTP 500");
  });
});
