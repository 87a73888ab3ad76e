import type { Logger } from "pino";
import { type Clock, systemClock } from "../core/clock.js";
import type { StoredEvent } from "../core/events.js";
import { parseAge } from "../core/retention.js";
import { nextTick, type Schedule } from "../core/schedule.js";
import type { Troupe } from "../runtime/engine.js";
import { ScheduleRunner, Schedules } from "../runtime/schedules.js";
import { WebhookSender } from "../runtime/webhook-sender.js";
import type { RunRecord } from "../store/index.js";
import { LOCAL_PRINCIPAL } from "./config.js";
import type { EventHub } from "./event-hub.js";
import { answerExpiredQuestions } from "./expired-questions.js";
import type { TaskService } from "./task-service.js";

export interface BackgroundOptions {
  troupe: Troupe;
  hub: EventHub;
  logger: Logger;
  /** The server's tasks (schedules submit through them); absent in a worker. */
  tasks?: TaskService;
  /** `troupe serve`: also the config's schedules and retention (a worker only sends webhooks). */
  serve: boolean;
  /** What schedules (SQLite) and retention tell time by: the system's clock unless a test moves one by hand. */
  clock?: Clock;
}

/** How often `troupe serve` looks for tool servers' questions past their time. */
const QUESTION_SWEEP_MS = 60_000;

/** Seconds between looks at the schedules (SQLite: 1) or pg-boss cron passes (Postgres: 5); TROUPE_SCHEDULE_CHECK_SECONDS sets it (1-45). */
function scheduleCheckSeconds(postgres: boolean): number {
  const given = Number(process.env.TROUPE_SCHEDULE_CHECK_SECONDS);
  return Number.isInteger(given) && given >= 1 && given <= 45 ? given : postgres ? 5 : 1;
}

/**
 * What a server does besides answering requests and driving runs: sending webhook deliveries
 * (woken by every run's end it sees, and by their due times); in `troupe serve`, firing schedules
 * (the config's kept in step with the store) and collecting old runs on the `retention` schedule.
 */
export class Background {
  readonly webhooks: WebhookSender;
  readonly schedules: ScheduleRunner | undefined;
  readonly #options: BackgroundOptions;
  readonly #log: Logger;
  readonly #unsubscribe: () => void;
  readonly #stop = new AbortController();
  #retention: Promise<void> | undefined;
  #questions: Promise<void> | undefined;

  constructor(options: BackgroundOptions) {
    this.#options = options;
    this.#log = options.logger;
    const log = options.logger.child({ component: "webhooks" });
    this.webhooks = new WebhookSender({
      store: options.troupe.store,
      config: options.troupe.config.webhooks,
      onAttempt: ({ delivery, outcome, durationMs }) =>
        log[outcome.status === "delivered" ? "info" : "warn"](
          {
            deliveryId: delivery.id,
            taskId: delivery.runId,
            event: delivery.event,
            attempt: delivery.attempts,
            status: outcome.status,
            httpStatus: outcome.httpStatus,
            ms: Math.round(durationMs),
            error: outcome.status === "delivered" ? undefined : outcome.error,
          },
          "webhook attempt",
        ),
    });
    this.#unsubscribe = options.hub.subscribeAll((event: StoredEvent) => {
      if (event.type === "run-end" || event.type === "approval-request") this.webhooks.kick();
    });
    const tasks = options.tasks;
    if (options.serve && tasks) {
      const log = options.logger.child({ component: "schedules" });
      this.schedules = new ScheduleRunner({
        store: options.troupe.store,
        checkSeconds: scheduleCheckSeconds(options.troupe.store.kind === "postgres"),
        ...(options.clock ? { clock: options.clock } : {}),
        submit: (schedule) => this.#submit(tasks, schedule),
        onFire: ({ schedule, tick, runId, error, skipped }) =>
          log[error ? "warn" : "info"]({ schedule: schedule.name, tick: new Date(tick).toISOString(), taskId: runId ?? undefined, error, skipped }, skipped ? "schedule tick missed, skipped (catchUp skip)" : "schedule fired"),
      });
    }
  }

  /** A schedule's tick as a task of its owner's (the local operator's when it has none), like a POST /execute: its stored options are core's already. */
  async #submit(tasks: TaskService, schedule: Schedule): Promise<RunRecord> {
    return tasks.submitRequest({ id: schedule.owner ?? LOCAL_PRINCIPAL.id }, { task: schedule.task, ...schedule.request });
  }

  async start(): Promise<void> {
    this.webhooks.start();
    if (!this.#options.serve) return;
    const troupe = this.#options.troupe;
    if (this.schedules) {
      await new Schedules(troupe.store).syncConfig(troupe.config.schedules);
      this.schedules.start();
    }
    if (troupe.config.retention) this.#retention = this.#collectOnSchedule();
    this.#questions = this.#answerExpiredQuestions();
  }

  /** Tool servers' questions nobody answered in time (elicitation.timeoutMs) are answered cancel, once a minute. */
  async #answerExpiredQuestions(): Promise<void> {
    const log = this.#log.child({ component: "elicitation" });
    const clock = this.#options.clock ?? systemClock;
    while (!this.#stop.signal.aborted) {
      await clock.sleep(QUESTION_SWEEP_MS, this.#stop.signal).catch(() => {});
      if (this.#stop.signal.aborted) return;
      try {
        await answerExpiredQuestions(this.#options.troupe, clock.now(), log);
      } catch (error) {
        log.warn({ err: error }, "the look for tool servers' questions past their time failed; tried again in a minute");
      }
    }
  }

  /** The config's `retention`, applied at each tick of its schedule by one process (the tick is claimed in the store). */
  async #collectOnSchedule(): Promise<void> {
    const retention = this.#options.troupe.config.retention;
    if (!retention) return;
    const log = this.#log.child({ component: "retention" });
    const clock = this.#options.clock ?? systemClock;
    while (!this.#stop.signal.aborted) {
      const tick = nextTick(retention.schedule, "UTC", clock.now());
      if (tick === undefined) return;
      await clock.sleep(Math.max(0, tick - clock.now()), this.#stop.signal).catch(() => {});
      if (this.#stop.signal.aborted) return;
      try {
        if (!(await this.#options.troupe.store.retention.claimTick("retention.tick", tick))) continue;
        const now = clock.now();
        const report = await this.#options.troupe.gc({
          cutoff: now - parseAge(retention.olderThan, "retention.olderThan"),
          keep: retention.keep,
          batchSize: retention.batchSize,
          signal: this.#stop.signal,
          ...(retention.audit ? { auditCutoff: now - parseAge(retention.audit.olderThan, "retention.audit.olderThan") } : {}),
        });
        log.info({ runs: report.runs, threads: report.threads, events: report.events, auditRows: report.auditRows, bytesBefore: report.bytesBefore, bytesAfter: report.bytesAfter, ms: report.durationMs }, "retention: old runs collected");
      } catch (error) {
        log.error({ err: error }, "retention: collection failed; tried again at the next tick");
      }
    }
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    this.#unsubscribe();
    await this.schedules?.stop();
    await this.#retention;
    await this.#questions;
    await this.webhooks.stop();
  }
}
