import { setTimeout as sleep } from "node:timers/promises";
import { truncate } from "./text.js";

/**
 * One retry loop for model calls and tool calls. Not p-retry: an attempt here comes back as a
 * value (a tool call never throws), a failure can set its own least wait (Retry-After), and the
 * caller needs every attempt's failure, not only the last one's.
 */

/** How often and how long to retry: exponential backoff from `backoffBaseMs`, capped at `backoffMaxMs`. */
export interface RetryPolicy {
  maxRetries: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
}

/** Why an attempt failed, and whether another could go better. */
export interface AttemptFailure<E = unknown> {
  retryable: boolean;
  reason: string;
  /** The least wait the other side asked for (Retry-After). */
  retryAfterMs?: number;
  /** What the attempt failed with: the thrown error, or the failed outcome. */
  error: E;
}

/** A failed attempt as kept: its number (from 1) and when it ended. */
export interface FailedAttempt<E = unknown> extends AttemptFailure<E> {
  attempt: number;
  at: number;
}

export type AttemptResult<T, E> = { value: T } | { failure: AttemptFailure<E> };

/** Why the retries stopped without a value, in the words of vercel/ai's `RetryError.reason`. */
export type RetryStop = "not_retryable" | "retries_exhausted" | "aborted";

export type Retried<T, E> =
  | { ok: true; value: T; failures: FailedAttempt<E>[] }
  | { ok: false; stop: RetryStop; failures: [FailedAttempt<E>, ...FailedAttempt<E>[]]; abortError?: unknown };

export interface RetryOptions<E> {
  policy: RetryPolicy;
  /** Cuts a backoff short: the result is then `aborted`, with what the wait rejected with. */
  signal?: AbortSignal;
  /** Told before each wait, with the failure that caused it and how long the wait is. */
  onRetry?: (failure: FailedAttempt<E>, delayMs: number) => void;
  /** The jitter's source (a test fixes it). */
  random?: () => number;
}

/**
 * The wait before retry number `retry` (from 1): exponential from the base, capped, with jitter
 * over its upper half; never sooner than the other side asked.
 */
export function backoffDelay(retry: number, policy: Pick<RetryPolicy, "backoffBaseMs" | "backoffMaxMs">, retryAfterMs?: number, random: () => number = Math.random): number {
  const exponential = Math.min(policy.backoffMaxMs, policy.backoffBaseMs * 2 ** (retry - 1));
  const jittered = Math.round(exponential / 2 + (random() * exponential) / 2);
  return Math.max(jittered, Math.ceil(retryAfterMs ?? 0));
}

/**
 * Runs `attempt` until it yields a value, fails in a way a retry cannot help, or has been retried
 * `policy.maxRetries` times; waits a backoff between attempts. What `attempt` throws passes
 * through at once (a refusal, a cancellation: answers, not failures to retry).
 */
export async function retry<T, E>(attempt: (attemptNumber: number) => Promise<AttemptResult<T, E>>, options: RetryOptions<E>): Promise<Retried<T, E>> {
  const failures: FailedAttempt<E>[] = [];
  for (let attemptNumber = 1; ; attemptNumber += 1) {
    const result = await attempt(attemptNumber);
    if ("value" in result) return { ok: true, value: result.value, failures };
    const failed: FailedAttempt<E> = { ...result.failure, attempt: attemptNumber, at: Date.now() };
    failures.push(failed);
    const kept = failures as [FailedAttempt<E>, ...FailedAttempt<E>[]];
    if (!failed.retryable) return { ok: false, stop: "not_retryable", failures: kept };
    if (attemptNumber > options.policy.maxRetries) return { ok: false, stop: "retries_exhausted", failures: kept };
    const delayMs = backoffDelay(attemptNumber, options.policy, failed.retryAfterMs, options.random);
    options.onRetry?.(failed, delayMs);
    try {
      await sleep(delayMs, undefined, options.signal ? { signal: options.signal } : {});
    } catch (error) {
      return { ok: false, stop: "aborted", failures: kept, abortError: error };
    }
  }
}

/** The most attempts an error message lists, and the longest reason it quotes for each. */
const SHOWN_ATTEMPTS = 6;
const SHOWN_REASON_CHARS = 160;

/**
 * Every attempt in one bounded line, for an error message: the first few and the last (the last
 * is the cause), each reason cut short, and how many were left out between.
 */
export function describeAttempts(attempts: ReadonlyArray<{ attempt: number; reason: string; label?: string }>): string {
  const shown = attempts.length <= SHOWN_ATTEMPTS ? attempts : [...attempts.slice(0, SHOWN_ATTEMPTS - 1), attempts[attempts.length - 1] as (typeof attempts)[number]];
  const parts = shown.map((entry) => `${entry.label ? `${entry.label} ` : ""}#${entry.attempt}: ${truncate(entry.reason, SHOWN_REASON_CHARS)}`);
  if (attempts.length > SHOWN_ATTEMPTS) parts.splice(SHOWN_ATTEMPTS - 1, 0, `(${attempts.length - SHOWN_ATTEMPTS} more)`);
  return parts.join("; ");
}
