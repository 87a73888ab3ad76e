import type pg from "pg";
import { z } from "zod";
import type { ControlChannel, ControlMessage, WorkerInfo, WorkerRegistry } from "./contract.js";
import type { Notifications } from "../database/postgres-notifications.js";

/** The channel control messages travel on. */
export const CONTROL_CHANNEL = "troupe_control";

const Message = z.object({
  action: z.enum(["cancel", "drain", "supersede"]),
  runId: z.string().optional(),
  worker: z.string().optional(),
  mode: z.enum(["drain", "cancel"]).optional(),
  by: z.string().optional(),
});

/** Control messages over NOTIFY: every process listens; the one holding the run (or the named worker) acts. */
export class PgControlChannel implements ControlChannel {
  readonly #pool: pg.Pool;
  readonly #notifications: Notifications;

  constructor(pool: pg.Pool, notifications: Notifications) {
    this.#pool = pool;
    this.#notifications = notifications;
  }

  async send(message: ControlMessage): Promise<void> {
    await this.#pool.query("SELECT pg_notify($1, $2)", [CONTROL_CHANNEL, JSON.stringify(Message.parse(message))]);
  }

  subscribe(listener: (message: ControlMessage) => void): () => void {
    return this.#notifications.subscribe(CONTROL_CHANNEL, (payload) => {
      let parsed: z.infer<typeof Message>;
      try {
        parsed = Message.parse(JSON.parse(payload));
      } catch {
        return; // not ours, or malformed: ignored
      }
      listener(parsed);
    });
  }
}

const WorkerRow = z
  .object({
    id: z.string(),
    host: z.string(),
    pid: z.number(),
    concurrency: z.number(),
    held: z.number(),
    takeovers: z.number(),
    draining: z.boolean(),
    started_at: z.number(),
    heartbeat_at: z.number(),
    stopped_at: z.number().nullable(),
  })
  .transform((row) => row);

/** The workers table: each worker's figures, written with its heartbeat. */
export class PgWorkerRegistry implements WorkerRegistry {
  readonly #pool: pg.Pool;
  readonly #leaseSeconds: number;

  constructor(pool: pg.Pool, leaseSeconds: number) {
    this.#pool = pool;
    this.#leaseSeconds = leaseSeconds;
  }

  async beat(worker: Omit<WorkerInfo, "startedAt" | "heartbeatAt" | "alive">): Promise<void> {
    const now = Date.now();
    await this.#pool.query(
      `INSERT INTO workers (id, host, pid, concurrency, held, takeovers, draining, started_at, heartbeat_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)
       ON CONFLICT (id) DO UPDATE SET concurrency = excluded.concurrency, held = excluded.held, takeovers = excluded.takeovers, draining = excluded.draining,
         heartbeat_at = excluded.heartbeat_at, stopped_at = NULL`,
      [worker.id, worker.host, worker.pid, worker.concurrency, worker.held, worker.takeovers, worker.draining, now],
    );
  }

  async leave(id: string): Promise<void> {
    await this.#pool.query("UPDATE workers SET stopped_at = $2, held = 0 WHERE id = $1", [id, Date.now()]);
  }

  async list(): Promise<WorkerInfo[]> {
    const now = Date.now();
    // Workers heard from in the last ten minutes; older rows are history (and cleared away).
    await this.#pool.query("DELETE FROM workers WHERE heartbeat_at < $1", [now - 24 * 60 * 60 * 1000]);
    const { rows } = await this.#pool.query("SELECT * FROM workers WHERE heartbeat_at >= $1 ORDER BY started_at, id", [now - 10 * 60 * 1000]);
    return rows.map((raw) => {
      const row = WorkerRow.parse(raw);
      return {
        id: row.id,
        host: row.host,
        pid: row.pid,
        concurrency: row.concurrency,
        held: row.held,
        takeovers: row.takeovers,
        draining: row.draining,
        startedAt: row.started_at,
        heartbeatAt: row.heartbeat_at,
        alive: row.stopped_at === null && now - row.heartbeat_at <= this.#leaseSeconds * 1000,
      };
    });
  }
}
