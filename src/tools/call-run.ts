import { errorMessage, isTroupeError } from "../core/errors.js";
import { LIMITS } from "../core/limits.js";
import { LabelledValue } from "../core/provenance.js";
import { retry } from "../core/retry.js";
import { preview } from "../core/text.js";
import { toolSide, type Trail } from "./call-trail.js";
import type { Semaphore } from "./concurrency.js";
import type { ToolContext, ToolDefinition, ToolOutcome } from "./define-tool.js";
import { jsonSizeWithin } from "./result-size.js";

/** The largest value a tool may hand back unless it says otherwise (`maxResultBytes`). */
export const DEFAULT_MAX_RESULT_BYTES = 16 * 1024 * 1024;

/** The longest wait between two attempts of a tool call. */
const MAX_RETRY_DELAY_MS = 2_000;

const CANCELLED: ToolOutcome = { ok: false, error: { code: "cancelled", message: "the run was cancelled" } };

/** System error codes worth a retry: the network or the machine was briefly unable, not the call wrong. */
const TRANSIENT_CODES = /^(ECONNRESET|ECONNREFUSED|ETIMEDOUT|EPIPE|EAI_AGAIN|EBUSY|EAGAIN|EMFILE|ENFILE|UND_ERR_(SOCKET|CONNECT_TIMEOUT|HEADERS_TIMEOUT|BODY_TIMEOUT|CLOSED))$/;

function isTransient(error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Error && depth < 4; current = current.cause, depth += 1) {
    const code = (current as NodeJS.ErrnoException).code;
    if (typeof code === "string" && TRANSIENT_CODES.test(code)) return true;
  }
  return false;
}

/** One attempt under the tool's timeout. `retryable` says whether a retry could help (timeouts, unexpected faults). */
async function attemptTool(tool: ToolDefinition, args: unknown, context: ToolContext): Promise<{ outcome: ToolOutcome; retryable: boolean }> {
  if (context.signal?.aborted) return { outcome: { ok: false, error: { code: "cancelled", message: "the run was cancelled" } }, retryable: false };
  const timeout = AbortSignal.timeout(tool.timeoutMs);
  const signal = context.signal ? AbortSignal.any([context.signal, timeout]) : timeout;
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<{ outcome: ToolOutcome; retryable: boolean }>((resolve) => {
    onAbort = () => {
      const timedOut = timeout.aborted && !context.signal?.aborted;
      resolve({
        outcome: {
          ok: false,
          error: timedOut ? { code: "timeout", message: `${tool.name} did not finish within ${tool.timeoutMs} ms` } : { code: "cancelled", message: "the run was cancelled" },
        },
        retryable: timedOut,
      });
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
  const rest = toolSide(context);
  const execution = (async (): Promise<{ outcome: ToolOutcome; retryable: boolean }> => {
    try {
      const returned = await tool.execute(args, { ...rest, signal });
      // A label the tool's own code attached (never one written inside a value: see LabelledValue).
      const attached = returned instanceof LabelledValue ? returned.label : undefined;
      const value = returned instanceof LabelledValue ? returned.value : returned;
      const cap = tool.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES;
      if (jsonSizeWithin(value, cap).over) {
        return { outcome: { ok: false, error: { code: "result_too_large", message: `${tool.name} returned more than its ${cap}-byte cap on results; ask for less (a smaller range, a limit) or write it to a file` } }, retryable: false };
      }
      const summary = tool.summarize ? tool.summarize(value, args) : preview(value, LIMITS.previewChars);
      return { outcome: { ok: true, value, summary, ...(attached ? { label: attached } : {}) }, retryable: false };
    } catch (error) {
      if (isTroupeError(error)) {
        return { outcome: { ok: false, error: { code: error.code, message: error.message } }, retryable: error.data.retryable === true };
      }
      return { outcome: { ok: false, error: { code: "tool_failed", message: errorMessage(error) } }, retryable: isTransient(error) };
    }
  })();
  try {
    return await Promise.race([execution, aborted]);
  } finally {
    if (onAbort) signal.removeEventListener("abort", onAbort);
  }
}

/**
 * The run step of a tool call: attempts under the shared retry loop (src/core/retry.ts), each
 * holding one of the registry's slots (a remote tool's wait is another machine's, so it holds
 * none). Only an idempotent tool is retried, and only for a failure a retry could help.
 */
export async function runWithRetry(tool: ToolDefinition, args: unknown, context: ToolContext, trail: Trail, options: { slots: Semaphore; retryBaseMs: number; idempotent: boolean }): Promise<ToolOutcome> {
  const retries = options.idempotent ? (tool.retries ?? 3) : 0;
  const result = await retry<ToolOutcome, ToolOutcome>(
    async () => {
      let release: () => void = () => {};
      try {
        if (!tool.remote) release = await options.slots.acquire(context.signal);
      } catch {
        return { failure: { retryable: false, reason: "cancelled", error: CANCELLED } };
      }
      trail.attempts += 1;
      try {
        const { outcome, retryable } = await attemptTool(tool, args, context);
        if (outcome.ok) return { value: outcome };
        return { failure: { retryable: retryable && !context.signal?.aborted, reason: outcome.error.message, error: outcome } };
      } finally {
        release();
      }
    },
    { policy: { maxRetries: retries, backoffBaseMs: options.retryBaseMs, backoffMaxMs: MAX_RETRY_DELAY_MS }, ...(context.signal ? { signal: context.signal } : {}) },
  );
  if (result.ok) return result.value;
  return result.failures[result.failures.length - 1]?.error ?? CANCELLED;
}
