import { z } from "zod";
import { truncate } from "../core/text.js";

/**
 * The audit trail of tool calls. Every call the registry receives — allowed, denied, failed —
 * becomes one entry; the tools layer only describes entries, the store keeps them (SQLite).
 */

export const AUDIT_DECISIONS = ["allowed", "denied", "approved", "rejected"] as const;
export const AUDIT_STATUSES = ["ok", "error", "not_run"] as const;

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
  /** allowed / denied by the policy; approved / rejected by a person. */
  decision: z.enum(AUDIT_DECISIONS),
  /** ok: it ran and succeeded; error: it ran (or was refused) and failed; not_run: refused before running. */
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
});
export type AuditEntry = z.infer<typeof AuditEntry>;

/**
 * Where the registry sends audit entries (implemented by the store). The registry waits for a
 * returned promise before it returns the call's outcome, so a sink may batch its writes and still
 * hold every row by the time the caller sees the result. A failure of the sink never changes the
 * call's outcome.
 */
export interface AuditSink {
  record(entry: AuditEntry): void | Promise<void>;
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
