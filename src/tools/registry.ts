import { z } from "zod";
import type { ErrorCode } from "../core/error-codes.js";
import { errorMessage } from "../core/errors.js";
import { LIMITS } from "../core/limits.js";
import type { PlannedArgument } from "../core/plan-check.js";
import { type CallProvenance, joinLabels, readLabel, TRUSTED } from "../core/provenance.js";
import type { ToolSpec } from "../core/tool-spec.js";
import type { AuditEntry, AuditSink } from "./audit.js";
import { approve, authorize, type Authorized, holdEffect, steer } from "./call-gates.js";
import { runWithRetry } from "./call-run.js";
import { addReason, auditEntry, deny, keptOutcome, newTrail, type Trail } from "./call-trail.js";
import { Semaphore } from "./concurrency.js";
import type { ToolContext, ToolDefinition, ToolOutcome } from "./define-tool.js";
import type { PermissionPolicy, RuntimeGrantSource } from "./permissions.js";
import { argumentProblems } from "./plan-arguments.js";
import { createInputChannel } from "./input-channel.js";
import { ResultCache } from "./result-cache.js";
import type { Egress } from "./egress.js";
import type { Steering, TrustPolicy } from "./trust-policy.js";
import { writeAhead } from "./write-ahead.js";

export { DEFAULT_MAX_RESULT_BYTES } from "./call-run.js";

/** A finished call, as the registry reports it to its listeners. */
export interface ToolCallReport {
  tool: string;
  args: unknown;
  outcome: ToolOutcome;
  durationMs: number;
  context: ToolContext;
  audit: AuditEntry;
}

export interface ToolRegistryOptions {
  onCall?: (report: ToolCallReport) => void;
  /** Checked on every call; without one (a bare registry in a unit test or a script) every call is allowed. */
  policy?: PermissionPolicy;
  /** Labels every outcome and checks each call for steering by untrusted data; without one (a bare registry) neither happens. `null` in `configure` removes it. */
  trust?: TrustPolicy | null;
  audit?: AuditSink;
  /** Calls running at once, across all callers (default 5). */
  concurrency?: number;
  /** The first retry's delay; it doubles each time, with jitter. */
  retryBaseMs?: number;
  /** Grants added and revoked at runtime (the store's), read as each call starts. */
  runtimeGrants?: RuntimeGrantSource;
}

/** Options for one call. */
export interface ToolCallOptions {
  /**
   * A reason the caller found not to run the call (a worker's unknown value handle, say). The
   * call still goes through the lookup and the permission check — a call the policy denies reads
   * as denied — then comes back with this error, unrun and audited like every other call.
   */
  refusal?: { code: ErrorCode; message: string };
}

/**
 * Holds the tools by name and runs every call the same way: the tool looked up, its arguments
 * validated, the caller's permission checked (a denied call never runs), a person's approval
 * for high-risk tools, a cache for idempotent tools that allow it, a concurrency limit, a
 * timeout per attempt, retries with backoff for idempotent tools, and one audit entry per call.
 * A call never throws: every outcome is `{ ok: true, value }` or `{ ok: false, error }`.
 */
export class ToolRegistry {
  readonly #tools = new Map<string, ToolDefinition>();
  /** The tools by name, sorted once per registration: every worker's offer lists them. */
  #sorted: ToolDefinition[] | undefined;
  readonly #specs = new Map<string, ToolSpec>();
  readonly #listeners: Array<(report: ToolCallReport) => void> = [];
  readonly #cache = new ResultCache();
  readonly #slots: Semaphore;
  #policy: PermissionPolicy | undefined;
  #trust: TrustPolicy | undefined;
  #audit: AuditSink | undefined;
  #retryBaseMs: number;
  #runtimeGrants: RuntimeGrantSource | undefined;

  constructor(options: ToolRegistryOptions = {}) {
    if (options.onCall) this.#listeners.push(options.onCall);
    this.#policy = options.policy;
    this.#trust = options.trust ?? undefined;
    this.#audit = options.audit;
    this.#slots = new Semaphore(options.concurrency ?? LIMITS.toolConcurrency);
    this.#retryBaseMs = options.retryBaseMs ?? 100;
    this.#runtimeGrants = options.runtimeGrants;
  }

  /** Sets the policy, the audit sink or the concurrency limit (the engine wires them after creating the store). */
  configure(options: Pick<ToolRegistryOptions, "policy" | "trust" | "audit" | "concurrency" | "retryBaseMs" | "runtimeGrants">): this {
    if (options.runtimeGrants !== undefined) this.#runtimeGrants = options.runtimeGrants;
    if (options.policy !== undefined) this.#policy = options.policy;
    if (options.trust !== undefined) this.#trust = options.trust ?? undefined;
    if (options.audit !== undefined) this.#audit = options.audit;
    if (options.concurrency !== undefined) this.#slots.limit = options.concurrency;
    if (options.retryBaseMs !== undefined) this.#retryBaseMs = options.retryBaseMs;
    return this;
  }

  get policy(): PermissionPolicy | undefined {
    return this.#policy;
  }

  get trust(): TrustPolicy | undefined {
    return this.#trust;
  }

  /** Whether a call of this tool could wait for a person because untrusted data steered it (the policy asks, and the tool has an effect). */
  mayAskTrust(name: string): boolean {
    return this.#trust?.mayAsk(this.#tools.get(name)) ?? false;
  }

  /** Whether a call's value is public web content itself (a page, search results): its own sources are all web or search. */
  readsPublicWeb(name: string, args: unknown, value: unknown): boolean {
    const tool = this.#tools.get(name);
    if (!tool?.origin || !this.#trust || typeof args !== "object" || args === null) return false;
    const own = tool.origin(args as Record<string, unknown>, value, this.#trust);
    return own.length > 0 && own.every((source) => source.kind === "web" || source.kind === "search");
  }

  /** How untrusted data steers this call, or whether it would send private data where nobody named, before it is made (null: neither, or no trust policy). */
  steering(name: string, args: Record<string, unknown>, provenance: CallProvenance | undefined): Steering | Egress | null {
    const tool = this.#tools.get(name);
    if (!tool || !this.#trust) return null;
    return this.#trust.steering(tool, args, provenance) ?? this.#trust.egress(tool, args, provenance);
  }

  /** Adds a tool; a second tool with the same name is an error. */
  register(tool: ToolDefinition): this {
    if (this.#tools.has(tool.name)) throw new Error(`a tool named "${tool.name}" is already registered`);
    this.#tools.set(tool.name, tool);
    this.#sorted = undefined;
    return this;
  }

  has(name: string): boolean {
    return this.#tools.has(name);
  }

  get(name: string): ToolDefinition | undefined {
    return this.#tools.get(name);
  }

  list(): ToolDefinition[] {
    this.#sorted ??= [...this.#tools.values()].sort((a, b) => a.name.localeCompare(b.name));
    return [...this.#sorted];
  }

  names(): string[] {
    return this.list().map((tool) => tool.name);
  }

  /** The tools an agent can reach under the policy (all of them without a policy). */
  reachable(agent: string): string[] {
    return this.#policy ? this.#policy.reachable(agent, this.list()) : this.names();
  }

  /** Whether the tool's server may put a question to a person mid-call (MCP elicitation): its callers may pause. */
  mayAsk(name: string): boolean {
    return this.#tools.get(name)?.mayAsk === true;
  }

  /** Whether a call to this tool by this agent would wait for a person's approval. */
  needsApproval(name: string, agent: string): boolean {
    const tool = this.#tools.get(name);
    return tool !== undefined && this.#policy !== undefined && this.#policy.needsApproval(tool, agent);
  }

  /**
   * The workspace paths a call of `name` with these arguments reads and writes, as the tool
   * declares them; undefined for an unknown tool or one that declares nothing.
   */
  resources(name: string, args: Record<string, unknown>): { reads: string[]; writes: string[] } | undefined {
    const declared = this.#tools.get(name)?.resources?.(args);
    return declared ? { reads: declared.reads ?? [], writes: declared.writes ?? [] } : undefined;
  }

  /** The JSON schema of a tool's value, when it declares one. */
  outputSchema(name: string): Record<string, unknown> | undefined {
    return this.#tools.get(name)?.outputSchema;
  }

  /** A tool's parameter names, in the order its schema lists them (a plan's arguments without names take them in this order). */
  parameterNames(name: string): string[] {
    if (!this.#tools.has(name)) return [];
    const properties = this.spec(name).function.parameters.properties;
    return typeof properties === "object" && properties !== null ? Object.keys(properties) : [];
  }

  /** Why a plan's arguments for a direct step of this tool do not fit it (src/tools/plan-arguments.ts); empty for an unknown tool. */
  argumentProblems(name: string, args: Readonly<Record<string, PlannedArgument>>): string[] {
    const tool = this.#tools.get(name);
    return tool ? argumentProblems(tool, this.spec(name).function.parameters, args) : [];
  }

  /** The model-facing spec of a tool (its JSON schema). */
  spec(name: string): ToolSpec {
    const cached = this.#specs.get(name);
    if (cached) return cached;
    const tool = this.#tools.get(name);
    if (!tool) throw new Error(`unknown tool "${name}"`);
    let parameters = tool.parameters;
    if (!parameters) {
      parameters = z.toJSONSchema(tool.schema, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
      delete parameters.$schema;
    }
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

  /**
   * Runs a tool. Unknown tools, invalid arguments, denied permissions, timeouts and thrown errors
   * all come back as `{ ok: false }`. The only throws that pass are the graph pausing for a
   * person: `context.requestApproval`'s (nothing has run or been recorded at that point), and
   * `context.requestInput`'s when a tool's server asked a question mid-call (the call has stopped
   * and its row says it paused, so the same call id runs again).
   */
  async call(name: string, args: unknown, given: ToolContext, options: ToolCallOptions = {}): Promise<ToolOutcome> {
    const started = performance.now();
    const trail = newTrail();
    // The tool's own way to put its server's questions to a person (MCP elicitation), in this call's context.
    const context: ToolContext = { ...given, input: createInputChannel(given, trail) };
    let outcome: ToolOutcome;
    try {
      outcome = await this.#steps(name, args, context, trail, options.refusal);
    } catch (error) {
      if (trail.suspended) throw error;
      outcome = { ok: false, error: { code: "tool_failed", message: errorMessage(error) } };
      trail.status = "error";
    }
    outcome = this.#labelled(name, trail, outcome, context);
    const durationMs = performance.now() - started;
    if (trail.pause) {
      // Its server asked a person something: the call stopped, its row says so (and keeps no outcome,
      // so the same call id runs again), and the run pauses. The answer comes to the call made again.
      trail.keepsOutcome = false;
      addReason(trail, "paused: its server asked a person a question (elicitation); the call is made again once they answer");
      const paused: ToolOutcome = { ok: false, error: { code: "input_required", message: `${name} waits for a person's answer to its server's question` } };
      trail.status = "error";
      await this.#record(name, context, trail, paused, auditEntry(name, args, context, trail, paused, durationMs));
      throw trail.pause.error;
    }
    const audit = trail.replayed?.entry ?? auditEntry(name, args, context, trail, outcome, durationMs);
    await this.#record(name, context, trail, outcome, audit);
    this.#report({ tool: name, args, outcome, durationMs, context, audit });
    return outcome;
  }

  /**
   * A call's steps, in order: look the tool up → authorize → steer → hold → approve → answer from
   * the cache → write ahead (or settle an earlier row of the same call id) → run with retry. Each
   * step either lets the call on or ends it with its outcome.
   */
  async #steps(name: string, args: unknown, context: ToolContext, trail: Trail, refusal: ToolCallOptions["refusal"]): Promise<ToolOutcome> {
    const tool = this.#tools.get(name);
    if (!tool) return deny(trail, "unknown tool", "unknown_tool", `unknown tool "${name}"; available: ${this.names().join(", ")}`);
    const authorized = await authorize(tool, args, context, trail, { policy: this.#policy, refreshGrants: () => this.refreshRuntimeGrants(), refusal });
    if ("refused" in authorized) return authorized.refused;
    const steered = steer(this.#trust, tool, authorized.args, context, trail);
    if (steered && "refused" in steered) return steered.refused;
    const finding = steered?.ask;
    // Before a person is asked, too: nobody is asked about a call of a plan that is then dropped.
    const held = await holdEffect(name, context, trail, authorized.idempotent, authorized.needsApproval || finding !== undefined);
    if (held) return held;
    const refused = await approve(tool, authorized, context, trail, finding);
    if (refused) return refused;
    const cache = this.#cached(tool, authorized, context);
    if (cache.hit) {
      trail.cached = true;
      trail.status = "ok";
      return cache.hit;
    }
    const settled = await writeAhead(this.#audit, tool, authorized.args, context, trail, authorized.idempotent);
    if (settled) return settled;
    // The file tools judge what they read, and keep the labels of what they write, by the policy's file trust.
    const called = this.#trust ? { ...context, fileTrust: this.#trust.files } : context;
    const outcome = await runWithRetry(tool, authorized.args, called, trail, { slots: this.#slots, retryBaseMs: this.#retryBaseMs, idempotent: authorized.idempotent });
    trail.status = outcome.ok ? "ok" : "error";
    if (cache.key && outcome.ok) this.#cache.set(cache.key, outcome, cache.ttl);
    return outcome;
  }

  /** The cache step: an idempotent tool that allows it answers a call it answered lately with the same arguments in the same workspace. */
  #cached(tool: ToolDefinition, call: Authorized, context: ToolContext): { key?: string; ttl: number; hit?: ToolOutcome } {
    const ttl = typeof tool.cacheTtlMs === "function" ? tool.cacheTtlMs(call.args) : (tool.cacheTtlMs ?? 0);
    if (!call.idempotent || ttl <= 0) return { ttl };
    const key = ResultCache.key(tool.name, call.args, context.workspace);
    const hit = this.#cache.get(key);
    return { key, ttl, ...(hit ? { hit } : {}) };
  }

  /** The audit step: the written-ahead row completed, else one row recorded; a replayed call's earlier row already stands for it. */
  async #record(name: string, context: ToolContext, trail: Trail, outcome: ToolOutcome, audit: AuditEntry): Promise<void> {
    try {
      if (trail.replayed) return;
      if (trail.rowId !== undefined && this.#audit?.complete) {
        await this.#audit.complete(trail.rowId, { entry: audit, outcome: context.callId && trail.keepsOutcome ? keptOutcome(outcome) : null });
        // The row now answers the call: what its effect kept for settling can go.
        if (trail.effect) await this.#tools.get(name)?.effect?.release?.(trail.effect);
      } else await this.#audit?.record(audit);
    } catch {
      // the audit sink's fault must not change the outcome; the store reports its own failures
    }
  }

  /** Tells the listeners of a finished call. */
  #report(report: ToolCallReport): void {
    for (const listener of this.#listeners) {
      try {
        listener(report);
      } catch {
        // a listener's fault must not change the outcome of the call
      }
    }
  }

  /**
   * The outcome with its provenance label: what the caller had read and passed by reference,
   * the tool's own untrusted sources, and a label the tool's code attached to its value (a
   * stored label: an earlier turn's result, a fact). A call that never ran carries its inputs'.
   */
  #labelled(name: string, trail: Trail, outcome: ToolOutcome, context: ToolContext): ToolOutcome {
    if (!this.#trust) return outcome;
    const tool = this.#tools.get(name);
    const own = outcome.label === undefined ? TRUSTED : readLabel(outcome.label);
    const ran = tool !== undefined && (trail.attempts > 0 || trail.cached || trail.replayed !== undefined || trail.status === "ok");
    const label = joinLabels(own, this.#trust.labelOf(ran ? tool : {}, trail.args ?? {}, outcome.ok ? outcome.value : undefined, context.provenance));
    return { ...outcome, label };
  }

  /** Reads the runtime grants now (a run about to start: what its agents reach includes grants given since the last call). */
  async refreshRuntimeGrants(): Promise<void> {
    if (this.#policy && this.#runtimeGrants) await this.#applyRuntimeGrants(this.#policy, this.#runtimeGrants);
  }

  /**
   * Runtime grants, as the store has them when this call starts: one added or revoked before it
   * applies to it. When the store cannot be read, no runtime grant is in force (closed, not
   * open: a revocation missed must not let a call through); the config's grants still apply.
   */
  async #applyRuntimeGrants(policy: PermissionPolicy, source: RuntimeGrantSource): Promise<void> {
    try {
      policy.setRuntime(await source.current());
    } catch {
      policy.setRuntime([]);
    }
  }
}
