import type pg from "pg";
import type { Schedule } from "../../core/schedule.js";
import { type AddScheduleOptions, type NewSchedule, newScheduleId, SCHEDULE_INSERT, type ScheduleStore, ScheduleRow, scheduleValues } from "./contract.js";
import { inTransaction } from "../database/postgres.js";
import type { PgBossScheduleQueue } from "./postgres-queue.js";
import { positional } from "../database/placeholders.js";

const PLACEHOLDERS = "($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)";

/**
 * The schedules table on Postgres, each row with its pg-boss schedule made or removed in the same
 * transaction; a tick is claimed by one conditional UPDATE, whichever process comes first.
 */
export class PostgresScheduleStore implements ScheduleStore {
  readonly #pool: pg.Pool;
  readonly #queue: PgBossScheduleQueue | undefined;

  constructor(pool: pg.Pool, queue?: PgBossScheduleQueue) {
    this.#pool = pool;
    this.#queue = queue;
  }

  async add(schedule: NewSchedule, options: AddScheduleOptions = {}): Promise<Schedule | undefined> {
    const id = newScheduleId();
    const added = await inTransaction(this.#pool, async (client) => {
      if (options.check) {
        // One owner's adds one at a time, whatever the process: the check sees every schedule written before.
        await client.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [`troupe.schedules:${schedule.owner ?? ""}`]);
        const { rows } = await client.query(schedule.owner === null ? "SELECT * FROM schedules WHERE owner IS NULL ORDER BY name" : "SELECT * FROM schedules WHERE owner = $1 ORDER BY name", schedule.owner === null ? [] : [schedule.owner]);
        options.check(rows.map((row) => ScheduleRow.parse(row)));
      }
      const { rowCount } = await client.query(`${SCHEDULE_INSERT} ${PLACEHOLDERS} ON CONFLICT (name) DO NOTHING`, scheduleValues(id, schedule, Date.now()));
      if ((rowCount ?? 0) === 0) return false;
      await this.#queue?.register(client, { id, ...schedule });
      return true;
    });
    return added ? this.get(id) : undefined;
  }

  async upsert(schedule: NewSchedule): Promise<Schedule> {
    await inTransaction(this.#pool, async (client) => {
      const { rows } = await client.query<{ id: string }>(
        `${SCHEDULE_INSERT} ${PLACEHOLDERS}
         ON CONFLICT (name) DO UPDATE SET cron = EXCLUDED.cron, timezone = EXCLUDED.timezone, task = EXCLUDED.task, request = EXCLUDED.request,
           owner = EXCLUDED.owner, catch_up = EXCLUDED.catch_up, source = EXCLUDED.source, updated_at = EXCLUDED.updated_at
         RETURNING id`,
        scheduleValues(newScheduleId(), schedule, Date.now()),
      );
      if (rows[0]) await this.#queue?.register(client, { id: rows[0].id, ...schedule });
    });
    return (await this.get(schedule.name)) as Schedule;
  }

  async get(idOrName: string): Promise<Schedule | undefined> {
    const { rows } = await this.#pool.query("SELECT * FROM schedules WHERE id = $1 OR name = $1 ORDER BY (id = $1) DESC LIMIT 1", [idOrName]);
    return rows[0] === undefined ? undefined : ScheduleRow.parse(rows[0]);
  }

  async list(options: { owner?: string; source?: Schedule["source"] } = {}): Promise<Schedule[]> {
    const clauses = [...(options.owner !== undefined ? ["owner = @owner"] : []), ...(options.source !== undefined ? ["source = @source"] : [])];
    const { rows } = await this.#pool.query(positional(`SELECT * FROM schedules ${clauses.length ? `WHERE ${clauses.join(" AND ")}` : ""} ORDER BY name`, options));
    return rows.map((row) => ScheduleRow.parse(row));
  }

  async remove(idOrName: string): Promise<boolean> {
    const found = await this.get(idOrName);
    if (!found) return false;
    return inTransaction(this.#pool, async (client) => {
      const { rowCount } = await client.query("DELETE FROM schedules WHERE id = $1", [found.id]);
      await this.#queue?.unregister(client, found.id);
      return (rowCount ?? 0) > 0;
    });
  }

  async claim(id: string, tick: number): Promise<boolean> {
    const { rowCount } = await this.#pool.query("UPDATE schedules SET last_tick = $2 WHERE id = $1 AND (last_tick IS NULL OR last_tick < $2)", [id, tick]);
    return (rowCount ?? 0) > 0;
  }

  async fired(id: string, runId: string | null, at: number): Promise<void> {
    await this.#pool.query("UPDATE schedules SET last_run_id = $2, last_fired_at = $3 WHERE id = $1", [id, runId, at]);
  }
}
