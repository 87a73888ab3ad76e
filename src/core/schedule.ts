import { CronExpressionParser } from "cron-parser";
import { z } from "zod";
import { InputError } from "./errors.js";
import { TaskText } from "./run.js";
import { OPERATOR_RUN_OPTIONS, RunOptions } from "./run-options.js";

/**
 * Schedules: a task run on a cron expression (five fields, minute to day of week, in a time zone).
 * A tick missed while nothing ran (the server was down) is run once when it comes back, or
 * skipped (`catchUp`). Each tick fires once, whatever the number of processes: pg-boss's
 * scheduler on Postgres, the server's own timer on SQLite, both behind a claim of the tick in the
 * schedules table.
 */

export const CATCH_UP = ["skip", "once"] as const;
export type CatchUp = (typeof CATCH_UP)[number];

/** Checks a cron expression (five fields; cron-parser's search is bounded) and a time zone; a bad one is an InputError. */
export function checkCron(cron: string, timezone = "UTC"): void {
  const fields = cron.trim().split(/\s+/);
  if (fields.length !== 5) {
    throw new InputError("invalid_cron", `"${cron}" is not a cron expression of five fields (minute hour day-of-month month day-of-week), e.g. "0 9 * * 1-5"`, { cron });
  }
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: timezone });
  } catch {
    throw new InputError("invalid_timezone", `"${timezone}" is not a time zone (an IANA name such as Europe/Paris, or UTC)`, { timezone });
  }
  try {
    CronExpressionParser.parse(cron, { tz: timezone, strict: false }).next();
  } catch (error) {
    throw new InputError("invalid_cron", `"${cron}" is not a cron expression: ${(error as Error).message}`, { cron });
  }
}

/** The next tick strictly after `after` (ms), or undefined when there is none. */
export function nextTick(cron: string, timezone: string, after: number): number | undefined {
  try {
    return CronExpressionParser.parse(cron, { tz: timezone, strict: false, currentDate: new Date(after) }).next().getTime();
  } catch {
    return undefined;
  }
}

/** The latest tick at or before `at` (ms), or undefined when there is none. */
export function latestTick(cron: string, timezone: string, at: number): number | undefined {
  try {
    // prev() is strictly before its reference: a millisecond later makes a tick at `at` itself count.
    return CronExpressionParser.parse(cron, { tz: timezone, strict: false, currentDate: new Date(at + 1) }).prev().getTime();
  } catch {
    return undefined;
  }
}

/**
 * What one API key may schedule (the config file's `server.schedules`): how many schedules it
 * holds, and how many runs they may start together in one hour. A schedule that would go past
 * either is refused when it is made; schedules made before a limit was lowered keep firing.
 */
export const ScheduleLimits = z
  .object({
    maxPerKey: z.number().int().min(0).max(10_000),
    maxFiresPerHourPerKey: z.number().int().min(0).max(1_000_000),
  })
  .strict();
export type ScheduleLimits = z.infer<typeof ScheduleLimits>;

export const DEFAULT_SCHEDULE_LIMITS: ScheduleLimits = { maxPerKey: 25, maxFiresPerHourPerKey: 60 };

/**
 * The most runs a cron expression starts in one hour: in any hour it fires at all, it fires at
 * each of its minutes (`* * * * *`: 60, every fifth minute: 12, `0 9 * * 1-5`: 1). The expression must be
 * valid (checkCron).
 */
export function firesPerHour(cron: string, timezone = "UTC"): number {
  return CronExpressionParser.parse(cron, { tz: timezone, strict: false }).fields.minute.values.length;
}

const ScheduleName = z.string().regex(/^[A-Za-z0-9][\w.:-]{0,63}$/, { error: "a schedule name is 1-64 letters, digits, '.', '_', ':' or '-'" });

/**
 * What a schedule runs besides its task: a run's options (core/run-options.ts, derived from
 * RunRequest, so a new run option is a schedule's too) but those the operator sets. Stored as JSON;
 * rows written before an option existed read as they are (every option is optional).
 */
export const ScheduledRequest = RunOptions.omit(OPERATOR_RUN_OPTIONS).strict();
export type ScheduledRequest = z.infer<typeof ScheduledRequest>;

/** A schedule as the config file or `troupe schedule add` gives it. */
export const ScheduleInput = z
  .object({
    name: ScheduleName.optional(),
    cron: z.string().min(1).max(200),
    timezone: z.string().min(1).max(64).default("UTC"),
    task: TaskText,
    catchUp: z.enum(CATCH_UP).default("skip"),
  })
  .extend(ScheduledRequest.shape)
  .strict()
  .superRefine((value, context) => {
    try {
      checkCron(value.cron, value.timezone);
    } catch (error) {
      context.addIssue({ code: "custom", path: ["cron"], message: (error as Error).message });
    }
  });
export type ScheduleInput = z.input<typeof ScheduleInput>;

/** Where a schedule came from: the config file (kept in step with it by the server), the CLI or the API. */
export const SCHEDULE_SOURCES = ["config", "cli", "api"] as const;
export type ScheduleSource = (typeof SCHEDULE_SOURCES)[number];

/** A schedule as the store keeps it. */
export interface Schedule {
  id: string;
  name: string;
  cron: string;
  timezone: string;
  task: string;
  request: ScheduledRequest;
  /** Whose runs it starts (an API principal; null: the local operator's). */
  owner: string | null;
  catchUp: CatchUp;
  source: ScheduleSource;
  createdAt: number;
  updatedAt: number;
  /** The last tick fired (claimed), ms since the epoch. */
  lastTick: number | null;
  lastRunId: string | null;
  lastFiredAt: number | null;
}
