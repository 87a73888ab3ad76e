import { PgBoss } from "pg-boss";
import type pg from "pg";
import type { Schedule } from "../../core/schedule.js";
import type { Notifications } from "../database/postgres-notifications.js";
import { onClient } from "../queue/postgres.js";

/** The pg-boss queue a schedule's ticks are sent to (one schedule per key: the schedule's id). */
export const SCHEDULE_QUEUE = "troupe-schedules";

/** A tick of a schedule, as pg-boss's scheduler sent it. */
export interface TickJob {
  id: string;
  scheduleId: string;
  /** When pg-boss made the job (the tick it is for is the latest at or before it). */
  createdOn: number;
}

/**
 * Schedules on pg-boss's scheduler: each troupe schedule is a pg-boss schedule of one queue, keyed
 * by its id, with its cron, time zone and catch-up policy (`missed`: skip or once). pg-boss's cron
 * pass runs in one process at a time (a claim in its table) and files each occurrence under a
 * singleton slot, so a tick makes one job however many processes run the scheduler; the troupe
 * process that takes the job claims the tick in the schedules table as well before it starts a run.
 */
export class PgBossScheduleQueue {
  readonly #boss: () => PgBoss;
  readonly #url: string;
  #timekeeper: PgBoss | undefined;

  constructor(boss: () => PgBoss, url: string, _notifications?: Notifications) {
    this.#boss = boss;
    this.#url = url;
  }

  async start(): Promise<void> {
    const boss = this.#boss();
    if (await boss.getQueue(SCHEDULE_QUEUE)) return;
    await boss.createQueue(SCHEDULE_QUEUE, { retryLimit: 3, retryDelay: 5, expireInSeconds: 600, deleteAfterSeconds: 7 * 24 * 60 * 60 }).catch(async (error: unknown) => {
      if (!(await boss.getQueue(SCHEDULE_QUEUE))) throw error;
    });
  }

  /** Makes or replaces a schedule's pg-boss schedule, in the caller's transaction. */
  async register(client: pg.ClientBase, schedule: Pick<Schedule, "id" | "cron" | "timezone" | "catchUp">): Promise<void> {
    await this.#boss().schedule(SCHEDULE_QUEUE, schedule.cron, { scheduleId: schedule.id }, { tz: schedule.timezone, key: schedule.id, missed: schedule.catchUp, db: onClient(client) });
  }

  async unregister(client: pg.ClientBase, id: string): Promise<void> {
    await this.#boss().unschedule(SCHEDULE_QUEUE, id, { db: onClient(client) });
  }

  /**
   * Runs pg-boss's cron pass in this process too (`troupe serve`): a pass every `checkSeconds`,
   * claimed by one process at a time, so adding processes adds no ticks.
   */
  async startTimekeeping(checkSeconds: number): Promise<void> {
    if (this.#timekeeper) return;
    const timekeeper = new PgBoss({
      connectionString: this.#url,
      max: 2,
      application_name: "troupe-scheduler",
      schedule: true,
      supervise: false,
      migrate: false,
      cronMonitorIntervalSeconds: checkSeconds,
      cronWorkerIntervalSeconds: Math.max(1, Math.min(5, checkSeconds)),
      registerInstance: false,
      openTelemetry: { enabled: false },
    });
    timekeeper.on("error", () => {});
    await timekeeper.start();
    this.#timekeeper = timekeeper;
  }

  async take(limit: number): Promise<TickJob[]> {
    const jobs = await this.#boss().fetch<{ scheduleId: string }>(SCHEDULE_QUEUE, { batchSize: limit, includeMetadata: true });
    return jobs.map((job) => ({ id: job.id, scheduleId: job.data.scheduleId, createdOn: new Date((job as { createdOn?: Date | string }).createdOn ?? Date.now()).getTime() }));
  }

  async complete(job: TickJob): Promise<void> {
    await this.#boss().complete(SCHEDULE_QUEUE, job.id);
  }

  async stopTimekeeping(): Promise<void> {
    const timekeeper = this.#timekeeper;
    this.#timekeeper = undefined;
    await timekeeper?.stop({ graceful: false, close: true, timeout: 5_000 }).catch(() => {});
  }
}
