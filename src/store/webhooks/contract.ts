import { randomUUID } from "node:crypto";
import { z } from "zod";
import { DELIVERY_STATUSES, type WebhookDelivery, WEBHOOK_EVENTS, type WebhookEvent, webhookEventOf, type WebhookPayload, webhookPayload, WebhookSpec } from "../../core/webhook.js";
import { threadNameOfRun } from "../../core/thread-key.js";

/**
 * The webhook outbox. A delivery is written in the same transaction as the change of a run's
 * status that causes it (the run stores call `deliveryFor`), so a run's end and its
 * notification are both stored or neither. A sender claims a due delivery (`sending`, committed
 * before a byte goes out), and records what came back: delivered on a 2xx — never sent again —,
 * pending with the next attempt's time on a failure, failed after the last attempt. A delivery
 * found `sending` by its next claim was cut short by a crash between sending and recording: it
 * becomes `unknown` and is not sent again (it may have arrived; receivers dedupe by its id).
 */
export interface WebhookOutbox {
  /** Deliveries of a run, oldest first (what `runs show` lists). */
  forRun(runId: string): Promise<WebhookDelivery[]>;
  get(id: string): Promise<WebhookDelivery | undefined>;
  /**
   * Claims a delivery for an attempt: pending and due (or `ignoreDue`) → `sending`, attempts + 1,
   * returned. One found `sending` for longer than `staleMs` (an attempt cut short by a crash) →
   * `unknown`, not returned; `sending` more recently (another sender's attempt) or anything else:
   * undefined.
   */
  claim(id: string, options?: ClaimOptions): Promise<WebhookDelivery | undefined>;
  /** Deliveries due now (pending, next attempt passed), oldest first. */
  due(limit: number, now?: number): Promise<WebhookDelivery[]>;
  /** Deliveries left `sending` (by a process that died mid-attempt), for a sweep to settle. */
  stuck(olderThanMs: number, now?: number): Promise<WebhookDelivery[]>;
  /** Records an attempt's outcome: delivered, or another attempt at `nextAttemptAt`, or given up. */
  record(id: string, attempt: number, outcome: DeliveryOutcome): Promise<void>;
  /** When the next pending delivery is due (ms since the epoch), if any. */
  nextDue(): Promise<number | undefined>;
}

export interface ClaimOptions {
  now?: number;
  ignoreDue?: boolean;
  /** How long an attempt may take before a delivery still `sending` counts as cut short (default 60 s). */
  staleMs?: number;
}

/** What a claim does with a delivery as it stands: send it, settle it as unknown, or leave it. */
export function claimDecision(delivery: WebhookDelivery, options: ClaimOptions, now: number): "send" | "unknown" | "leave" {
  if (delivery.status === "sending") return now - delivery.updatedAt >= (options.staleMs ?? 60_000) ? "unknown" : "leave";
  if (delivery.status !== "pending") return "leave";
  return options.ignoreDue || delivery.nextAttemptAt <= now ? "send" : "leave";
}

/** Why a delivery found `sending` was settled as unknown. */
export function cutShort(delivery: WebhookDelivery): string {
  return `attempt ${delivery.attempts} was cut short between sending and recording its answer (the process stopped); not sent again`;
}

export type DeliveryOutcome =
  | { status: "delivered"; httpStatus: number }
  | { status: "pending"; httpStatus: number | null; error: string; nextAttemptAt: number }
  | { status: "failed"; httpStatus: number | null; error: string };

/** A stored delivery row (either database). */
export const DeliveryRow = z
  .object({
    id: z.string(),
    run_id: z.string(),
    event: z.enum(WEBHOOK_EVENTS),
    url: z.string(),
    payload: z.string(),
    status: z.enum(DELIVERY_STATUSES),
    attempts: z.number(),
    next_attempt_at: z.number(),
    last_status: z.number().nullable(),
    last_error: z.string().nullable(),
    created_at: z.number(),
    updated_at: z.number(),
    delivered_at: z.number().nullable(),
  })
  .transform(
    (row): WebhookDelivery => ({
      id: row.id,
      runId: row.run_id,
      event: row.event,
      url: row.url,
      payload: JSON.parse(row.payload) as WebhookPayload,
      status: row.status,
      attempts: row.attempts,
      nextAttemptAt: row.next_attempt_at,
      lastStatus: row.last_status,
      lastError: row.last_error,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
      deliveredAt: row.delivered_at,
    }),
  );

/** A delivery to write with a run's change of status, in column order of `DELIVERY_INSERT`. */
export interface NewDelivery {
  id: string;
  runId: string;
  event: WebhookEvent;
  url: string;
  payload: string;
  now: number;
}

/** What of a run its webhook delivery reads (a run's record, `RunRecord`, is one; typed here so the runs' contract imports this one and not the reverse). */
export interface WebhookRun {
  id: string;
  owner: string | null;
  threadId: string;
  task: string;
  status: string;
  stopReason: string | null;
  answer: string | null;
  error: string | null;
  suspended: string | null;
  interrupt: { kind: string } | null;
  metrics: unknown;
  request: Record<string, unknown>;
}

export const DELIVERY_INSERT = "INSERT INTO webhook_deliveries (id, run_id, event, url, payload, status, attempts, next_attempt_at, created_at, updated_at) VALUES";

/**
 * The delivery a run's change causes, if any: the run's request names a webhook (its own or the
 * config's default, resolved when the run was made) that wants this event.
 */
export function deliveryFor(before: string | undefined, after: WebhookRun, now = Date.now()): NewDelivery | undefined {
  const event = webhookEventOf({ before, status: after.status, suspended: after.suspended, interrupt: after.interrupt });
  if (!event) return undefined;
  const spec = WebhookSpec.safeParse(after.request.webhook);
  if (!spec.success) return undefined;
  if (spec.data.events && !spec.data.events.includes(event)) return undefined;
  const id = `whd-${randomUUID()}`;
  // The receiver is the run's owner's: the thread as that owner names it (core/thread-key.ts).
  const payload = webhookPayload(id, event, { ...after, threadId: threadNameOfRun(after), interrupt: after.interrupt ? { kind: after.interrupt.kind } : null }, now);
  return { id, runId: after.id, event, url: spec.data.url, payload: JSON.stringify(payload), now };
}

/** A delivery's values in the order of `DELIVERY_INSERT`'s columns. */
export function deliveryValues(delivery: NewDelivery): unknown[] {
  return [delivery.id, delivery.runId, delivery.event, delivery.url, delivery.payload, "pending", 0, delivery.now, delivery.now, delivery.now];
}
