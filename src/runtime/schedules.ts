import { createHash } from "node:crypto";
import type { z } from "zod";
import { type Clock, systemClock } from "../core/clock.js";
import { ConflictError, errorMessage, InputError, NotFoundError, TroupeError } from "../core/errors.js";
import { firesPerHour, latestTick, nextTick, type Schedule, ScheduleInput, type ScheduleLimits, type ScheduleSource } from "../core/schedule.js";
import { threadKey } from "../core/thread-key.js";
import type { RunRecord, Store } from "../store/index.js";
import type { PostgresStore } from "../store/postgres-store.js";

/** A schedule as listed: its row and when it fires next. */
export type ScheduleView = Schedule & { nextTick: number | null };

/** A schedule input checked; a bad one is an InputError naming the field. */
export function parseScheduleInput(input: unknown): z.infer<typeof ScheduleInput> {
  const parsed = ScheduleInput.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new InputError("invalid_schedule", `${issue?.path.join(".") || "schedule"}: ${issue?.message ?? "invalid"}`, { path: issue?.path.join(".") });
  }
  return parsed.data;
}

/** A config schedule's name when it gives none: stable for the same cron and task. */
function derivedName(input: z.infer<typeof ScheduleInput>): string {
  return `config-${createHash("sha256").update(`${input.cron}\n${input.timezone}\n${input.task}`).digest("hex").slice(0, 10)}`;
}

function viewOf(schedule: Schedule): ScheduleView {
  return { ...schedule, nextTick: nextTick(schedule.cron, schedule.timezone, Date.now()) ?? null };
}

/** Schedules as troupe's surfaces use them: checked, owned, and the config's kept in step with the file. */
export class Schedules {
  readonly #store: Store;

  constructor(store: Store) {
    this.#store = store;
  }

  /**
   * Adds a schedule. With `limits` (an API key's: POST /api/v1/schedules), the owner's schedules
   * are counted in the same transaction as the insert: past `maxPerKey` schedules, or past
   * `maxFiresPerHourPerKey` runs an hour together (each schedule at its busiest hour), the new one
   * is refused (403 too_many_schedules, schedules_too_frequent). Schedules already over a limit
   * lowered since keep firing; only new ones are refused.
   */
  async add(input: unknown, options: { owner?: string | null; source: ScheduleSource; limits?: ScheduleLimits }): Promise<ScheduleView> {
    const checked = parseScheduleInput(input);
    const { name, cron, timezone, task, catchUp, ...request } = checked;
    const limits = options.limits;
    const check = limits
      ? (owned: Schedule[]) => {
          if (owned.length >= limits.maxPerKey) {
            throw new TroupeError("too_many_schedules", `this key has ${owned.length} schedules, the most one key may have (server.schedules.maxPerKey ${limits.maxPerKey}); remove one first`, { schedules: owned.length, limit: limits.maxPerKey });
          }
          const fires = firesPerHour(cron, timezone);
          const already = owned.reduce((sum, schedule) => sum + firesPerHour(schedule.cron, schedule.timezone), 0);
          if (already + fires > limits.maxFiresPerHourPerKey) {
            throw new TroupeError(
              "schedules_too_frequent",
              `"${cron}" fires up to ${fires} times an hour; with this key's other schedules (${already} an hour) that is more than the ${limits.maxFiresPerHourPerKey} runs an hour one key's schedules may start (server.schedules.maxFiresPerHourPerKey)`,
              { firesPerHour: fires, keyFiresPerHour: already, limit: limits.maxFiresPerHourPerKey },
            );
          }
        }
      : undefined;
    const given = name ?? `sch-${createHash("sha256").update(`${Date.now()}${Math.random()}`).digest("hex").slice(0, 8)}`;
    const added = await this.#store.schedules.add({
      // A key's schedule names are its own, as its thread names are (alice's daily is kept as alice/daily):
      // another key may have a daily too, and a taken name never tells one key what another holds.
      name: threadKey(options.owner, given),
      cron,
      timezone,
      task,
      catchUp,
      request,
      owner: options.owner ?? null,
      source: options.source,
    }, check ? { check } : {});
    if (!added) throw new ConflictError("schedule_exists", `a schedule named ${given} already exists; remove it first or choose another name`, { name: given });
    return viewOf(added);
  }

  async list(options: { owner?: string } = {}): Promise<ScheduleView[]> {
    return (await this.#store.schedules.list(options)).map(viewOf);
  }

  /** A schedule by id, or by the name its owner gave it (a key's own names first; one made before names were per key is found by its bare name). */
  async get(idOrName: string, options: { owner?: string } = {}): Promise<ScheduleView> {
    const owned = options.owner !== undefined && !idOrName.includes("/") ? await this.#store.schedules.get(threadKey(options.owner, idOrName)) : undefined;
    const found = owned ?? (await this.#store.schedules.get(idOrName));
    if (!found || (options.owner !== undefined && found.owner !== options.owner)) throw new NotFoundError("schedule_not_found", `no schedule ${idOrName}`, { schedule: idOrName });
    return viewOf(found);
  }

  async remove(idOrName: string, options: { owner?: string } = {}): Promise<ScheduleView> {
    const found = await this.get(idOrName, options);
    if (found.source === "config" && options.owner !== undefined) {
      throw new ConflictError("schedule_from_config", `schedule ${found.name} comes from the config file; remove it there`, { schedule: found.name });
    }
    await this.#store.schedules.remove(found.id);
    return found;
  }

  /** Makes the store's config schedules those of the config file: written by name, the ones gone from it removed. */
  async syncConfig(inputs: readonly unknown[] | undefined): Promise<void> {
    const wanted = new Set<string>();
    for (const input of inputs ?? []) {
      const checked = parseScheduleInput(input);
      const { name, cron, timezone, task, catchUp, ...request } = checked;
      const named = name ?? derivedName(checked);
      wanted.add(named);
      await this.#store.schedules.upsert({ name: named, cron, timezone, task, catchUp, request, owner: null, source: "config" });
    }
    for (const schedule of await this.#store.schedules.list({ source: "config" })) {
      if (!wanted.has(schedule.name)) await this.#store.schedules.remove(schedule.id);
    }
  }
}

/** A tick a few seconds late still fires as on time; one older than this was missed while nothing ran. */
const ON_TIME_MS = 90_000;

export interface ScheduleRunnerOptions {
  store: Store;
  /** Starts the run a tick asks for; returns its record. */
  submit: (schedule: Schedule) => Promise<RunRecord>;
  onFire?: (report: { schedule: Schedule; tick: number; runId: string | null; error?: string; skipped?: boolean }) => void;
  /** SQLite: how often the schedules are looked at; Postgres: pg-boss's cron pass interval (seconds, 1-45). */
  checkSeconds?: number;
  /** SQLite: the clock the schedules are looked at by (default the system's; a test's moves by hand). */
  clock?: Clock;
}

/**
 * Fires schedules: inside `troupe serve` on SQLite (a timer looks at every schedule each
 * `checkSeconds`), through pg-boss's scheduler on Postgres (its jobs, one per tick). Either way a
 * tick is claimed in the schedules table before its run is submitted, so it fires once.
 */
export class ScheduleRunner {
  readonly #options: ScheduleRunnerOptions;
  #running = false;
  #stop = new AbortController();
  #loop: Promise<void> | undefined;

  constructor(options: ScheduleRunnerOptions) {
    this.#options = options;
  }

  /** Fires a tick if this process claims it. */
  async fire(schedule: Schedule, tick: number, options: { skip?: boolean } = {}): Promise<boolean> {
    if (!(await this.#options.store.schedules.claim(schedule.id, tick))) return false;
    if (options.skip) {
      this.#options.onFire?.({ schedule, tick, runId: null, skipped: true });
      return true;
    }
    try {
      const record = await this.#options.submit(schedule);
      await this.#options.store.schedules.fired(schedule.id, record.id, Date.now());
      this.#options.onFire?.({ schedule, tick, runId: record.id });
    } catch (error) {
      await this.#options.store.schedules.fired(schedule.id, null, Date.now());
      this.#options.onFire?.({ schedule, tick, runId: null, error: errorMessage(error) });
    }
    return true;
  }

  /**
   * Looks at every schedule once (SQLite): a tick due now fires; a tick missed while nothing ran
   * fires once or is skipped, as its `catchUp` says; a schedule's ticks from before it existed never fire.
   */
  async check(now = (this.#options.clock ?? systemClock).now()): Promise<void> {
    for (const schedule of await this.#options.store.schedules.list()) {
      const latest = latestTick(schedule.cron, schedule.timezone, now);
      if (latest === undefined || (schedule.lastTick !== null && latest <= schedule.lastTick)) continue;
      if (schedule.lastTick === null && latest < schedule.createdAt) {
        await this.#options.store.schedules.claim(schedule.id, latest);
        continue;
      }
      const missed = now - latest > ON_TIME_MS;
      await this.fire(schedule, latest, { skip: missed && schedule.catchUp === "skip" });
    }
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#stop = new AbortController();
    this.#loop = (this.#options.store.kind === "postgres" ? this.#jobs(this.#options.store as PostgresStore) : this.#timer()).catch(() => {});
  }

  async #timer(): Promise<void> {
    const clock = this.#options.clock ?? systemClock;
    while (this.#running) {
      await this.check().catch(() => {});
      await clock.sleep((this.#options.checkSeconds ?? 1) * 1_000, this.#stop.signal).catch(() => {});
    }
  }

  async #jobs(store: PostgresStore): Promise<void> {
    const queue = store.scheduleQueue;
    await queue.startTimekeeping(this.#options.checkSeconds ?? 30);
    while (this.#running) {
      try {
        const jobs = await queue.take(5);
        for (const job of jobs) {
          const schedule = await store.schedules.get(job.scheduleId);
          const tick = schedule ? latestTick(schedule.cron, schedule.timezone, job.createdOn) : undefined;
          if (schedule && tick !== undefined) await this.fire(schedule, tick);
          await queue.complete(job);
        }
        if (jobs.length === 0) await systemClock.sleep(1_000, this.#stop.signal).catch(() => {});
      } catch {
        await systemClock.sleep(1_000, this.#stop.signal).catch(() => {});
      }
    }
  }

  async stop(): Promise<void> {
    this.#running = false;
    this.#stop.abort();
    await this.#loop;
    if (this.#options.store.kind === "postgres") await (this.#options.store as PostgresStore).scheduleQueue.stopTimekeeping();
  }
}
