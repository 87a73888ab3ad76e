import { z } from "zod";
import type { ErrorCode } from "../core/error-codes.js";
import { errorMessage, isTroupeError } from "../core/errors.js";
import { LIMITS } from "../core/limits.js";
import { type CallProvenance, joinLabels, LabelledValue, readLabel, TRUSTED } from "../core/provenance.js";
import { preview, truncate } from "../core/text.js";
import type { ToolSpec } from "../core/tool-spec.js";
import { type AuditEntry, type AuditSink, auditArgs, type CallEffect, type RecordedCall, redact } from "./audit.js";
import { Semaphore, sleep } from "./concurrency.js";
import { callRisk, levelRank, type PermissionLevel, type ToolContext, type ToolDefinition, type ToolOutcome } from "./define-tool.js";
import type { PermissionPolicy } from "./permissions.js";
import { ResultCache } from "./result-cache.js";
import type { RuntimeGrantSource } from "./runtime-grants.js";
import { jsonSizeWithin } from "./result-size.js";
import type { Steering, TrustPolicy } from "./trust-policy.js";

/** The largest value a tool may hand back unless it says otherwise (`maxResultBytes`). */
export const DEFAULT_MAX_RESULT_BYTES = 16 * 1024 * 1024;

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

/** What the registry learns about a call while it goes, for the audit trail. */
interface Trail {
  at: number;
  decision: AuditEntry["decision"];
  status: AuditEntry["status"];
  level: PermissionLevel;
  grant: string | null;
  reason: string | null;
  attempts: number;
  cached: boolean;
  /** Set while a person is being asked: a throw then is the graph pausing, not a fault. */
  suspended: boolean;
  /** The call's written-ahead row, once it began (or the earlier row it completes). */
  rowId?: number;
  /** A call that must not run twice keeps its outcome in its row, for a replay to hand back; an idempotent one just runs again. */
  keepsOutcome?: boolean;
  /** The earlier completed row the call was answered from: nothing new is written. */
  replayed?: RecordedCall;
  /** What the call's effect recorded before it ran, released once its row is complete. */
  effect?: CallEffect;
  /** The arguments as validated, for the outcome's label. */
  args?: Record<string, unknown>;
}

/** The largest outcome kept in the audit row for answering the same call id again. */
const MAX_KEPT_OUTCOME_BYTES = 1024 * 1024;

function keptOutcome(outcome: ToolOutcome): string | null {
  return jsonSizeWithin(outcome, MAX_KEPT_OUTCOME_BYTES).over ? null : JSON.stringify(outcome);
}

function parseOutcome(text: string | null): ToolOutcome | undefined {
  if (!text) return undefined;
  try {
    const parsed = JSON.parse(text) as ToolOutcome;
    return typeof parsed === "object" && parsed !== null && typeof parsed.ok === "boolean" ? parsed : undefined;
  } catch {
    return undefined;
  }
}

function addReason(trail: Trail, note: string): void {
  trail.reason = trail.reason ? `${trail.reason}; ${note}` : note;
}

const MAX_RETRY_DELAY_MS = 2_000;

/** System error codes worth a retry: the network or the machine was briefly unable, not the call wrong. */
const TRANSIENT_CODES = /^(ECONNRESET|ECONNREFUSED|ETIMEDOUT|EPIPE|EAI_AGAIN|EBUSY|EAGAIN|EMFILE|ENFILE|UND_ERR_(SOCKET|CONNECT_TIMEOUT|HEADERS_TIMEOUT|BODY_TIMEOUT|CLOSED))$/;

function isTransient(error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Error && depth < 4; current = current.cause, depth += 1) {
    const code = (current as NodeJS.ErrnoException).code;
    if (typeof code === "string" && TRANSIENT_CODES.test(code)) return true;
  }
  return false;
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

  /** How untrusted data steers this call, before it is made (null: not at all, or no trust policy). */
  steering(name: string, args: Record<string, unknown>, provenance: CallProvenance | undefined): Steering | null {
    const tool = this.#tools.get(name);
    return tool && this.#trust ? this.#trust.steering(tool, args, provenance) : null;
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

  /** The tools an agent can reach under the policy (all of them without a policy). */
  reachable(agent: string): string[] {
    return this.#policy ? this.#policy.reachable(agent, this.list()) : this.names();
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
   * all come back as `{ ok: false }`. The only throw that passes is `context.requestApproval`'s
   * (the graph pausing for a person); nothing has run or been recorded at that point.
   */
  async call(name: string, args: unknown, context: ToolContext, options: ToolCallOptions = {}): Promise<ToolOutcome> {
    const started = performance.now();
    const trail: Trail = { at: Date.now(), decision: "allowed", status: "not_run", level: "NONE", grant: null, reason: null, attempts: 0, cached: false, suspended: false };
    let outcome: ToolOutcome;
    try {
      outcome = await this.#call(name, args, context, trail, options.refusal);
    } catch (error) {
      if (trail.suspended) throw error;
      outcome = { ok: false, error: { code: "tool_failed", message: errorMessage(error) } };
      trail.status = "error";
    }
    outcome = this.#labelled(name, trail, outcome, context);
    const durationMs = performance.now() - started;
    const audit = trail.replayed?.entry ?? this.#entry(name, args, context, trail, outcome, durationMs);
    try {
      if (trail.replayed) {
        // Answered from its earlier row: that row already stands for the call.
      } else if (trail.rowId !== undefined && this.#audit?.complete) {
        await this.#audit.complete(trail.rowId, { entry: audit, outcome: context.callId && trail.keepsOutcome ? keptOutcome(outcome) : null });
        // The row now answers the call: what its effect kept for settling can go.
        if (trail.effect) await this.#tools.get(name)?.effect?.release?.(trail.effect);
      } else await this.#audit?.record(audit);
    } catch {
      // the audit sink's fault must not change the outcome; the store reports its own failures
    }
    const report: ToolCallReport = { tool: name, args, outcome, durationMs, context, audit };
    for (const listener of this.#listeners) {
      try {
        listener(report);
      } catch {
        // a listener's fault must not change the outcome of the call
      }
    }
    return outcome;
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

  /**
   * The trust step: whether untrusted data steered this call (src/tools/trust-policy.ts). Under
   * `deny` a steered call is refused; under `ask` it waits for a person like a high-risk call;
   * under `allow` it runs, and the audit row says it was steered.
   */
  #steer(tool: ToolDefinition, args: Record<string, unknown>, context: ToolContext, trail: Trail): { refused: ToolOutcome } | { ask: Steering } | undefined {
    const steering = this.#trust?.steering(tool, args, context.provenance);
    if (!steering || !this.#trust) return undefined;
    addReason(trail, steering.summary);
    if (this.#trust.mode === "allow") return undefined;
    if (this.#trust.mode === "deny") {
      trail.decision = "denied";
      return { refused: { ok: false, error: { code: "steered_call_denied", message: `refused by the trust policy (deny): ${steering.summary}` } } };
    }
    return { ask: steering };
  }

  /** The audit entry of a call as it stands (a `started` one before it runs). */
  #entry(name: string, args: unknown, context: ToolContext, trail: Trail, outcome?: ToolOutcome, durationMs = 0): AuditEntry {
    return {
      at: trail.at,
      runId: context.runId ?? null,
      threadId: context.threadId ?? null,
      subtaskId: context.subtaskId ?? null,
      agent: context.agent ?? "(none)",
      principal: context.principal ?? null,
      tool: name,
      args: auditArgs(args),
      decision: trail.decision,
      status: outcome ? trail.status : "started",
      level: trail.level,
      grant: trail.grant,
      reason: trail.reason,
      resultPreview: outcome?.ok ? truncate(String(redact(outcome.summary)), LIMITS.previewChars) : null,
      errorCode: outcome && !outcome.ok ? outcome.error.code : null,
      error: outcome && !outcome.ok ? truncate(String(redact(outcome.error.message)), 1_000) : null,
      durationMs: Math.round(durationMs * 1000) / 1000,
      attempts: trail.attempts,
      cached: trail.cached,
      callId: context.callId ?? null,
    };
  }

  /**
   * A call whose id already has a row. Completed: its recorded outcome, without running. Begun
   * and never finished (its process died): for a tool that records its effect, the workspace
   * decides — already in the after-state, the derived result; still in the before-state, run it;
   * anything else, `outcome_unknown`. Idempotent tools run again; other tools are never run
   * twice blindly: `outcome_unknown`. Undefined means: run it.
   */
  async #settle(tool: ToolDefinition, args: unknown, context: ToolContext, previous: RecordedCall, trail: Trail, idempotent: boolean): Promise<ToolOutcome | undefined> {
    const callId = context.callId as string;
    if (previous.status !== "started") {
      const recorded = parseOutcome(previous.outcome);
      if (recorded) {
        trail.replayed = previous;
        trail.status = previous.status;
        return recorded;
      }
      // A row of a call that never ran (refused, served from the cache) says nothing about effects.
      if (idempotent || previous.entry.attempts === 0) return undefined;
      trail.replayed = previous;
      return { ok: false, error: { code: "outcome_unknown", message: `${tool.name} already ran as call ${callId} (audit row ${previous.id}) and its result was not kept; it is not run twice` } };
    }
    trail.rowId = previous.id;
    if (tool.effect && previous.effect) trail.effect = previous.effect;
    if (tool.effect?.settle && previous.effect) {
      // The tool settles it itself (finishing what it journaled, or finding nothing done).
      const { requestApproval: _requestApproval, ...rest } = context;
      const settled = await tool.effect.settle(args, previous.effect, rest).catch(() => ({ state: "other" as const }));
      if (settled.state === "after") {
        addReason(trail, "settled after a crash: its journaled effect was completed, so it did not run again");
        trail.status = "ok";
        return { ok: true, value: settled.value, summary: tool.summarize ? tool.summarize(settled.value, args) : preview(settled.value, LIMITS.previewChars) };
      }
      if (settled.state === "before") {
        addReason(trail, "run again after a crash: it had changed nothing");
        return undefined;
      }
    } else if (tool.effect && previous.effect) {
      const { requestApproval: _requestApproval, ...rest } = context;
      const state = await tool.effect.check(previous.effect, rest).catch(() => "other" as const);
      if (state === "after") {
        addReason(trail, "settled after a crash: the workspace already held this call's effect, so it did not run again");
        trail.status = "ok";
        const value = tool.effect.derive(args, previous.effect);
        return { ok: true, value, summary: tool.summarize ? tool.summarize(value, args) : preview(value, LIMITS.previewChars) };
      }
      if (state === "before") {
        addReason(trail, "run again after a crash: the workspace did not hold this call's effect");
        return undefined;
      }
    } else if (idempotent) {
      addReason(trail, "run again after a crash (idempotent)");
      return undefined;
    }
    trail.status = "error";
    const why = tool.effect ? "the workspace holds neither the state before it nor the state it was to leave" : "the tool is not idempotent and records no effect to check";
    return {
      ok: false,
      error: { code: "outcome_unknown", message: `${tool.name} began as call ${callId} (audit row ${previous.id}) and its process stopped before it finished; whether it had its effect is unknown (${why}), so it is not run again` },
    };
  }

  /**
   * A call with an effect (above READ, or not idempotent), or that a person must approve, waits
   * for `context.effectsAllowed`: a subtask of a plan still streaming in does its reading and
   * thinking early, and its writes (and its questions) once the plan is known to stand. Refused,
   * with nothing run and nobody asked, when the plan is dropped.
   */
  async #holdEffect(name: string, context: ToolContext, trail: Trail, idempotent: boolean, needsApproval: boolean): Promise<ToolOutcome | undefined> {
    if (!context.effectsAllowed || (idempotent && levelRank(trail.level) <= levelRank("READ") && !needsApproval)) return undefined;
    try {
      await context.effectsAllowed();
      return undefined;
    } catch (error) {
      trail.decision = "denied";
      trail.reason = `held until the plan was judged whole, and the plan was dropped: ${errorMessage(error)}`;
      return { ok: false, error: { code: "plan_dropped", message: `${name} did not run: the plan it belonged to was dropped (${errorMessage(error)})` } };
    }
  }

  /**
   * A call a crash cut short whose effect nothing can tell (a tool that keeps no journal and is
   * not idempotent): only a person can say whether to run it again. With someone to ask (the
   * graph's approval), the run waits for them — approved, it runs once more; rejected, it stays
   * failed. Without (a map's item, a direct call), it fails as `outcome_unknown`.
   */
  async #askAboutUnknown(tool: ToolDefinition, args: unknown, context: ToolContext, previous: RecordedCall, trail: Trail, unknown: ToolOutcome): Promise<ToolOutcome | undefined> {
    if (!context.requestApproval) return unknown;
    trail.suspended = true;
    const answer = await context.requestApproval({
      tool: tool.name,
      agent: context.agent ?? "",
      args: redact(args),
      level: trail.level,
      riskLevel: tool.riskLevel,
      reason: `${tool.name} began before troupe stopped (audit row ${previous.id}) and whether it had its effect cannot be told from the workspace: approve to run it again, reject to leave it failed`,
      ...(context.runId !== undefined ? { runId: context.runId } : {}),
      ...(context.subtaskId !== undefined ? { subtaskId: context.subtaskId } : {}),
    });
    trail.suspended = false;
    if (answer.approved) {
      trail.decision = "approved";
      trail.status = "not_run";
      addReason(trail, "run again after a crash: its outcome was unknown, and a person approved running it again");
      return undefined;
    }
    trail.decision = "rejected";
    return { ok: false, error: { code: "outcome_unknown", message: `${unknown.ok ? "" : unknown.error.message}; a person chose not to run it again${answer.feedback ? `: ${answer.feedback}` : ""}` } };
  }

  /** Writes the call's row ahead, as `started`, once it is about to run (after any earlier row of the same call id is settled). */
  async #begin(tool: ToolDefinition, args: unknown, context: ToolContext, trail: Trail, idempotent: boolean): Promise<ToolOutcome | undefined> {
    const sink = this.#audit;
    if (!sink?.begin || !sink.complete) return undefined;
    trail.keepsOutcome = !idempotent;
    if (context.callId && sink.findCall && !context.firstPass) {
      const previous = await sink.findCall(context.callId);
      if (previous) {
        const settled = await this.#settle(tool, args, context, previous, trail, idempotent);
        if (settled && !settled.ok && settled.error.code === "outcome_unknown" && previous.status === "started") return this.#askAboutUnknown(tool, args, context, previous, trail, settled);
        if (settled) return settled;
      }
    }
    if (trail.rowId !== undefined) return undefined;
    let effect: CallEffect | undefined;
    if (context.callId && tool.effect) {
      const { requestApproval: _requestApproval, ...rest } = context;
      // A target that cannot be described now (outside, a bad path) fails the call itself in a moment.
      effect = await tool.effect.capture(args, rest).catch(() => undefined);
    }
    if (effect) trail.effect = effect;
    try {
      trail.rowId = await sink.begin(this.#entry(tool.name, args, context, trail), effect);
    } catch {
      // the audit sink's fault must not change the outcome; the call is recorded after it runs
    }
    return undefined;
  }

  async #call(name: string, args: unknown, context: ToolContext, trail: Trail, refusal: ToolCallOptions["refusal"]): Promise<ToolOutcome> {
    const tool = this.#tools.get(name);
    if (!tool) {
      trail.decision = "denied";
      trail.reason = "unknown tool";
      return { ok: false, error: { code: "unknown_tool", message: `unknown tool "${name}"; available: ${this.names().join(", ")}` } };
    }
    const parsed = tool.schema.safeParse(args ?? {});
    trail.level = parsed.success && tool.levelFor ? tool.levelFor(parsed.data) : tool.permission;
    const agent = context.agent ?? "";
    if (context.allowedTools && !context.allowedTools.includes(name)) {
      trail.decision = "denied";
      trail.reason = "not among the tools this run may use";
      return { ok: false, error: { code: "tool_not_allowed", message: `${name} is not among the tools this run may use (${context.allowedTools.join(", ") || "none"})` } };
    }
    let needsApproval = false;
    if (this.#policy && this.#runtimeGrants) await this.#applyRuntimeGrants(this.#policy, this.#runtimeGrants);
    // The risk of this call: what it can do with these arguments (a script with a read-only workspace is not one that can delete).
    const risk = parsed.success ? callRisk(tool, parsed.data, context) : { level: tool.riskLevel, why: `declared ${tool.riskLevel}-risk` };
    if (this.#policy) {
      const decision = this.#policy.check(agent, { name: tool.name, riskLevel: risk.level }, trail.level, parsed.success ? parsed.data : args);
      trail.reason = decision.reason;
      if (!decision.allowed) {
        trail.decision = "denied";
        return { ok: false, error: { code: decision.code, message: `permission denied: ${decision.reason}` } };
      }
      if (decision.grant) trail.grant = `${decision.grant.agent}:${decision.grant.tool}:${decision.grant.level} by ${decision.grant.grantedBy}`;
      needsApproval = decision.needsApproval;
    }
    if (refusal) {
      trail.reason = refusal.message;
      return { ok: false, error: refusal };
    }
    if (!parsed.success) {
      return { ok: false, error: { code: "invalid_arguments", message: `invalid arguments for ${name}: ${z.prettifyError(parsed.error)}` } };
    }
    const idempotent = tool.idempotentFor ? tool.idempotentFor(parsed.data) : tool.idempotent;
    trail.args = parsed.data as Record<string, unknown>;
    const steered = this.#steer(tool, trail.args, context, trail);
    if (steered && "refused" in steered) return steered.refused;
    const steering = steered?.ask;
    // Before a person is asked, too: nobody is asked about a call of a plan that is then dropped.
    const held = await this.#holdEffect(name, context, trail, idempotent, needsApproval || steering !== undefined);
    if (held) return held;
    if (needsApproval || steering) {
      if (!context.requestApproval) {
        trail.decision = "denied";
        trail.reason = `${name} needs a person's approval and this caller cannot ask for it${steering ? ` (${steering.summary})` : ""}`;
        const why = needsApproval ? `${name} is high-risk` : `untrusted data steered this call to ${name} (${steering?.summary ?? ""})`;
        return { ok: false, error: { code: "approval_required", message: `${why} and needs a person's approval, which this caller cannot ask for` } };
      }
      // What the call would do (an edit's diff), for the person to judge; a preview that fails refuses the call before anyone is asked.
      let preview: Record<string, unknown> | undefined;
      if (tool.preview) {
        const { requestApproval: _requestApproval, ...rest } = context;
        try {
          preview = await tool.preview(parsed.data, rest);
        } catch (error) {
          trail.status = "error";
          return { ok: false, error: isTroupeError(error) ? { code: error.code, message: error.message } : { code: "tool_failed", message: errorMessage(error) } };
        }
      }
      trail.suspended = true;
      const reasons = [...(needsApproval ? [`${name} is ${risk.level}-risk (it ${risk.why}) and needs approval before it runs`] : []), ...(steering ? [steering.summary] : [])];
      const answer = await context.requestApproval({
        ...(preview ? { preview } : {}),
        tool: name,
        agent,
        args: redact(parsed.data),
        level: trail.level,
        riskLevel: risk.level,
        reason: reasons.join("; "),
        ...(context.runId !== undefined ? { runId: context.runId } : {}),
        ...(context.subtaskId !== undefined ? { subtaskId: context.subtaskId } : {}),
        ...(steering ? { steering } : {}),
      });
      trail.suspended = false;
      if (!answer.approved) {
        trail.decision = "rejected";
        trail.reason = answer.feedback ? `rejected by a person: ${answer.feedback}` : "rejected by a person";
        return { ok: false, error: { code: "rejected", message: `a person rejected this call to ${name}${answer.feedback ? `: ${answer.feedback}` : ""}` } };
      }
      trail.decision = "approved";
    }
    const ttl = typeof tool.cacheTtlMs === "function" ? tool.cacheTtlMs(parsed.data) : (tool.cacheTtlMs ?? 0);
    const cacheKey = idempotent && ttl > 0 ? ResultCache.key(name, parsed.data, context.workspace) : undefined;
    if (cacheKey) {
      const hit = this.#cache.get(cacheKey);
      if (hit) {
        trail.cached = true;
        trail.status = "ok";
        return hit;
      }
    }
    const settled = await this.#begin(tool, parsed.data, context, trail, idempotent);
    if (settled) return settled;
    const retries = idempotent ? (tool.retries ?? 3) : 0;
    let outcome: ToolOutcome = { ok: false, error: { code: "tool_failed", message: "not run" } };
    for (let attempt = 0; attempt <= retries; attempt += 1) {
      if (attempt > 0) {
        const delay = Math.min(MAX_RETRY_DELAY_MS, this.#retryBaseMs * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2);
        try {
          await sleep(delay, context.signal);
        } catch {
          break;
        }
      }
      let release: () => void = () => {};
      try {
        if (!tool.remote) release = await this.#slots.acquire(context.signal);
      } catch {
        outcome = { ok: false, error: { code: "cancelled", message: "the run was cancelled" } };
        break;
      }
      trail.attempts += 1;
      let retryable: boolean;
      try {
        ({ outcome, retryable } = await this.#attempt(tool, parsed.data, context));
      } finally {
        release();
      }
      if (outcome.ok || !retryable || context.signal?.aborted) break;
    }
    trail.status = outcome.ok ? "ok" : "error";
    if (cacheKey && outcome.ok) this.#cache.set(cacheKey, outcome, ttl);
    return outcome;
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

  /** One attempt under the tool's timeout. `retryable` says whether a retry could help (timeouts, unexpected faults). */
  async #attempt(tool: ToolDefinition, args: unknown, context: ToolContext): Promise<{ outcome: ToolOutcome; retryable: boolean }> {
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
    const { requestApproval: _requestApproval, ...rest } = context;
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
}
