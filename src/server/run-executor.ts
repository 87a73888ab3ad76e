import { setTimeout as sleep } from "node:timers/promises";
import { RunControl } from "@langchain/langgraph";
import type { Context } from "@opentelemetry/api";
import type { Logger } from "pino";
import { ConflictError, errorMessage, isTroupeError } from "../core/errors.js";
import type { StoredEvent } from "../core/events.js";
import type { ResumeDecision, RunMetrics, RunResult } from "../core/run.js";
import type { Troupe } from "../runtime/engine.js";
import { reconcileRun } from "../runtime/reconcile.js";
import { isConnectionError } from "../store/database/errors.js";
import type { RunRecord } from "../store/index.js";
import type { EventHub } from "./event-hub.js";
import type { ServerMetrics } from "./metrics.js";
import { RunObserver } from "./run-observer.js";
import { newTraceId, type Telemetry } from "./telemetry.js";
import { TurnGate } from "./turn-gate.js";

/** Where a submission came from, for the logs and the run's trace. */
export interface Origin {
  requestId?: string;
  traceId?: string;
  parent?: Context;
}

export interface ActiveRun {
  record: RunRecord;
  controller: AbortController;
  control: RunControl;
  observer: RunObserver;
  settled: Promise<void>;
  /** The number of the drive's `run-end` event once published: the drive still records its end after it. */
  endSeq?: number;
  /**
   * The drive has written where the run ends or rests (a reader sees that status now) and only
   * finishes recording it: the run no longer counts as driven here, and whoever acts on it waits
   * for `settled` first (`settle`).
   */
  ending: boolean;
  /** Its result is counted in the metrics (once, as the drive writes its end). */
  counted?: boolean;
  log: Logger;
}

export interface RunExecutorOptions {
  troupe: Troupe;
  metrics: ServerMetrics;
  telemetry: Telemetry;
  hub: EventHub;
  logger: Logger;
  /** The worker id this process records on the runs it drives (Postgres deployments). */
  worker?: string;
}

/** How a drive ended, for whoever launched it (the Postgres dispatcher decides the job's fate from it). */
export interface DriveOutcome {
  /** The record after the drive (undefined when it could not be read). */
  record: RunRecord | undefined;
  /** The drive could not reach the database: the run is where its last checkpoint left it, for another attempt. */
  unreachable: boolean;
  /** Another process holds the run's thread: this drive did not start. */
  busy: boolean;
}

export const TERMINAL = new Set(["completed", "failed", "cancelled"]);

/** Refusals of a drive that leave the run as its checkpoint has it, rather than failed. */
const SETTLE_CODES = new Set(["decision_required", "run_finished", "unknown_interrupt", "approval_required", "answer_required"]);

/** The reason a cancelled run's signal carries. */
const RUN_CANCELLED = new ConflictError("run_cancelled", "the run was cancelled");

export const EMPTY_METRICS: RunMetrics = { llmCalls: 0, toolCalls: 0, promptTokens: 0, completionTokens: 0, costUsd: 0, reflectionCount: 0, nodeVisits: 0, durationMs: 0 };

/**
 * Drives runs in this process: a queued run starts (or resumes with the person's decision kept on
 * it), a run taken over resumes from its checkpoint; each is watched by a `RunObserver`, can be
 * cancelled or drained, and what it came to is counted. Every node start of every run passes one
 * `TurnGate`, so requests are answered between steps however many runs there are. Used by the
 * server's in-memory queue (SQLite) and by the Postgres dispatcher alike.
 */
export class RunExecutor {
  readonly troupe: Troupe;
  readonly worker: string | undefined;
  readonly #metrics: ServerMetrics;
  readonly #telemetry: Telemetry;
  readonly #hub: EventHub;
  readonly #log: Logger;
  readonly #active = new Map<string, ActiveRun>();
  /** Submissions waiting for their group commit go before the next run step (one turn at most). */
  readonly gate = new TurnGate({ yieldTo: () => this.troupe.store.runs.creationsWaiting > 0 });

  constructor(options: RunExecutorOptions) {
    this.troupe = options.troupe;
    this.worker = options.worker;
    this.#metrics = options.metrics;
    this.#telemetry = options.telemetry;
    this.#hub = options.hub;
    this.#log = options.logger;
  }

  /** Drives in this process, those finishing recording their end included. */
  get size(): number {
    return this.#active.size;
  }

  /** Runs driven here that have not yet written where they end or rest. */
  get running(): number {
    return this.#running();
  }

  get(runId: string): ActiveRun | undefined {
    return this.#active.get(runId);
  }

  /** Whether a run is driven here now: a drive that has written where the run ends or rests no longer is. */
  isActive(runId: string): boolean {
    const active = this.#active.get(runId);
    return active !== undefined && !active.ending;
  }

  /** Waits until a drive that has written where the run ends or rests has finished recording it (at once otherwise). */
  async settle(runId: string): Promise<void> {
    const active = this.#active.get(runId);
    if (active?.ending) await active.settled;
  }

  ids(): string[] {
    return [...this.#active.keys()];
  }

  /** Every run driven now. */
  all(): ActiveRun[] {
    return [...this.#active.values()];
  }

  /** Reports a tool call to the observer of the run that made it. */
  toolCall(runId: string | undefined, report: Parameters<RunObserver["toolCall"]>[0]): void {
    if (runId) this.#active.get(runId)?.observer.toolCall(report);
  }

  /**
   * Drives a run: a queued one starts, or resumes with the decision kept on it; with `takeover`,
   * a run whose process died (or that a shutdown suspended) resumes from its last checkpoint.
   * Resolves once the drive has stopped and been recorded.
   */
  async launch(record: RunRecord, options: { origin?: Origin; takeover?: boolean } = {}): Promise<DriveOutcome> {
    const taskId = record.id;
    const origin = options.origin ?? {};
    const resumed = options.takeover === true || record.startedAt !== null;
    const observer = new RunObserver({
      taskId,
      threadId: record.threadId,
      resumed,
      metrics: this.#metrics,
      tracer: this.#telemetry.tracer,
      parent: origin.parent,
      gate: this.gate,
    });
    const traceId = observer.traceId ?? origin.traceId ?? newTraceId();
    const log = this.#log.child({ taskId, threadId: record.threadId, traceId, ...(this.worker ? { worker: this.worker } : {}) });
    const controller = new AbortController();
    const control = new RunControl();
    const before = record.metrics;
    let settle: () => void = () => {};
    const active: ActiveRun = { record, controller, control, observer, log, ending: false, settled: new Promise<void>((resolve) => (settle = resolve)) };
    // Counted as active before anything is awaited: whoever launched it sees its slot taken at once.
    this.#active.set(taskId, active);
    this.#metrics.tasksRunning.set(this.#running());
    const invoke = {
      signal: controller.signal,
      control,
      callbacks: [observer],
      ...(this.worker ? { worker: this.worker } : {}),
      // The observer takes the run's events from its callbacks, in step with the work, when it
      // opens spans (see `emit`); otherwise from here, once each is stored.
      onEvent: (event: StoredEvent) => {
        if (observer.ignoreCustomEvent) observer.event(event);
        if (event.type === "critic-verdict") this.#metrics.verdict(event.verdict.passed);
        if (event.type === "run-end") active.endSeq = event.seq;
        this.#hub.publish(event);
      },
      onEnding: (result: RunResult) => {
        active.ending = true;
        this.#count(active, result, before);
      },
    };
    const { interruptId, ...decision } = record.pendingDecision ?? { decision: undefined };
    log.info({ resumed, takeover: options.takeover === true, decision: decision.decision }, options.takeover ? "task taken over" : resumed ? "task resumed" : "task started");
    let outcome: DriveOutcome = { record: undefined, unreachable: false, busy: false };
    try {
      if (resumed) observer.resumeWith(await this.troupe.runningSubtasks(record.id));
      const result = await (options.takeover
        ? this.troupe.resume(record.threadId, undefined, invoke)
        : resumed
          ? this.troupe.resume(record.threadId, decision.decision === undefined ? undefined : (decision as ResumeDecision), { ...invoke, ...(interruptId !== undefined ? { interruptId } : {}) })
          : this.troupe.start(taskId, invoke));
      await this.#finished(active, result, before);
      outcome = { ...outcome, record: await this.#read(taskId) };
    } catch (error) {
      outcome = await this.#failed(active, error);
    } finally {
      this.#active.delete(taskId);
      settle();
      this.#metrics.tasksRunning.set(this.#running());
    }
    return outcome;
  }

  async #read(taskId: string): Promise<RunRecord | undefined> {
    try {
      return await this.troupe.store.runs.get(taskId);
    } catch {
      return undefined;
    }
  }

  async #finished(active: ActiveRun, result: RunResult, before: RunRecord["metrics"]): Promise<void> {
    this.#count(active, result, before);
    const suspended = (await this.#read(result.runId))?.suspended ?? null;
    active.log.info({ status: result.status, stopReason: result.stopReason, suspended, durationMs: result.metrics.durationMs, error: result.error }, "task stopped");
  }

  /**
   * A drive's result in the metrics, once: as the drive writes the run's end (a client that reads
   * that status finds it counted), or when the drive returns without having written one.
   */
  #count(active: ActiveRun, result: RunResult, before: RunRecord["metrics"]): void {
    if (active.counted) return;
    active.counted = true;
    active.observer.finish(result.status, result.error);
    this.#metrics.llmTokens.inc({ kind: "prompt" }, Math.max(0, result.metrics.promptTokens - (before?.promptTokens ?? 0)));
    this.#metrics.llmTokens.inc({ kind: "completion" }, Math.max(0, result.metrics.completionTokens - (before?.completionTokens ?? 0)));
    // Parts of the two above, counted apart: prompt tokens a provider's cache served, completion tokens spent reasoning.
    this.#metrics.llmTokens.inc({ kind: "cached" }, Math.max(0, (result.metrics.cachedPromptTokens ?? 0) - (before?.cachedPromptTokens ?? 0)));
    this.#metrics.llmTokens.inc({ kind: "reasoning" }, Math.max(0, (result.metrics.reasoningTokens ?? 0) - (before?.reasoningTokens ?? 0)));
    if (TERMINAL.has(result.status)) {
      this.#metrics.tasksTotal.inc({ status: result.status });
      this.#metrics.tasksDuration.observe({ status: result.status }, result.metrics.durationMs / 1000);
    }
    this.#metrics.tasksRunning.set(this.#running());
  }

  /** Runs driven here that have not yet written where they end or rest. */
  #running(): number {
    let running = 0;
    for (const active of this.#active.values()) if (!active.ending) running += 1;
    return running;
  }

  /**
   * A drive that threw. Refused because another process holds the thread, or because the
   * database went away (the run is where its checkpoint left it: another attempt continues it),
   * nothing is recorded; a refusal that the checkpoint explains settles the record from it; a
   * record already ended elsewhere (cancelled meanwhile) is left alone; anything else fails the run.
   */
  async #failed(active: ActiveRun, error: unknown): Promise<DriveOutcome> {
    const taskId = active.record.id;
    active.observer.finish("failed", errorMessage(error));
    const code = isTroupeError(error) ? error.code : undefined;
    if (code === "run_active" || code === "thread_busy" || code === "run_waiting") {
      active.log.warn({ code }, "task is held by another process; left to it");
      return { record: undefined, unreachable: false, busy: true };
    }
    if (isConnectionError(error) || (isTroupeError(error) && (error.code === "database_unreachable" || error.code === "thread_lease_lost"))) {
      active.log.error({ err: error }, "task stopped: the database went away; it continues from its last checkpoint on another attempt");
      return { record: undefined, unreachable: true, busy: false };
    }
    const current = await this.#read(taskId);
    if (current === undefined && this.troupe.store.kind === "postgres") {
      return { record: undefined, unreachable: true, busy: false };
    }
    if (current && TERMINAL.has(current.status)) {
      active.log.info({ code, status: current.status }, "task had already ended");
      return { record: current, unreachable: false, busy: false };
    }
    // The run is where its checkpoint says (still waiting, or finished): a decision that did not
    // fit what it waits for (an interrupt answered meanwhile, a kind changed) leaves it waiting.
    if (code !== undefined && SETTLE_CODES.has(code)) {
      const events = await reconcileRun(this.troupe, taskId);
      for (const event of events) this.#hub.publish(event);
      if (events.length > 0) {
        active.log.info({ code }, "task record settled from its checkpoint");
        return { record: await this.#read(taskId), unreachable: false, busy: false };
      }
    }
    active.log.error({ err: error }, "task could not run");
    active.ending = true;
    await this.troupe.store.runs.update(taskId, { status: "failed", stopReason: "failed", error: errorMessage(error), pid: null, worker: null, pendingDecision: null, finishedAt: Date.now() });
    this.#hub.publish(await this.troupe.store.events.append(taskId, { type: "run-end", status: "failed", stopReason: "failed", metrics: active.record.metrics ?? EMPTY_METRICS }));
    this.#metrics.tasksTotal.inc({ status: "failed" });
    return { record: await this.#read(taskId), unreachable: false, busy: false };
  }

  /** Stops a run driven here at once (recorded cancelled); resolves once it has stopped, or after 10 s. */
  async cancel(runId: string): Promise<boolean> {
    const active = this.#active.get(runId);
    if (!active) return false;
    // Said as a cancel (a drain's abort says nothing): work the run waits on elsewhere — a remote agent's task — is cancelled too.
    active.controller.abort(RUN_CANCELLED);
    await Promise.race([active.settled, sleep(10_000, undefined, { ref: false })]);
    return true;
  }

  /** Asks one run to stop at its next checkpoint (recorded as suspended by a shutdown). */
  drain(runId: string, reason = "drain"): boolean {
    const active = this.#active.get(runId);
    if (!active) return false;
    active.control.requestDrain(reason);
    return true;
  }

  /**
   * Asks every run to stop at its next checkpoint, waits up to `graceMs`, then stops the rest;
   * all of them are recorded as suspended (interrupted by the shutdown).
   */
  async drainAll(graceMs: number): Promise<{ drained: number; stopped: number }> {
    const active = [...this.#active.values()];
    for (const run of active) run.control.requestDrain("shutdown");
    const all = Promise.all(active.map((run) => run.settled));
    const outcome = await Promise.race([all.then(() => "drained" as const), sleep(graceMs, "timeout" as const, { ref: false })]);
    const left = [...this.#active.values()];
    for (const run of left) run.controller.abort();
    await Promise.race([Promise.all(left.map((run) => run.settled)), sleep(5_000, undefined, { ref: false })]);
    const stopped = outcome === "timeout" ? left.length : 0;
    return { drained: active.length - stopped, stopped };
  }
}
