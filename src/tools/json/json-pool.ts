import { Worker } from "node:worker_threads";
import { isCatalogueCode } from "../../core/error-codes.js";
import { ToolError, TroupeError } from "../../core/errors.js";
import type { JsonJob, JsonValue } from "./json-operations.js";

/**
 * Worker threads for the json tool. Its inputs are programs in disguise — a JSON Schema (ajv
 * compiles it to code; `uniqueItems` over 20,000 objects takes 6 s), a JSONPath, patterns — so
 * they never run on the event loop: each job runs in a worker, and a job past its deadline (or
 * cancelled) terminates its worker, which V8 stops even inside a tight loop. Idle workers are
 * kept (unreferenced) for the next job; a terminated one is replaced on demand.
 */

// Under the TypeScript sources (tests) the worker needs a loader for its own imports.
const FROM_SOURCES = import.meta.url.endsWith(".ts");
const WORKER_FILE = new URL(FROM_SOURCES ? "./json-worker.ts" : "./json-worker.js", import.meta.url);

interface Pending {
  resolve(value: JsonValue): void;
  reject(error: Error): void;
}

interface Slot {
  worker: Worker;
  pending?: Pending & { id: number };
}

interface Queued {
  job: JsonJob;
  deadlineMs: number;
  signal: AbortSignal | undefined;
  pending: Pending;
}

export class JsonPool {
  readonly #size: number;
  readonly #idle: Slot[] = [];
  #busy = 0;
  #nextId = 1;
  readonly #queue: Queued[] = [];

  constructor(size = 2) {
    this.#size = size;
  }

  /** Runs a job; rejects with a ToolError `timeout` past `deadlineMs`, `cancelled` on abort. */
  run(job: JsonJob, deadlineMs: number, signal?: AbortSignal): Promise<JsonValue> {
    return new Promise<JsonValue>((resolve, reject) => {
      this.#queue.push({ job, deadlineMs, signal, pending: { resolve, reject } });
      this.#next();
    });
  }

  #spawn(): Slot {
    const worker = new Worker(WORKER_FILE, {
      ...(FROM_SOURCES ? { execArgv: ["--import", "tsx"] } : {}),
      // A document of 5 MiB parses into far less than this; past it the worker dies, not troupe.
      resourceLimits: { maxOldGenerationSizeMb: 512, maxYoungGenerationSizeMb: 64 },
    });
    const slot: Slot = { worker };
    worker.on("message", (message: { id: number; ok: boolean; value?: JsonValue; error?: { code: string; message: string } }) => {
      const pending = slot.pending;
      if (!pending || pending.id !== message.id) return;
      slot.pending = undefined;
      if (message.ok) pending.resolve(message.value as JsonValue);
      else pending.reject(new TroupeError(isCatalogueCode(message.error?.code) ? message.error.code : "json_failed", message.error?.message ?? "the json tool failed"));
    });
    worker.on("error", (error) => this.#fail(slot, new ToolError("json_failed", `the json tool's worker stopped: ${error.message}`)));
    worker.on("exit", () => {
      const idle = this.#idle.indexOf(slot);
      if (idle >= 0) this.#idle.splice(idle, 1);
      this.#fail(slot, new ToolError("json_failed", "the json tool's worker stopped"));
    });
    return slot;
  }

  #fail(slot: Slot, error: Error): void {
    const pending = slot.pending;
    if (!pending) return;
    slot.pending = undefined;
    pending.reject(error);
  }

  #next(): void {
    while (this.#queue.length > 0 && (this.#idle.length > 0 || this.#busy < this.#size)) {
      const queued = this.#queue.shift() as Queued;
      if (queued.signal?.aborted) {
        queued.pending.reject(new ToolError("cancelled", "the call was cancelled"));
        continue;
      }
      const slot = this.#idle.pop() ?? this.#spawn();
      this.#busy += 1;
      slot.worker.ref();
      this.#start(slot, queued);
    }
  }

  #start(slot: Slot, { job, deadlineMs, signal, pending }: Queued): void {
    const id = this.#nextId++;
    let settled = false;
    const finish = (keep: boolean): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      this.#busy -= 1;
      if (keep) {
        slot.worker.unref();
        this.#idle.push(slot);
      } else void slot.worker.terminate();
      this.#next();
    };
    const stop = (error: ToolError): void => {
      slot.pending = undefined;
      finish(false);
      pending.reject(error);
    };
    const timer = setTimeout(() => stop(new ToolError("timeout", `json did not finish within ${deadlineMs} ms; its worker was stopped`)), deadlineMs);
    const onAbort = (): void => stop(new ToolError(signal?.reason instanceof Error && signal.reason.name === "TimeoutError" ? "timeout" : "cancelled", "the json call was stopped; its worker was stopped"));
    signal?.addEventListener("abort", onAbort, { once: true });
    slot.pending = {
      id,
      resolve: (value) => {
        finish(true);
        pending.resolve(value);
      },
      reject: (error) => {
        // A job that failed cleanly leaves its worker usable; one whose worker died does not.
        finish(error instanceof ToolError && error.code !== "json_failed");
        pending.reject(error);
      },
    };
    slot.worker.postMessage({ id, job });
  }
}

/** The pool the json tool and MCP tools' schema checks share: at most two threads, idle ones unreferenced. */
export const jsonPool = new JsonPool();
