import { randomBytes } from "node:crypto";
import { z } from "zod";
import { CATCH_UP, type Schedule, SCHEDULE_SOURCES, ScheduledRequest } from "../../core/schedule.js";

/** A schedule to write: everything but what the store sets. */
export type NewSchedule = Omit<Schedule, "id" | "createdAt" | "updatedAt" | "lastTick" | "lastRunId" | "lastFiredAt">;

/**
 * Cron schedules, shared by every process on the store. `claim` is how a tick fires once: the
 * process that moves a schedule's last tick forward to this tick (from an earlier one) fires it;
 * every other process, or a second delivery of the same tick, finds it claimed.
 */
/** What an add is written under: a check of the owner's schedules, in the insert's transaction. */
export interface AddScheduleOptions {
  /**
   * Called with the schedules the new one's owner holds already, inside the write's transaction
   * (one owner's adds are serialised: two at once cannot both pass a limit); throws to refuse the
   * schedule, which is then not written.
   */
  check?: (owned: Schedule[]) => void;
}

export interface ScheduleStore {
  /** Adds a schedule; a name already taken is a ConflictError-shaped refusal (undefined). */
  add(schedule: NewSchedule, options?: AddScheduleOptions): Promise<Schedule | undefined>;
  /** Writes a schedule by name (the config's: kept in step with the file), keeping its last tick. */
  upsert(schedule: NewSchedule): Promise<Schedule>;
  get(idOrName: string): Promise<Schedule | undefined>;
  list(options?: { owner?: string; source?: Schedule["source"] }): Promise<Schedule[]>;
  /** Removes a schedule by id or name; whether there was one. */
  remove(idOrName: string): Promise<boolean>;
  /** Moves the last tick to `tick` when it is earlier (or unset); whether this caller won the tick. */
  claim(id: string, tick: number): Promise<boolean>;
  /** Records the run a claimed tick started. */
  fired(id: string, runId: string | null, at: number): Promise<void>;
}

export const ScheduleRow = z
  .object({
    id: z.string(),
    name: z.string(),
    cron: z.string(),
    timezone: z.string(),
    task: z.string(),
    request: z.string(),
    owner: z.string().nullable(),
    catch_up: z.enum(CATCH_UP),
    source: z.enum(SCHEDULE_SOURCES),
    created_at: z.number(),
    updated_at: z.number(),
    last_tick: z.number().nullable(),
    last_run_id: z.string().nullable(),
    last_fired_at: z.number().nullable(),
  })
  .transform(
    (row): Schedule => ({
      id: row.id,
      name: row.name,
      cron: row.cron,
      timezone: row.timezone,
      task: row.task,
      request: ScheduledRequest.parse(JSON.parse(row.request)),
      owner: row.owner,
      catchUp: row.catch_up,
      source: row.source,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
      lastTick: row.last_tick,
      lastRunId: row.last_run_id,
      lastFiredAt: row.last_fired_at,
    }),
  );

export function newScheduleId(): string {
  return `sch-${randomBytes(5).toString("hex")}`;
}

/** A new schedule's values in the order of `SCHEDULE_INSERT`'s columns. */
export function scheduleValues(id: string, schedule: NewSchedule, now: number): unknown[] {
  return [id, schedule.name, schedule.cron, schedule.timezone, schedule.task, JSON.stringify(schedule.request), schedule.owner, schedule.catchUp, schedule.source, now, now];
}

export const SCHEDULE_INSERT = "INSERT INTO schedules (id, name, cron, timezone, task, request, owner, catch_up, source, created_at, updated_at) VALUES";
