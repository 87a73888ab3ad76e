import { z } from "zod";
import { errorMessage, isTroupeError } from "../core/errors.js";
import { LIMITS } from "../core/limits.js";
import { preview } from "../core/text.js";
import type { ToolSpec } from "../core/tool-spec.js";
import type { ToolContext, ToolDefinition, ToolOutcome } from "./define-tool.js";


/** A finished call, as the registry reports it to its listener. */
export interface ToolCallReport {
  tool: string;
  args: unknown;
  outcome: ToolOutcome;
  durationMs: number;
  context: ToolContext;
}

export interface ToolRegistryOptions {
  onCall?: (report: ToolCallReport) => void;
}

/** Holds the tools by name and runs calls: arguments validated, time-limited, never throwing. */
export class ToolRegistry {
  readonly #tools = new Map<string, ToolDefinition>();
  readonly #specs = new Map<string, ToolSpec>();
  readonly #listeners: Array<(report: ToolCallReport) => void> = [];

  constructor(options: ToolRegistryOptions = {}) {
    if (options.onCall) this.#listeners.push(options.onCall);
  }

  /** Adds a tool; a second tool with the same name is an error. */
  register(tool: ToolDefinition): this {
    if (this.#tools.has(tool.name)) throw new Error(`a tool named "${tool.name}" is already registered`);
    this.#tools.set(tool.name, tool);
    return this;
  }

  has(name: string): boolean {
    return this.#tools.has(name);
  }

  get(name: string): ToolDefinition | undefined {
    return this.#tools.get(name);
  }

  list(): ToolDefinition[] {
    return [...this.#tools.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  names(): string[] {
    return this.list().map((tool) => tool.name);
  }

  /** The model-facing spec of a tool (its zod schema as JSON schema). */
  spec(name: string): ToolSpec {
    const cached = this.#specs.get(name);
    if (cached) return cached;
    const tool = this.#tools.get(name);
    if (!tool) throw new Error(`unknown tool "${name}"`);
    const parameters = z.toJSONSchema(tool.schema, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
    delete parameters.$schema;
    const spec: ToolSpec = { type: "function", function: { name: tool.name, description: tool.description, parameters } };
    this.#specs.set(name, spec);
    return spec;
  }

  onCall(listener: (report: ToolCallReport) => void): () => void {
    this.#listeners.push(listener);
    return () => {
      const index = this.#listeners.indexOf(listener);
      if (index >= 0) this.#listeners.splice(index, 1);
    };
  }

  /** Runs a tool. Unknown tools, invalid arguments, timeouts and thrown errors all come back as `{ ok: false }`. */
  async call(name: string, args: unknown, context: ToolContext): Promise<ToolOutcome> {
    const started = performance.now();
    const outcome = await this.#run(name, args, context);
    const report: ToolCallReport = { tool: name, args, outcome, durationMs: performance.now() - started, context };
    for (const listener of this.#listeners) {
      try {
        listener(report);
      } catch {
        // a listener's fault must not change the outcome of the call
      }
    }
    return outcome;
  }

  async #run(name: string, args: unknown, context: ToolContext): Promise<ToolOutcome> {
    const tool = this.#tools.get(name);
    if (!tool) {
      return { ok: false, error: { code: "unknown_tool", message: `unknown tool "${name}"; available: ${this.names().join(", ")}` } };
    }
    const parsed = tool.schema.safeParse(args ?? {});
    if (!parsed.success) {
      return { ok: false, error: { code: "invalid_arguments", message: `invalid arguments for ${name}: ${z.prettifyError(parsed.error)}` } };
    }
    if (context.signal?.aborted) return { ok: false, error: { code: "cancelled", message: "the run was cancelled" } };
    const timeout = AbortSignal.timeout(tool.timeoutMs);
    const signal = context.signal ? AbortSignal.any([context.signal, timeout]) : timeout;
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<ToolOutcome>((resolve) => {
      onAbort = () => {
        const timedOut = timeout.aborted;
        resolve({
          ok: false,
          error: timedOut
            ? { code: "timeout", message: `${name} did not finish within ${tool.timeoutMs} ms` }
            : { code: "cancelled", message: "the run was cancelled" },
        });
      };
      signal.addEventListener("abort", onAbort, { once: true });
    });
    const execution = (async (): Promise<ToolOutcome> => {
      try {
        const value = await tool.execute(parsed.data, { ...context, signal });
        const summary = tool.summarize ? tool.summarize(value, parsed.data) : preview(value, LIMITS.previewChars);
        return { ok: true, value, summary };
      } catch (error) {
        const code = isTroupeError(error) ? error.code : "tool_failed";
        return { ok: false, error: { code, message: errorMessage(error) } };
      }
    })();
    try {
      return await Promise.race([execution, aborted]);
    } finally {
      if (onAbort) signal.removeEventListener("abort", onAbort);
    }
  }
}
