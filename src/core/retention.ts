import { z } from "zod";
import { InputError } from "./errors.js";
import { RUN_STATUSES, type RunStatus } from "./run.js";
import { checkCron } from "./schedule.js";

/**
 * Retention: how long finished runs are kept. A run's checkpoints, events, stash values and eval
 * records go with it; audit rows have their own retention (compliance), long-term memory facts
 * only their TTL. A run that is queued, running or waiting for a person is never collected.
 */

const UNITS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** Statuses gc never collects: the run may still go on. */
export const NEVER_COLLECTED: readonly RunStatus[] = ["queued", "running", "interrupted"];

/** `30d`, `12h`, `90m`, `45s`, `2w` as milliseconds; a bad one is an InputError naming the setting. */
export function parseAge(text: string, setting = "--older-than"): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$/i.exec(text);
  if (!match) throw new InputError("invalid_duration", `${setting}: "${text}" is not a duration (a number and a unit: 30d, 12h, 90m, 45s, 2w)`, { setting });
  const value = Number(match[1]) * (UNITS[(match[2] as string).toLowerCase()] as number);
  if (!Number.isFinite(value) || value <= 0) throw new InputError("invalid_duration", `${setting}: the duration must be more than 0`, { setting });
  return value;
}

/** A duration as the config writes it (`30d`), checked. */
export const Age = z.string().refine((text) => {
  try {
    parseAge(text);
    return true;
  } catch {
    return false;
  }
}, { error: "a duration is a number and a unit: 30d, 12h, 90m, 45s, 2w" });

/** Statuses `--keep` may name. */
export const KeepStatus = z.enum(RUN_STATUSES);

/** `failed,interrupted` as statuses; a bad name is an InputError. */
export function parseKeep(text: string | undefined): RunStatus[] {
  if (text === undefined || text.trim() === "") return [];
  const names = text.split(",").map((part) => part.trim()).filter(Boolean);
  const unknown = names.filter((name) => !(RUN_STATUSES as readonly string[]).includes(name));
  if (unknown.length > 0) throw new InputError("invalid_keep", `--keep: ${unknown.join(", ")} ${unknown.length > 1 ? "are not statuses" : "is not a status"} (${RUN_STATUSES.join(", ")})`);
  return names as RunStatus[];
}

/** The config file's `retention` section, applied by `troupe serve` on its schedule. */
export const RetentionConfig = z
  .object({
    /** Finished runs older than this are collected. */
    olderThan: Age,
    /** Finished runs with these statuses are kept whatever their age. */
    keep: z.array(KeepStatus).default([]),
    /** When the server collects: a cron expression (default: every hour, at minute 17), checked here — one that never fires would never collect. */
    schedule: z
      .string()
      .min(1)
      .default("17 * * * *")
      .superRefine((cron, context) => {
        try {
          checkCron(cron);
        } catch (error) {
          context.addIssue({ code: "custom", message: (error as Error).message });
        }
      }),
    /** Audit rows older than this are removed too (default: kept for ever). */
    audit: z.object({ olderThan: Age }).strict().optional(),
    /** Runs removed per batch (each batch its own short transaction). */
    batchSize: z.number().int().min(1).max(10_000).default(500),
  })
  .strict();
export type RetentionConfig = z.infer<typeof RetentionConfig>;

/** What a collection found (a dry run) or removed. */
export interface GcReport {
  dryRun: boolean;
  /** Finished before this (ms since the epoch). */
  cutoff: number;
  kept: RunStatus[];
  runs: number;
  /** Runs by status. */
  byStatus: Partial<Record<RunStatus, number>>;
  threads: { deleted: number; pruned: number };
  events: number;
  stashValues: number;
  evals: number;
  auditRows: number;
  webhookDeliveries: number;
  expiredMemories: number;
  /** The database's size before and after (SQLite: the data file and its WAL; Postgres: the database). */
  bytesBefore: number;
  bytesAfter: number;
  durationMs: number;
}
