import type pg from "pg";
import type { WebhookDelivery } from "../../core/webhook.js";
import { type ClaimOptions, claimDecision, cutShort, type DeliveryOutcome, DeliveryRow, type WebhookOutbox } from "./contract.js";
import { inTransaction } from "../database/postgres.js";

/** The outbox's rows on Postgres (what `runs show` lists); its deliveries are pg-boss jobs (`webhook-queue.ts`). */
export class PostgresWebhookOutbox implements WebhookOutbox {
  readonly #pool: pg.Pool;

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  async forRun(runId: string): Promise<WebhookDelivery[]> {
    const { rows } = await this.#pool.query("SELECT * FROM webhook_deliveries WHERE run_id = $1 ORDER BY created_at, row_order", [runId]);
    return rows.map((row) => DeliveryRow.parse(row));
  }

  async get(id: string): Promise<WebhookDelivery | undefined> {
    const { rows } = await this.#pool.query("SELECT * FROM webhook_deliveries WHERE id = $1", [id]);
    return rows[0] === undefined ? undefined : DeliveryRow.parse(rows[0]);
  }

  async claim(id: string, options: ClaimOptions = {}): Promise<WebhookDelivery | undefined> {
    const now = options.now ?? Date.now();
    return inTransaction(this.#pool, async (client) => {
      const { rows } = await client.query("SELECT * FROM webhook_deliveries WHERE id = $1 FOR UPDATE", [id]);
      if (rows[0] === undefined) return undefined;
      const delivery = DeliveryRow.parse(rows[0]);
      const decision = claimDecision(delivery, options, now);
      if (decision === "unknown") {
        await client.query("UPDATE webhook_deliveries SET status = 'unknown', last_error = $1, updated_at = $2 WHERE id = $3", [cutShort(delivery), now, id]);
        return undefined;
      }
      if (decision === "leave") return undefined;
      await client.query("UPDATE webhook_deliveries SET status = 'sending', attempts = attempts + 1, updated_at = $1 WHERE id = $2", [now, id]);
      return { ...delivery, status: "sending" as const, attempts: delivery.attempts + 1, updatedAt: now };
    });
  }

  async due(limit: number, now = Date.now()): Promise<WebhookDelivery[]> {
    const { rows } = await this.#pool.query("SELECT * FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= $1 ORDER BY next_attempt_at, row_order LIMIT $2", [now, limit]);
    return rows.map((row) => DeliveryRow.parse(row));
  }

  async stuck(olderThanMs: number, now = Date.now()): Promise<WebhookDelivery[]> {
    const { rows } = await this.#pool.query("SELECT * FROM webhook_deliveries WHERE status = 'sending' AND updated_at <= $1 ORDER BY updated_at, row_order LIMIT 100", [now - olderThanMs]);
    return rows.map((row) => DeliveryRow.parse(row));
  }

  async record(id: string, attempt: number, outcome: DeliveryOutcome): Promise<void> {
    const now = Date.now();
    if (outcome.status === "delivered") {
      await this.#pool.query(
        "UPDATE webhook_deliveries SET status = 'delivered', last_status = $3, last_error = NULL, delivered_at = $4, updated_at = $4 WHERE id = $1 AND status = 'sending' AND attempts = $2",
        [id, attempt, outcome.httpStatus, now],
      );
      return;
    }
    await this.#pool.query(
      "UPDATE webhook_deliveries SET status = $3, last_status = $4, last_error = $5, next_attempt_at = $6, updated_at = $7 WHERE id = $1 AND status = 'sending' AND attempts = $2",
      [id, attempt, outcome.status, outcome.httpStatus, outcome.error, outcome.status === "pending" ? outcome.nextAttemptAt : now, now],
    );
  }

  async nextDue(): Promise<number | undefined> {
    const { rows } = await this.#pool.query<{ next: number | null }>("SELECT MIN(next_attempt_at) AS next FROM webhook_deliveries WHERE status = 'pending'");
    return rows[0]?.next ?? undefined;
  }
}
