import { Worker } from "node:worker_threads";

/** Limits of one JavaScript run. */
export interface JavaScriptLimits {
  timeoutMs: number;
  memoryBytes: number;
  stackBytes: number;
  maxOutputChars: number;
  /** The largest value (as JSON, in UTF-8 bytes) a script may give back. */
  maxResultBytes: number;
}

export type JavaScriptResult =
  | { ok: true; value: unknown; output: string; truncated: boolean; durationMs: number }
  | { ok: false; reason: "error" | "timeout" | "memory_limit" | "stack_limit" | "result_too_large" | "crashed"; error: string; output: string; truncated: boolean; durationMs: number };

// Node runs the worker's TypeScript source directly when troupe runs from source (tests).
const WORKER_FILE = new URL(import.meta.url.endsWith(".ts") ? "./quickjs-worker.ts" : "./quickjs-worker.js", import.meta.url);

/** How long past the script's own deadline the host waits before terminating the thread. */
const GRACE_MS = 2_000;

/**
 * Runs JavaScript in QuickJS compiled to WebAssembly, in a worker thread: the script has its own
 * heap (memory limit), stack limit and deadline (checked by QuickJS's interrupt handler), sees
 * only `input` and `console`, and a runaway thread is terminated from outside.
 */
export function runJavaScript(code: string, input: unknown, limits: JavaScriptLimits, signal?: AbortSignal): Promise<JavaScriptResult> {
  const started = performance.now();
  const elapsed = (): number => Math.round(performance.now() - started);
  return new Promise((resolve) => {
    const worker = new Worker(WORKER_FILE, {
      workerData: { code, input, ...limits },
      env: {},
      // The thread's own heap holds QuickJS's glue, the input and at most one bounded result (a
      // string, then its copy for the message): room for those, so only a fault kills it.
      resourceLimits: { maxOldGenerationSizeMb: 64 + Math.ceil((limits.maxResultBytes * 4) / (1024 * 1024)), maxYoungGenerationSizeMb: 16, stackSizeMb: 4 },
      stdout: true,
      stderr: true,
    });
    let settled = false;
    const finish = (result: JavaScriptResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      void worker.terminate();
      resolve(result);
    };
    const timer = setTimeout(
      () => finish({ ok: false, reason: "timeout", error: `the script did not finish within ${limits.timeoutMs} ms`, output: "", truncated: false, durationMs: elapsed() }),
      limits.timeoutMs + GRACE_MS,
    );
    const onAbort = (): void => finish({ ok: false, reason: "error", error: "cancelled", output: "", truncated: false, durationMs: elapsed() });
    signal?.addEventListener("abort", onAbort, { once: true });
    worker.once("message", (message: { ok: boolean; json?: string; tooLarge?: boolean; error?: { name: string; message: string }; output: string; truncated: boolean; interrupted: boolean }) => {
      if (message.ok) {
        finish({ ok: true, value: JSON.parse(message.json ?? "null") as unknown, output: message.output, truncated: message.truncated, durationMs: elapsed() });
        return;
      }
      const text = `${message.error?.name ?? "Error"}: ${message.error?.message ?? "failed"}`;
      const reason = message.interrupted
        ? "timeout"
        : message.tooLarge
          ? "result_too_large"
          : /out of memory/i.test(text)
          ? "memory_limit"
          : /stack overflow/i.test(text)
            ? "stack_limit"
            : "error";
      const error =
        reason === "timeout"
          ? `the script did not finish within ${limits.timeoutMs} ms`
          : reason === "result_too_large"
            ? `the script's value is larger than the ${limits.maxResultBytes}-byte cap on results (tools.sandbox.maxResultBytes); return a smaller value or write it to a file`
            : text;
      finish({ ok: false, reason, error, output: message.output, truncated: message.truncated, durationMs: elapsed() });
    });
    worker.once("error", (error) => {
      const text = String(error?.message ?? error);
      finish({ ok: false, reason: /memory/i.test(text) ? "memory_limit" : "crashed", error: `the sandbox stopped: ${text}`, output: "", truncated: false, durationMs: elapsed() });
    });
    worker.once("exit", (code) => finish({ ok: false, reason: "crashed", error: `the sandbox exited (${code})`, output: "", truncated: false, durationMs: elapsed() }));
  });
}
