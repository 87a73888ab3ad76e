import { type WebhookDelivery } from "../../core/webhook.js";
import { type Sqlite, prepared } from "../database/sqlite.js";
import { type ClaimOptions, type DeliveryOutcome, DeliveryRow, type WebhookOutbox, claimDecision, cutShort } from "./contract.js";

/** The outbox in SQLite (troupe serve sends from it). */
export class SqliteWebhookOutbox implements WebhookOutbox {
  readonly #db: Sqlite;

  constructor(db: Sqlite) {
    this.#db = db;
  }

  async forRun(runId: string): Promise<WebhookDelivery[]> {
    return prepared(this.#db, "SELECT * FROM webhook_deliveries WHERE run_id = ? ORDER BY created_at, rowid")
      .all(runId)
      .map((row) => DeliveryRow.parse(row));
  }

  async get(id: string): Promise<WebhookDelivery | undefined> {
    const row = prepared(this.#db, "SELECT * FROM webhook_deliveries WHERE id = ?").get(id);
    return row === undefined ? undefined : DeliveryRow.parse(row);
  }

  async claim(id: string, options: ClaimOptions = {}): Promise<WebhookDelivery | undefined> {
    const now = options.now ?? Date.now();
    return this.#db.transaction(() => {
      const row = prepared(this.#db, "SELECT * FROM webhook_deliveries WHERE id = ?").get(id);
      if (row === undefined) return undefined;
      const delivery = DeliveryRow.parse(row);
      const decision = claimDecision(delivery, options, now);
      if (decision === "unknown") {
        prepared(this.#db, "UPDATE webhook_deliveries SET status = 'unknown', last_error = ?, updated_at = ? WHERE id = ?").run(cutShort(delivery), now, id);
        return undefined;
      }
      if (decision === "leave") return undefined;
      prepared(this.#db, "UPDATE webhook_deliveries SET status = 'sending', attempts = attempts + 1, updated_at = ? WHERE id = ?").run(now, id);
      return { ...delivery, status: "sending" as const, attempts: delivery.attempts + 1, updatedAt: now };
    })();
  }

  async due(limit: number, now = Date.now()): Promise<WebhookDelivery[]> {
    return prepared(this.#db, "SELECT * FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at, rowid LIMIT ?")
      .all(now, limit)
      .map((row) => DeliveryRow.parse(row));
  }

  async stuck(olderThanMs: number, now = Date.now()): Promise<WebhookDelivery[]> {
    return prepared(this.#db, "SELECT * FROM webhook_deliveries WHERE status = 'sending' AND updated_at <= ? ORDER BY updated_at, rowid LIMIT 100")
      .all(now - olderThanMs)
      .map((row) => DeliveryRow.parse(row));
  }

  async record(id: string, attempt: number, outcome: DeliveryOutcome): Promise<void> {
    const now = Date.now();
    // Only the attempt that claimed it records: a sweep may have settled it meanwhile.
    const guard = "WHERE id = @id AND status = 'sending' AND attempts = @attempt";
    if (outcome.status === "delivered") {
      prepared(this.#db, `UPDATE webhook_deliveries SET status = 'delivered', last_status = @httpStatus, last_error = NULL, delivered_at = @now, updated_at = @now ${guard}`).run({ id, attempt, httpStatus: outcome.httpStatus, now });
    } else {
      prepared(this.#db, `UPDATE webhook_deliveries SET status = @status, last_status = @httpStatus, last_error = @error, next_attempt_at = @next, updated_at = @now ${guard}`)
        .run({ id, attempt, status: outcome.status, httpStatus: outcome.httpStatus, error: outcome.error, next: outcome.status === "pending" ? outcome.nextAttemptAt : now, now });
    }
  }

  async nextDue(): Promise<number | undefined> {
    const row = prepared(this.#db, "SELECT MIN(next_attempt_at) AS next FROM webhook_deliveries WHERE status = 'pending'").get() as { next: number | null };
    return row.next ?? undefined;
  }
}
