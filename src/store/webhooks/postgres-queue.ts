import type { PgBoss } from "pg-boss";
import type pg from "pg";
import type { Notifications } from "../database/postgres-notifications.js";
import { onClient } from "../queue/postgres.js";

/** The pg-boss queue of webhook deliveries. */
export const WEBHOOK_QUEUE = "troupe-webhooks";
/** Announces a new delivery job (in the transaction that makes it), so an idle sender wakes at once. */
export const WEBHOOK_CHANNEL = "troupe_webhooks";

/** A delivery job taken from the queue. */
export interface DeliveryJob {
  id: string;
  deliveryId: string;
}

/**
 * Webhook deliveries as pg-boss jobs: one job per attempt, made in the transaction that writes
 * the delivery (the run's change of status) or records a failed attempt (with `startAfter`: the
 * backoff). A job whose sender died is given back by pg-boss when it expires; the sender that
 * takes it finds the delivery `sending` and settles it as unknown instead of sending it twice.
 */
export class PgBossWebhookQueue {
  readonly #boss: () => PgBoss;
  readonly #notifications: Notifications;

  constructor(boss: () => PgBoss, notifications: Notifications) {
    this.#boss = boss;
    this.#notifications = notifications;
  }

  /** Makes the queue (once, whoever comes first). */
  async start(): Promise<void> {
    const boss = this.#boss();
    if (await boss.getQueue(WEBHOOK_QUEUE)) return;
    await boss
      .createQueue(WEBHOOK_QUEUE, { retryLimit: 5, retryDelay: 1, retryBackoff: false, expireInSeconds: 300, deleteAfterSeconds: 24 * 60 * 60, retentionSeconds: 7 * 24 * 60 * 60 })
      .catch(async (error: unknown) => {
        if (!(await boss.getQueue(WEBHOOK_QUEUE))) throw error;
      });
  }

  /** Makes an attempt's job in the caller's transaction, due at `startAfter` (now by default). */
  async send(client: pg.ClientBase, deliveryId: string, startAfter?: Date): Promise<void> {
    await this.#boss().send(WEBHOOK_QUEUE, { deliveryId }, { db: onClient(client), ...(startAfter ? { startAfter } : {}) });
    await client.query("SELECT pg_notify($1, $2)", [WEBHOOK_CHANNEL, deliveryId]);
  }

  async take(limit: number): Promise<DeliveryJob[]> {
    const jobs = await this.#boss().fetch<{ deliveryId: string }>(WEBHOOK_QUEUE, { batchSize: limit });
    return jobs.map((job) => ({ id: job.id, deliveryId: job.data.deliveryId }));
  }

  async complete(job: DeliveryJob): Promise<void> {
    await this.#boss().complete(WEBHOOK_QUEUE, job.id);
  }

  /** Resolves on a new job's notification, or after `pollMs` (a job whose start time came). */
  wait(pollMs: number, signal?: AbortSignal): Promise<void> {
    return this.#notifications.next(WEBHOOK_CHANNEL, pollMs, signal);
  }

}
