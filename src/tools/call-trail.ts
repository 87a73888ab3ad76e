import type { ErrorCode } from "../core/error-codes.js";
import { LIMITS } from "../core/limits.js";
import { truncate } from "../core/text.js";
import type { ToolContext, ToolOutcome } from "./define-tool.js";
import { type AuditEntry, auditArgs, type CallEffect, type RecordedCall, redact } from "./audit.js";
import type { PermissionLevel } from "./define-tool.js";
import { jsonSizeWithin } from "./result-size.js";

/** What the registry learns about a call while it goes through its steps, for the audit trail. */
export interface Trail {
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
  /** The pause a tool's server question raised mid-call (MCP elicitation): thrown once the call has stopped and its row is written. */
  pause?: { error: unknown };
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

export function newTrail(): Trail {
  return { at: Date.now(), decision: "allowed", status: "not_run", level: "NONE", grant: null, reason: null, attempts: 0, cached: false, suspended: false };
}

export function addReason(trail: Trail, note: string): void {
  trail.reason = trail.reason ? `${trail.reason}; ${note}` : note;
}

/** A refusal: the call does not run, and the audit row says it was denied, and why. */
export function deny(trail: Trail, reason: string, code: ErrorCode, message: string): ToolOutcome {
  trail.decision = "denied";
  trail.reason = reason;
  return { ok: false, error: { code, message } };
}

/** The context a tool's own code sees: everything but the ways to ask a person (only the registry asks; a tool asks through its `input` channel). */
export function toolSide(context: ToolContext): Omit<ToolContext, "requestApproval" | "requestInput"> {
  const { requestApproval: _requestApproval, requestInput: _requestInput, ...rest } = context;
  return rest;
}

/** The largest outcome kept in the audit row for answering the same call id again. */
const MAX_KEPT_OUTCOME_BYTES = 1024 * 1024;

export function keptOutcome(outcome: ToolOutcome): string | null {
  return jsonSizeWithin(outcome, MAX_KEPT_OUTCOME_BYTES).over ? null : JSON.stringify(outcome);
}

export function parseOutcome(text: string | null): ToolOutcome | undefined {
  if (!text) return undefined;
  try {
    const parsed = JSON.parse(text) as ToolOutcome;
    return typeof parsed === "object" && parsed !== null && typeof parsed.ok === "boolean" ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** The audit entry of a call as it stands (a `started` one before it runs). */
export function auditEntry(name: string, args: unknown, context: ToolContext, trail: Trail, outcome?: ToolOutcome, durationMs = 0): AuditEntry {
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
