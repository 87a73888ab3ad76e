import { z } from "zod";
import { truncate } from "../core/text.js";

/**
 * The audit trail of tool calls. Every call the registry receives — allowed, denied, failed —
 * becomes one entry; the tools layer only describes entries, the store keeps them (SQLite).
 * A call that runs is written ahead: its row is committed as `started` before the tool's execute
 * and completed afterwards, so a crash in between leaves a `started` row behind.
 */

export const AUDIT_DECISIONS = ["allowed", "denied", "approved", "rejected", "granted", "revoked"] as const;
export const AUDIT_STATUSES = ["ok", "error", "not_run", "started"] as const;

export const AuditEntry = z.object({
  at: z.number().int(),
  runId: z.string().nullable(),
  threadId: z.string().nullable(),
  subtaskId: z.string().nullable(),
  agent: z.string(),
  /** Who is behind a direct call made over the HTTP API (the API key's name); absent otherwise. */
  principal: z.string().nullable().optional(),
  tool: z.string(),
  /** The arguments as JSON, secrets redacted, bounded. */
  args: z.string(),
  /** allowed / denied by the policy; approved / rejected by a person; granted / revoked: a runtime grant changed (tool `troupe.grants`). */
  decision: z.enum(AUDIT_DECISIONS),
  /**
   * ok: it ran and succeeded; error: it ran (or was refused) and failed; not_run: refused before
   * running; started: it is running, or its process died while it ran (the outcome is unknown).
   */
  status: z.enum(AUDIT_STATUSES),
  /** The permission level the call needed and the grant that allowed it, if any. */
  level: z.string(),
  grant: z.string().nullable(),
  reason: z.string().nullable(),
  resultPreview: z.string().nullable(),
  errorCode: z.string().nullable(),
  error: z.string().nullable(),
  durationMs: z.number(),
  attempts: z.number().int(),
  cached: z.boolean(),
  /** The caller's deterministic id of the call (run/subtask/step/index), when it gave one. */
  callId: z.string().nullable().optional(),
});
export type AuditEntry = z.infer<typeof AuditEntry>;

/** What a tool call is to change, recorded before it runs (file tools): each target's state before and after. */
export const CallEffect = z.object({
  targets: z.array(
    z.object({
      path: z.string(),
      before: z.unknown(),
      after: z.unknown(),
    }),
  ),
});
export type CallEffect = z.infer<typeof CallEffect>;

/** A call already recorded under a call id, as the registry finds it when the same call comes again. */
export interface RecordedCall {
  id: number;
  status: AuditEntry["status"];
  entry: AuditEntry;
  /** The outcome as JSON, kept for calls with a call id (absent when it was too large to keep). */
  outcome: string | null;
  effect: CallEffect | null;
}

/** How a written-ahead row is completed. */
export interface AuditCompletion {
  entry: AuditEntry;
  /** The outcome as JSON (calls with a call id), to answer the same call again without running it. */
  outcome?: string | null;
}

/**
 * Where the registry sends audit entries (implemented by the store). The registry waits for a
 * returned promise before it returns the call's outcome, so a sink may batch its writes and still
 * hold every row by the time the caller sees the result. A failure of the sink never changes the
 * call's outcome.
 */
export interface AuditSink {
  record(entry: AuditEntry): void | Promise<void>;
  /**
   * Writes a `started` row before a call runs and resolves with its id once it is committed. A
   * sink without it gets one `record` per call, after the call.
   */
  begin?(entry: AuditEntry, effect?: CallEffect): Promise<number>;
  /**
   * Resolves once every row committed so far, and every write committed before it in the same
   * database (the run's checkpoints), is on disk: a call that must not run twice starts only then,
   * so a power cut cannot undo the steps that led to it. Rejects when the disk cannot be synced.
   */
  onDisk?(): Promise<void>;
  /** Completes a row written by `begin`. */
  complete?(id: number, completion: AuditCompletion): Promise<void>;
  /** The latest row recorded under a call id. */
  findCall?(callId: string): RecordedCall | undefined | Promise<RecordedCall | undefined>;
}

/** Keys whose values are secrets, whatever they hold. */
const SECRET_KEY = /(pass(word|wd|phrase)?|secret|token|api[-_]?key|apikey|auth(orization)?|cookie|credential|private[-_]?key|session|signature|bearer|x-api-key)/i;

/** Values that look like secrets wherever they appear. */
const SECRET_VALUES: RegExp[] = [
  /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/g,
  /\bsk-[A-Za-z0-9_-]{16,}/g,
  /\bsk-ant-[A-Za-z0-9_-]{16,}/g,
  /\bgh[pousr]_[A-Za-z0-9]{20,}/g,
  /\bxox[abprs]-[A-Za-z0-9-]{10,}/g,
  /\bAKIA[0-9A-Z]{16}\b/g,
  /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g,
  /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g,
  /(:\/\/[^/\s:@]+:)[^@\s/]+@/g,
];

export const REDACTED = "[redacted]";

function redactText(text: string): string {
  let result = text;
  for (const pattern of SECRET_VALUES) {
    result = result.replace(pattern, (match, ...groups) => {
      // Keep the scheme and user of a URL's credentials, drop the password.
      if (pattern.source.startsWith("(:\\/\\/")) return `${String(groups[0])}${REDACTED}@`;
      return REDACTED;
    });
  }
  return result;
}

/** A copy of a value with secrets replaced: by key name (password, token, api_key, …) and by shape (bearer tokens, keys, JWTs, URL passwords). */
export function redact(value: unknown, depth = 0): unknown {
  if (depth > 20) return "[too deep]";
  if (typeof value === "string") return redactText(value);
  if (Array.isArray(value)) return value.map((item) => redact(item, depth + 1));
  if (value !== null && typeof value === "object") {
    const copy: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
      copy[key] = SECRET_KEY.test(key) && item !== null && item !== undefined && item !== "" ? REDACTED : redact(item, depth + 1);
    }
    return copy;
  }
  return value;
}

/** The arguments as they go into the audit trail: redacted JSON, at most `max` characters. */
export function auditArgs(args: unknown, max = 2_000): string {
  let text: string;
  try {
    text = JSON.stringify(redact(args ?? null)) ?? "null";
  } catch {
    text = String(args);
  }
  return truncate(text, max);
}
