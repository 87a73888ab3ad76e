import { type Schedule } from "../../core/schedule.js";
import { type Sqlite, prepared } from "../database/sqlite.js";
import { type AddScheduleOptions, type NewSchedule, SCHEDULE_INSERT, ScheduleRow, type ScheduleStore, newScheduleId, scheduleValues } from "./contract.js";

/** The schedules table in SQLite. */
export class SqliteScheduleStore implements ScheduleStore {
  readonly #db: Sqlite;

  constructor(db: Sqlite) {
    this.#db = db;
  }

  async add(schedule: NewSchedule, options: AddScheduleOptions = {}): Promise<Schedule | undefined> {
    const id = newScheduleId();
    try {
      // One synchronous transaction: the owner's schedules cannot change between the check and the insert.
      this.#db.transaction(() => {
        if (options.check) {
          const owned = this.#db
            .prepare(schedule.owner === null ? "SELECT * FROM schedules WHERE owner IS NULL ORDER BY name" : "SELECT * FROM schedules WHERE owner = ? ORDER BY name")
            .all(...(schedule.owner === null ? [] : [schedule.owner]))
            .map((row) => ScheduleRow.parse(row));
          options.check(owned);
        }
        prepared(this.#db, `${SCHEDULE_INSERT} (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(scheduleValues(id, schedule, Date.now()));
      })();
    } catch (error) {
      if ((error as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE") return undefined;
      throw error;
    }
    return this.get(id);
  }

  async upsert(schedule: NewSchedule): Promise<Schedule> {
    const now = Date.now();
    prepared(this.#db, 
        `${SCHEDULE_INSERT} (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (name) DO UPDATE SET cron = excluded.cron, timezone = excluded.timezone, task = excluded.task, request = excluded.request,
           owner = excluded.owner, catch_up = excluded.catch_up, source = excluded.source, updated_at = excluded.updated_at`,
      )
      .run(scheduleValues(newScheduleId(), schedule, now));
    return (await this.get(schedule.name)) as Schedule;
  }

  async get(idOrName: string): Promise<Schedule | undefined> {
    const row = prepared(this.#db, "SELECT * FROM schedules WHERE id = ? OR name = ? ORDER BY id = ? DESC LIMIT 1").get(idOrName, idOrName, idOrName);
    return row === undefined ? undefined : ScheduleRow.parse(row);
  }

  async list(options: { owner?: string; source?: Schedule["source"] } = {}): Promise<Schedule[]> {
    const clauses = [...(options.owner !== undefined ? ["owner = @owner"] : []), ...(options.source !== undefined ? ["source = @source"] : [])];
    return prepared(this.#db, `SELECT * FROM schedules ${clauses.length ? `WHERE ${clauses.join(" AND ")}` : ""} ORDER BY name`)
      .all({ ...(options.owner !== undefined ? { owner: options.owner } : {}), ...(options.source !== undefined ? { source: options.source } : {}) })
      .map((row) => ScheduleRow.parse(row));
  }

  async remove(idOrName: string): Promise<boolean> {
    const found = await this.get(idOrName);
    if (!found) return false;
    return prepared(this.#db, "DELETE FROM schedules WHERE id = ?").run(found.id).changes > 0;
  }

  async claim(id: string, tick: number): Promise<boolean> {
    return prepared(this.#db, "UPDATE schedules SET last_tick = ? WHERE id = ? AND (last_tick IS NULL OR last_tick < ?)").run(tick, id, tick).changes > 0;
  }

  async fired(id: string, runId: string | null, at: number): Promise<void> {
    prepared(this.#db, "UPDATE schedules SET last_run_id = ?, last_fired_at = ? WHERE id = ?").run(runId, at, id);
  }
}
