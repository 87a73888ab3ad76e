import { setTimeout as sleep } from "node:timers/promises";
import type { Agent } from "undici";
import { request as undiciRequest } from "undici";
import { errorMessage } from "../core/errors.js";
import { SIGNATURE_HEADER, signWebhook, type WebhookDelivery, type WebhooksConfig, WebhooksConfig as WebhooksConfigSchema } from "../core/webhook.js";
import type { Store } from "../store/index.js";
import type { DeliveryOutcome } from "../store/webhooks/contract.js";
import type { PostgresStore } from "../store/postgres-store.js";
import { checkUrl, type NetworkRules } from "../tools/net/address-guard.js";
import { createGuardedDispatcher } from "../tools/net/guarded-dispatcher.js";

/** What an attempt came to, as the sender logs it. */
export interface AttemptReport {
  delivery: WebhookDelivery;
  outcome: DeliveryOutcome;
  durationMs: number;
}

export interface WebhookSenderOptions {
  store: Store;
  config?: WebhooksConfig;
  /** Where the secret is read (default process.env). */
  env?: NodeJS.ProcessEnv;
  onAttempt?: (report: AttemptReport) => void;
}

/** The bytes of a receiver's answer read (and thrown away) before the connection is let go. */
const MAX_ANSWER_BYTES = 64 * 1024;
/** Past an attempt's timeout, how long a delivery may stay `sending` before a sweep takes it for one cut short by a crash. */
const STUCK_MARGIN_MS = 5_000;

/** The network rules deliveries go through: the config's hosts and addresses. */
function rulesOf(config: WebhooksConfig): NetworkRules {
  return { allowHosts: config.allowHosts, denyHosts: config.denyHosts, allowAddresses: config.allowAddresses };
}

/** Checks a task's webhook before the task is accepted: a secret to sign with, and a URL the network rules allow. */
export function checkWebhook(url: string, config: WebhooksConfig | undefined, env: NodeJS.ProcessEnv = process.env): void {
  const settings = WebhooksConfigSchema.parse(config ?? {});
  if (!env[settings.secretEnv]) {
    throw Object.assign(new Error(`a webhook needs a secret to sign its deliveries: set ${settings.secretEnv} (webhooks.secretEnv)`), { code: "webhook_secret_missing" });
  }
  checkUrl(new URL(url), rulesOf(settings));
}

/**
 * Sends webhook deliveries from the outbox. Each attempt: claimed (`sending`, committed before a
 * byte goes out), POSTed through the network guard with its signature and timestamp, recorded —
 * delivered on a 2xx and never sent again, retried with exponential backoff and jitter on
 * anything else, given up after `maxAttempts`. On SQLite the sender scans the table (at once when
 * told a run ended, and when the next delivery falls due); on Postgres it works pg-boss jobs,
 * one per attempt, a retry being a job that starts after the backoff.
 */
export class WebhookSender {
  readonly #store: Store;
  readonly #config: WebhooksConfig;
  readonly #env: NodeJS.ProcessEnv;
  readonly #onAttempt: WebhookSenderOptions["onAttempt"];
  #dispatcher: Agent | undefined;
  #running = false;
  #stop = new AbortController();
  #wake: (() => void) | undefined;
  #loop: Promise<void> | undefined;
  readonly #inFlight = new Set<Promise<void>>();

  constructor(options: WebhookSenderOptions) {
    this.#store = options.store;
    this.#config = WebhooksConfigSchema.parse(options.config ?? {});
    this.#env = options.env ?? process.env;
    this.#onAttempt = options.onAttempt;
  }

  #agent(): Agent {
    this.#dispatcher ??= createGuardedDispatcher(rulesOf(this.#config), Math.min(this.#config.timeoutMs, 10_000));
    return this.#dispatcher;
  }

  /** The delay before attempt `attempt + 1`: doubling from the base, with jitter, up to the maximum. */
  backoffMs(attempt: number): number {
    const delay = Math.min(this.#config.retryMaxMs, this.#config.retryBaseMs * 2 ** Math.max(0, attempt - 1));
    return Math.round(delay * (0.5 + Math.random() / 2));
  }

  /** The body of a delivery as sent: its payload with the links to the run. */
  #body(delivery: WebhookDelivery): string {
    const base = this.#config.publicUrl?.replace(/\/+$/, "") ?? "";
    const id = encodeURIComponent(delivery.runId);
    return JSON.stringify({ ...delivery.payload, links: { task: `${base}/api/v1/tasks/${id}`, events: `${base}/api/v1/tasks/${id}/events`, console: `${base}/#/tasks/${id}` } });
  }

  /** One POST of a claimed delivery: what came back, as the outbox records it. */
  async #post(delivery: WebhookDelivery): Promise<DeliveryOutcome> {
    const secret = this.#env[this.#config.secretEnv];
    const retryOrFail = (httpStatus: number | null, error: string): DeliveryOutcome =>
      delivery.attempts >= this.#config.maxAttempts
        ? { status: "failed", httpStatus, error: `${error} (gave up after ${delivery.attempts} attempts)` }
        : { status: "pending", httpStatus, error, nextAttemptAt: Date.now() + this.backoffMs(delivery.attempts) };
    if (!secret) return retryOrFail(null, `no secret to sign with: ${this.#config.secretEnv} is not set`);
    try {
      checkUrl(new URL(delivery.url), rulesOf(this.#config));
    } catch (error) {
      return { status: "failed", httpStatus: null, error: `refused by the network rules: ${errorMessage(error)}` };
    }
    const body = this.#body(delivery);
    const timestamp = Math.floor(Date.now() / 1000);
    try {
      const response = await undiciRequest(delivery.url, {
        method: "POST",
        body,
        dispatcher: this.#agent(),
        headers: {
          "content-type": "application/json",
          "user-agent": "troupe-webhooks/1",
          "troupe-event": delivery.payload.event,
          "troupe-delivery": delivery.id,
          [SIGNATURE_HEADER]: signWebhook(secret, timestamp, body),
        },
        signal: AbortSignal.any([AbortSignal.timeout(this.#config.timeoutMs), this.#stop.signal]),
        maxRedirections: 0,
      } as Parameters<typeof undiciRequest>[1]);
      let read = 0;
      for await (const chunk of response.body) {
        read += (chunk as Buffer).length;
        if (read > MAX_ANSWER_BYTES) {
          response.body.destroy();
          break;
        }
      }
      if (response.statusCode >= 200 && response.statusCode < 300) return { status: "delivered", httpStatus: response.statusCode };
      return retryOrFail(response.statusCode, `the receiver answered ${response.statusCode}`);
    } catch (error) {
      return retryOrFail(null, errorMessage(error));
    }
  }

  /** Claims, sends and records one delivery; undefined when it was not there to send (already sent, not due, settled as unknown). */
  async attempt(deliveryId: string, options: { ignoreDue?: boolean } = {}): Promise<AttemptReport | undefined> {
    const claimed = await this.#store.webhooks.claim(deliveryId, { ignoreDue: options.ignoreDue === true, staleMs: this.#staleMs() });
    if (!claimed) return undefined;
    const started = performance.now();
    const outcome = await this.#post(claimed);
    await this.#store.webhooks.record(claimed.id, claimed.attempts, outcome);
    const report = { delivery: claimed, outcome, durationMs: performance.now() - started };
    this.#onAttempt?.(report);
    return report;
  }

  /** Sends what is due now (SQLite), each delivery at most once at a time. */
  async sendDue(limit = 50): Promise<number> {
    const due = await this.#store.webhooks.due(limit);
    await Promise.all(due.map((delivery) => this.#track(this.attempt(delivery.id).then(() => undefined))));
    return due.length;
  }

  /** How long an attempt may run before a delivery still `sending` is taken for one cut short: its timeout (attempts are aborted there) and a margin. */
  #staleMs(): number {
    return this.#config.timeoutMs + STUCK_MARGIN_MS;
  }

  /** Settles deliveries left `sending` by a process that died mid-attempt: unknown, not sent again. */
  async sweep(olderThanMs = this.#staleMs()): Promise<number> {
    const stuck = await this.#store.webhooks.stuck(olderThanMs);
    for (const delivery of stuck) await this.#store.webhooks.claim(delivery.id, { staleMs: olderThanMs });
    return stuck.length;
  }

  #track(work: Promise<void>): Promise<void> {
    const guarded = work.catch(() => {});
    this.#inFlight.add(guarded);
    void guarded.finally(() => this.#inFlight.delete(guarded));
    return guarded;
  }

  /** Looks at the outbox now (a run just ended). */
  kick(): void {
    this.#wake?.();
  }

  /** Starts sending in the background: from the table (SQLite) or from pg-boss jobs (Postgres). */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#stop = new AbortController();
    this.#loop = (this.#store.kind === "postgres" ? this.#jobs(this.#store as PostgresStore) : this.#table()).catch(() => {});
  }

  /** Waits for the next wake-up: a kick, the next due delivery, or a second at most. */
  async #nap(untilMs: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, Math.max(10, Math.min(1_000, untilMs)));
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
      this.#stop.signal.addEventListener("abort", () => {
        clearTimeout(timer);
        resolve();
      }, { once: true });
    });
    this.#wake = undefined;
  }

  async #table(): Promise<void> {
    let swept = 0;
    while (this.#running) {
      try {
        if (Date.now() - swept > 5_000) {
          swept = Date.now();
          await this.sweep();
        }
        await this.sendDue();
        const next = await this.#store.webhooks.nextDue();
        await this.#nap(next === undefined ? 1_000 : next - Date.now());
      } catch {
        await this.#nap(1_000);
      }
    }
  }

  async #jobs(store: PostgresStore): Promise<void> {
    const queue = store.webhookQueue;
    let checked = 0;
    while (this.#running) {
      try {
        if (Date.now() - checked > 30_000) {
          // A safety net: a delivery whose retry job was never made (the process died between recording and sending it).
          checked = Date.now();
          await this.sweep();
          for (const delivery of await store.webhooks.due(50, Date.now() - 30_000)) await this.#track(this.attempt(delivery.id).then(() => undefined));
        }
        const jobs = await queue.take(10);
        if (jobs.length === 0) {
          await queue.wait(1_000, this.#stop.signal);
          continue;
        }
        await Promise.all(
          jobs.map((job) =>
            this.#track(
              (async () => {
                const report = await this.attempt(job.deliveryId, { ignoreDue: true });
                // A retry is another job, due after the backoff; the delivery's row says when.
                if (report?.outcome.status === "pending") {
                  const client = await store.pool.connect();
                  try {
                    await queue.send(client, job.deliveryId, new Date(report.outcome.nextAttemptAt));
                  } finally {
                    client.release();
                  }
                }
                await queue.complete(job);
              })(),
            ),
          ),
        );
      } catch {
        await sleep(1_000, undefined, { signal: this.#stop.signal }).catch(() => {});
      }
    }
  }

  /** Stops sending; attempts under way finish (their answers are recorded). */
  async stop(): Promise<void> {
    this.#running = false;
    this.#wake?.();
    await this.#loop;
    await Promise.all([...this.#inFlight]);
    this.#stop.abort();
    await this.#dispatcher?.close().catch(() => {});
    this.#dispatcher = undefined;
  }
}
