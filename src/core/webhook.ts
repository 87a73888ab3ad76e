import { createHmac, timingSafeEqual } from "node:crypto";
import { z } from "zod";

/**
 * Webhooks: what a run tells another system when it ends or waits. A task carries
 * `webhook: { url, events }` (or takes the config's default); each event becomes one delivery in
 * a durable outbox, POSTed as JSON and signed like Stripe's and GitHub's: an HMAC-SHA256 of
 * `<timestamp>.<body>` with the configured secret, the timestamp beside it, so a receiver can
 * refuse a replayed or altered body.
 */

/** The run events a webhook can ask for. */
export const WEBHOOK_EVENTS = ["completed", "failed", "interrupted", "cancelled"] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** Where a run's events go: an http(s) URL and the events wanted (default: all four). */
export const WebhookSpec = z
  .object({
    url: z
      .string()
      .max(2_000)
      .refine((text) => {
        try {
          const parsed = new URL(text);
          return (parsed.protocol === "http:" || parsed.protocol === "https:") && parsed.username === "" && parsed.password === "";
        } catch {
          return false;
        }
      }, { error: "the webhook url must be an http(s) URL without credentials" }),
    events: z.array(z.enum(WEBHOOK_EVENTS)).min(1).max(WEBHOOK_EVENTS.length).optional(),
  })
  .strict();
export type WebhookSpec = z.infer<typeof WebhookSpec>;

/** The header carrying `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`. */
export const SIGNATURE_HEADER = "troupe-signature";
/** How old a signature a receiver should accept, by default (seconds). */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

/** The signature header's value for a body sent at `timestamp` (unix seconds). */
export function signWebhook(secret: string, timestamp: number, body: string): string {
  const digest = createHmac("sha256", secret).update(`${timestamp}.${body}`, "utf8").digest("hex");
  return `t=${timestamp},v1=${digest}`;
}

/**
 * Checks a delivery as a receiver should: the header parses, its timestamp is within the
 * tolerance of `now` (a replay of an old delivery fails), and one of its `v1` signatures matches
 * the body, compared in constant time. Returns why it fails, or undefined when it holds.
 */
export function verifyWebhookSignature(secret: string, header: string | undefined, body: string, options: { now?: number; toleranceSeconds?: number } = {}): string | undefined {
  if (!header) return "no signature header";
  const parts = header.split(",").map((part) => part.trim().split("="));
  const timestamp = Number(parts.find(([key]) => key === "t")?.[1]);
  const signatures = parts.filter(([key]) => key === "v1").map(([, value]) => value ?? "");
  if (!Number.isInteger(timestamp) || signatures.length === 0) return "the signature header does not parse";
  const now = Math.floor((options.now ?? Date.now()) / 1000);
  if (Math.abs(now - timestamp) > (options.toleranceSeconds ?? SIGNATURE_TOLERANCE_SECONDS)) return "the signature's timestamp is outside the tolerance (a replay?)";
  const expected = Buffer.from(signWebhook(secret, timestamp, body).split("v1=")[1] as string, "hex");
  const matches = signatures.some((signature) => {
    const given = Buffer.from(signature, "hex");
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  return matches ? undefined : "no signature matches the body";
}

/** The event a run's change of status is, when it is one a webhook reports. */
export function webhookEventOf(change: { before: string | undefined; status: string; suspended: string | null; interrupt: unknown }): WebhookEvent | undefined {
  if (change.before === change.status) return undefined;
  switch (change.status) {
    case "completed":
    case "failed":
    case "cancelled":
      return change.status;
    case "interrupted":
      // A run stopped by a shutdown waits for no one: it resumes by itself.
      return change.suspended === null && change.interrupt !== null ? "interrupted" : undefined;
    default:
      return undefined;
  }
}

/** Characters of the answer a delivery carries (the rest is one GET away). */
export const ANSWER_SUMMARY_CHARS = 1_000;

/** What a delivery's body says about its run (links are added when it is sent). */
export interface WebhookPayload {
  id: string;
  event: `run.${WebhookEvent}`;
  createdAt: string;
  run: {
    id: string;
    threadId: string;
    task: string;
    status: string;
    stopReason: string | null;
    answerSummary: string | null;
    error: string | null;
    interrupt: { kind: string } | null;
    metrics: Record<string, number> | null;
  };
}

/** The body of a delivery for a run that reached `event`. */
export function webhookPayload(
  deliveryId: string,
  event: WebhookEvent,
  run: { id: string; threadId: string; task: string; status: string; stopReason: string | null; answer: string | null; error: string | null; interrupt: { kind: string } | null; metrics: unknown },
  at = Date.now(),
): WebhookPayload {
  const answer = run.answer;
  return {
    id: deliveryId,
    event: `run.${event}`,
    createdAt: new Date(at).toISOString(),
    run: {
      id: run.id,
      threadId: run.threadId,
      task: run.task.length > 500 ? `${run.task.slice(0, 499)}…` : run.task,
      status: run.status,
      stopReason: run.stopReason,
      answerSummary: answer === null ? null : answer.length > ANSWER_SUMMARY_CHARS ? `${answer.slice(0, ANSWER_SUMMARY_CHARS - 1)}…` : answer,
      error: run.error,
      interrupt: run.interrupt ? { kind: run.interrupt.kind } : null,
      metrics: (run.metrics as Record<string, number> | null) ?? null,
    },
  };
}

/** Where a delivery stands: waiting (or between retries), being sent, delivered, given up, or cut short by a crash (not sent again). */
export const DELIVERY_STATUSES = ["pending", "sending", "delivered", "failed", "unknown"] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** One delivery as the outbox keeps it. */
export interface WebhookDelivery {
  id: string;
  runId: string;
  event: WebhookEvent;
  url: string;
  payload: WebhookPayload;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: number;
  lastStatus: number | null;
  lastError: string | null;
  createdAt: number;
  updatedAt: number;
  deliveredAt: number | null;
}

/** The config file's `webhooks` section: the secret, a default for every task, where deliveries may go, and how they are retried. */
export const WebhooksConfig = z
  .object({
    /** The environment variable holding the signing secret (the secret itself never goes in a file). */
    secretEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: "secretEnv is the name of an environment variable" }).default("TROUPE_WEBHOOK_SECRET"),
    /** The webhook of every task that names none. */
    default: WebhookSpec.optional(),
    /** Hosts deliveries may go to (empty: any public host); `example.com` covers its subdomains. */
    allowHosts: z.array(z.string().min(1)).max(200).default([]),
    denyHosts: z.array(z.string().min(1)).max(200).default([]),
    /** Private addresses or CIDR ranges deliveries may reach anyway (e.g. `127.0.0.1` for a receiver on this machine). */
    allowAddresses: z.array(z.string().min(1)).max(200).default([]),
    /** Attempts per delivery before it is given up (failed). */
    maxAttempts: z.number().int().min(1).max(50).default(8),
    /** The first retry's delay; it doubles each time (with jitter) up to `retryMaxMs`. */
    retryBaseMs: z.number().int().min(1).max(3_600_000).default(2_000),
    retryMaxMs: z.number().int().min(1).max(86_400_000).default(600_000),
    /** How long one attempt may take. */
    timeoutMs: z.number().int().min(100).max(120_000).default(10_000),
    /** The server's address as receivers reach it (`https://troupe.example.com`): links in deliveries are absolute with it. */
    publicUrl: z.string().url().optional(),
  })
  .strict();
export type WebhooksConfig = z.infer<typeof WebhooksConfig>;
