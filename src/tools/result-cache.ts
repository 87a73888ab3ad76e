import { createHash } from "node:crypto";
import { stableStringify } from "../core/text.js";
import type { ToolOutcome } from "./define-tool.js";

/** Successful results of idempotent tools, by a hash of the tool, its arguments and the workspace, for a TTL. */
export class ResultCache {
  readonly #entries = new Map<string, { expires: number; outcome: ToolOutcome }>();
  readonly #maxEntries: number;

  constructor(maxEntries = 500) {
    this.#maxEntries = maxEntries;
  }

  static key(tool: string, args: unknown, workspace: string): string {
    return createHash("sha256").update(`${tool}\u0000${stableStringify(args)}\u0000${workspace}`).digest("hex");
  }

  get(key: string, now = Date.now()): ToolOutcome | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    if (entry.expires <= now) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry.outcome;
  }

  set(key: string, outcome: ToolOutcome, ttlMs: number, now = Date.now()): void {
    this.#entries.delete(key);
    this.#entries.set(key, { expires: now + ttlMs, outcome });
    // Maps iterate in insertion order: the first keys are the oldest.
    while (this.#entries.size > this.#maxEntries) {
      const oldest = this.#entries.keys().next().value;
      if (oldest === undefined) break;
      this.#entries.delete(oldest);
    }
  }

  get size(): number {
    return this.#entries.size;
  }

  clear(): void {
    this.#entries.clear();
  }
}
