import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import { ConflictError, InputError, NotFoundError, TroupeError } from "../core/errors.js";
import type { StoredEvent } from "../core/events.js";
import { emptyExecutionGraph, type ExecutionGraph } from "../core/execution-graph.js";
import type { SubtaskView } from "../core/plan.js";
import type { ResumeDecision, RunRequestInput } from "../core/run.js";
import { stableStringify } from "../core/text.js";
import { threadKey } from "../core/thread-key.js";
import { isAlive, type Troupe } from "../runtime/engine.js";
import { type EvalCaseAction, refuseEvalCase } from "../runtime/eval-case.js";
import { type RunRecord, SqliteRunQueue } from "../store/index.js";
import type { Principal } from "./config.js";
import { decisionFor } from "./decisions.js";
import type { EventHub } from "./event-hub.js";
import type { ServerMetrics } from "./metrics.js";
import { failCrashedRun } from "./crashed-runs.js";
import { RunDispatcher } from "./run-dispatcher.js";
import { EMPTY_METRICS, type Origin, RunExecutor, TERMINAL } from "./run-executor.js";
import { type ExecuteBody, runRequestOfWire } from "./run-request-wire.js";
import { type ResumeBody, TASK_COUNT_CAP, type TaskListQuery, type TaskView } from "./schemas.js";
import { parseTaskCursor, taskCursor } from "./task-cursor.js";
import { taskView } from "./task-views.js";
import type { Telemetry } from "./telemetry.js";

type RecalledView = TaskView["memories"];

export type { Origin } from "./run-executor.js";

/** A page of a principal's tasks. */
export interface TaskPage {
  items: RunRecord[];
  /** Tasks matching, counted up to TASK_COUNT_CAP. */
  total: number;
  /** Whether `total` is the whole count (false: more match). */
  totalExact: boolean;
  /** The cursor of the next page; null after the last. */
  nextCursor: string | null;
}

export interface TaskServiceOptions {
  troupe: Troupe;
  /** Runs this process drives at once; the rest wait in the queue. */
  maxRunning: number;
  /**
   * Postgres: the runs this process takes from the shared queue at once (its worker slots); 0
   * makes an API process that only accepts, queries and streams. Default `maxRunning`. On
   * SQLite the server is the only process and always drives its runs (`maxRunning` at a time).
   */
  workers?: number;
  /** A run whose process died this many times in a row while it ran is failed instead of taken up again (default 2). */
  maxCrashes?: number;
  /** The most runs one API key's owner drives at once here (default `maxRunning`); waiting runs start round-robin across owners. */
  maxRunningPerKey?: number;
  metrics: ServerMetrics;
  telemetry: Telemetry;
  hub: EventHub;
  logger: Logger;
}

/**
 * The server's tasks: runs accepted over HTTP, persisted and queued (the run store hands each run
 * written queued to the store's run queue) before they are acknowledged, and executed by one
 * `RunDispatcher` taking them from that queue: on SQLite this server's own queue in memory, at
 * most `maxRunning` at a time; on Postgres the shared queue, by whichever worker process takes
 * them (this one too, unless it serves the API only). Drained to a checkpoint on shutdown and
 * taken up again afterwards.
 */
export class TaskService {
  readonly troupe: Troupe;
  readonly maxRunning: number;
  /** Runs this process drives at once (0: API only). */
  readonly workers: number;
  readonly executor: RunExecutor;
  /** Takes runs from the store's run queue (undefined in a Postgres process that serves the API only). */
  readonly dispatcher: RunDispatcher | undefined;
  readonly #maxCrashes: number;
  readonly #metrics: ServerMetrics;
  readonly #hub: EventHub;
  readonly #log: Logger;
  /** This server's own run queue (SQLite); undefined when the queue is shared (Postgres). */
  readonly #localQueue: SqliteRunQueue | undefined;
  /** The most runs one owner drives at once here; the slots it cannot use go to the others. */
  readonly maxRunningPerKey: number;
  /** Submissions with an Idempotency-Key whose batch is not committed yet. */
  readonly #pendingKeys = new Map<string, { requestHash: string; record: Promise<RunRecord> }>();
  #accepting = true;

  constructor(options: TaskServiceOptions) {
    this.troupe = options.troupe;
    this.maxRunning = options.maxRunning;
    this.maxRunningPerKey = Math.min(options.maxRunningPerKey ?? options.maxRunning, options.maxRunning);
    this.#maxCrashes = options.maxCrashes ?? 2;
    this.#metrics = options.metrics;
    this.#hub = options.hub;
    this.#log = options.logger;
    const queue = this.troupe.store.runQueue;
    this.#localQueue = queue instanceof SqliteRunQueue ? queue : undefined;
    this.workers = queue.shared ? (options.workers ?? options.maxRunning) : options.maxRunning;
    const parts = { troupe: this.troupe, metrics: options.metrics, telemetry: options.telemetry, hub: options.hub, logger: options.logger };
    this.dispatcher = this.workers > 0 ? new RunDispatcher({ ...parts, concurrency: this.workers, maxCrashes: this.#maxCrashes, maxRunningPerKey: this.maxRunningPerKey }) : undefined;
    this.executor = this.dispatcher?.executor ?? new RunExecutor(parts);
    if (this.#localQueue && this.dispatcher) {
      // This server is the only one taking from its queue: it keeps what the run store offers from now on.
      this.#localQueue.open();
      void this.dispatcher.start();
    }
    this.troupe.tools.onCall((report) => {
      this.#metrics.toolCalls.inc({ tool: report.tool, outcome: report.outcome.ok ? "ok" : report.outcome.error.code });
      this.executor.toolCall(report.context.runId, report);
    });
  }

  get accepting(): boolean {
    return this.#accepting;
  }

  /** Runs driven in this process, and runs waiting for one of its slots (SQLite) — the shared queue's depth is the dispatcher's. */
  stats(): { running: number; queued: number } {
    const running = this.executor.running;
    if (!this.#localQueue || !this.dispatcher) return { running, queued: 0 };
    // Taken from the queue and not started yet (waiting for their turn of the event loop) still wait.
    return { running, queued: this.#localQueue.size + Math.max(0, this.dispatcher.held - this.executor.size) };
  }

  /** Starts taking runs: the shared queue (Postgres, with workers), or what a previous server left (SQLite). */
  async start(): Promise<void> {
    await this.dispatcher?.start();
    await this.recover();
  }

  /** The executor driving a run here, if one does. */
  #driving(runId: string): RunExecutor | undefined {
    return this.executor.isActive(runId) ? this.executor : undefined;
  }

  /**
   * Accepts a task: validated, written to the runs table (synced, in a group commit with the
   * other submissions of the same turn; on Postgres with its job, in the same transaction) and
   * queued before this resolves. A replay of an Idempotency-Key returns the task it created; the
   * same key with a different body is refused.
   */
  async submit(principal: Principal, body: ExecuteBody, idempotencyKey: string | undefined, origin: Origin = {}): Promise<{ record: RunRecord; replayed: boolean }> {
    this.#assertAccepting();
    // The hash is of the body as sent (its wire form), as it always was: a key stored before stays comparable.
    const requestHash = createHash("sha256").update(stableStringify(body)).digest("hex");
    return this.#submit(principal, runRequestOfWire(body), idempotencyKey, requestHash, origin);
  }

  /** A request already in core's terms (a schedule's tick): as a POST /execute without an Idempotency-Key. */
  async submitRequest(principal: Principal, input: RunRequestInput, origin: Origin = {}): Promise<RunRecord> {
    this.#assertAccepting();
    return (await this.#submit(principal, input, undefined, undefined, origin)).record;
  }

  async #submit(principal: Principal, input: RunRequestInput, idempotencyKey: string | undefined, requestHash: string | undefined, origin: Origin): Promise<{ record: RunRecord; replayed: boolean }> {
    const pendingKey = idempotencyKey === undefined ? undefined : `${principal.id}\n${idempotencyKey}`;
    const replay = (existing: { requestHash: string | null; id: string }): void => {
      if (existing.requestHash !== requestHash) {
        throw new InputError("idempotency_key_reused", "this Idempotency-Key was used with a different request body", { task_id: existing.id });
      }
    };
    if (idempotencyKey !== undefined && pendingKey !== undefined) {
      const pending = this.#pendingKeys.get(pendingKey);
      if (pending) {
        if (pending.requestHash !== requestHash) throw new InputError("idempotency_key_reused", "this Idempotency-Key was used with a different request body");
        return { record: await pending.record, replayed: true };
      }
      const existing = await this.troupe.store.runs.findByIdempotencyKey(principal.id, idempotencyKey);
      if (existing) {
        replay(existing);
        return { record: existing, replayed: true };
      }
    }
    if (input.threadId !== undefined) await this.latestOfThread(principal, input.threadId);
    // The store writes the submissions of one turn in one transaction; the engine's check of the
    // thread runs inside it, after the submissions written before it in the same batch.
    const written = this.troupe.enqueue(input, { owner: principal.id, idempotencyKey, requestHash });
    if (pendingKey !== undefined) {
      this.#pendingKeys.set(pendingKey, { requestHash: requestHash ?? "", record: written });
      written.then(
        () => this.#pendingKeys.delete(pendingKey),
        () => this.#pendingKeys.delete(pendingKey),
      );
    }
    let record: RunRecord;
    try {
      record = await written;
    } catch (error) {
      // Another API process accepted the same key at the same moment (Postgres): that task is the answer.
      if (error instanceof ConflictError && error.code === "idempotency_key_race" && idempotencyKey !== undefined) {
        const existing = await this.troupe.store.runs.findByIdempotencyKey(principal.id, idempotencyKey);
        if (existing) {
          replay(existing);
          return { record: existing, replayed: true };
        }
      }
      throw error;
    }
    this.accepted(record, origin);
    return { record, replayed: false };
  }

  /**
   * A task written as queued (a submission, a fork) is in the run queue already: the run store
   * handed it over with the record (this process's queue on SQLite, the shared one on Postgres).
   * Its trace goes with it, for when this process's dispatcher takes it.
   */
  accepted(record: RunRecord, origin: Origin = {}): void {
    this.#metrics.tasksSubmitted.inc();
    this.#log.info({ taskId: record.id, threadId: record.threadId, requestId: origin.requestId, traceId: origin.traceId, waitsFor: record.waitsFor ?? undefined }, "task accepted");
    this.dispatcher?.origin(record.id, origin);
  }

  /**
   * The latest run of the caller's thread `name` (undefined for a thread not begun yet). A key's
   * names are its own (core/thread-key.ts: alice's `daily` is kept as `alice/daily`), so another
   * key's thread of the same name is another thread; the one case left is the unkeyed owners'
   * shared namespace — a thread of the CLI's is not the open API's (`local`) to continue or see.
   */
  async latestOfThread(principal: Principal, name: string): Promise<RunRecord | undefined> {
    const previous = await this.troupe.store.runs.latestForThread(threadKey(principal.id, name));
    if (previous && previous.owner !== principal.id) {
      throw new NotFoundError("thread_not_found", `there is no thread ${name} of yours; choose another thread_id`, { thread_id: name });
    }
    return previous;
  }

  /** A principal's task; another principal's is as good as missing. */
  async record(principal: Principal, taskId: string): Promise<RunRecord> {
    const record = await this.troupe.store.runs.get(taskId);
    if (!record || record.owner !== principal.id) throw new NotFoundError("task_not_found", `no task with id ${taskId}`, { task_id: taskId });
    return record;
  }

  /**
   * A page of the principal's tasks, newest first: after `cursor` (keyset: each page costs the
   * same however deep), or after `offset` tasks; and how many match, counted up to TASK_COUNT_CAP.
   */
  async list(principal: Principal, query: Pick<TaskListQuery, "limit" | "offset" | "status" | "thread_id" | "cursor">): Promise<TaskPage> {
    const filter = { owner: principal.id, ...(query.status ? { status: query.status } : {}), ...(query.thread_id ? { threadId: threadKey(principal.id, query.thread_id) } : {}) };
    const after = query.cursor === undefined ? undefined : parseTaskCursor(query.cursor);
    const [page, counted] = await Promise.all([
      this.troupe.store.runs.page({ ...filter, limit: query.limit, offset: query.offset, ...(after ? { after } : {}) }),
      this.troupe.store.runs.count(filter, TASK_COUNT_CAP + 1),
    ]);
    return { items: page.runs, total: Math.min(counted, TASK_COUNT_CAP), totalExact: counted <= TASK_COUNT_CAP, nextCursor: page.next === null ? null : taskCursor(page.next) };
  }

  /** The subtasks running now: from the observer of this process's drive, else (another process drives it) from the run's events. */
  async #runningHere(record: RunRecord): Promise<{ step: string | undefined; runningSubtasks: string[] } | undefined> {
    const active = this.#driving(record.id)?.get(record.id);
    if (active) return { step: active.observer.currentStep(), runningSubtasks: active.observer.runningSubtasks() };
    if (record.status !== "running" || this.troupe.store.queue === undefined) return undefined;
    const running = await this.troupe.runningSubtasks(record.id);
    return { step: running.length > 0 ? `running ${[...running].sort().join(", ")}` : undefined, runningSubtasks: running };
  }

  /**
   * The run as `troupe runs show` sees it (plan with statuses, execution graph), with the
   * subtasks running marked as running; null for a run that has not started.
   */
  async #show(record: RunRecord): Promise<{ plan: SubtaskView[]; graph: ExecutionGraph; memories: RecalledView | null } | null> {
    if (record.startedAt === null) return null;
    const view = await this.troupe.show(record.id);
    const running = new Set((await this.#runningHere(record))?.runningSubtasks ?? []);
    return {
      memories: view.trace?.memories ?? null,
      plan: view.plan.map((subtask) => (running.has(subtask.id) && subtask.status === "pending" ? { ...subtask, status: "running" as const } : subtask)),
      graph: { ...view.graph, nodes: view.graph.nodes.map((node) => (running.has(node.id) && node.status === "PENDING" ? { ...node, status: "RUNNING" as const } : node)) },
    };
  }

  /** The plan with statuses (from the checkpoint, with the subtasks running marked). */
  async plan(record: RunRecord): Promise<SubtaskView[]> {
    return (await this.#show(record))?.plan ?? [];
  }

  /** The execution graph (issue 4's renderer, as `troupe runs show --json`), with the subtasks running marked. */
  async graph(record: RunRecord): Promise<ExecutionGraph> {
    return (await this.#show(record))?.graph ?? emptyExecutionGraph();
  }

  async view(principal: Principal, taskId: string): Promise<TaskView> {
    const record = await this.record(principal, taskId);
    const shown = await this.#show(record);
    const latest = (await this.troupe.store.runs.get(record.id)) ?? record;
    const interrupts = latest.status === "interrupted" && latest.interrupt ? await this.troupe.pendingInterrupts(latest.threadId) : [];
    return { ...taskView(latest, shown?.plan ?? [], await this.#runningHere(latest), interrupts), conversation: await this.#conversation(principal, latest), memories: shown?.memories ?? null };
  }

  /** The runs of a task's thread before it, the caller's only, oldest first: the conversation it continues. */
  async #conversation(principal: Principal, record: RunRecord): Promise<TaskView["conversation"]> {
    const earlier = (await this.troupe.store.runs.list({ threadId: record.threadId, owner: principal.id, limit: 200 }))
      .filter((run) => run.id !== record.id && (run.createdAt < record.createdAt || (run.createdAt === record.createdAt && run.id < record.id)))
      .slice(0, 50)
      .reverse();
    return earlier.map((run) => ({
      task_id: run.id,
      task: run.task,
      status: run.status,
      answer: run.answer === null ? null : run.answer.length > 1_000 ? `${run.answer.slice(0, 999)}…` : run.answer,
      answer_format: run.answer !== null ? run.answerFormat : null,
    }));
  }

  /**
   * Answers a run waiting for a person; it continues as soon as a slot is free (on Postgres, on
   * whichever worker takes it from the queue). When several interrupts are pending (tool calls of
   * parallel subtasks waiting for approval), `interrupt_id` names the one answered (the first by
   * default); the others are asked again when the run pauses next.
   */
  async resume(principal: Principal, taskId: string, body: ResumeBody): Promise<RunRecord> {
    this.#assertAccepting();
    // A drive that has written that the run waits for a person finishes recording it first.
    await this.executor.settle(taskId);
    const waiting = (record: RunRecord): RunRecord & { interrupt: NonNullable<RunRecord["interrupt"]> } => {
      if (this.#driving(record.id) || record.status !== "interrupted" || !record.interrupt) {
        const why = record.suspended ? "it was stopped by a shutdown and resumes by itself" : `it is ${record.status}`;
        throw new ConflictError("task_not_waiting", `the task is not waiting for a person: ${why}`, { status: record.status });
      }
      return record as RunRecord & { interrupt: NonNullable<RunRecord["interrupt"]> };
    };
    const first = waiting(this.#notEvalCase(await this.record(principal, taskId), "resume"));
    const pending = await this.troupe.pendingInterrupts(first.threadId);
    // Checked again after the read: another request may have answered meanwhile.
    const record = waiting(await this.record(principal, taskId));
    const target = body.interrupt_id === undefined ? pending[0] : pending.find((candidate) => candidate.id === body.interrupt_id);
    if (body.interrupt_id !== undefined && !target) {
      throw new ConflictError("interrupt_not_pending", `the task does not wait on interrupt ${body.interrupt_id}; it waits on ${pending.map((candidate) => candidate.id).join(", ") || "nothing"}`, {
        interrupt_ids: pending.map((candidate) => candidate.id),
      });
    }
    const decision: ResumeDecision = decisionFor(target?.kind ?? record.interrupt.kind, body, target?.payload ?? record.interrupt.payload);
    const pendingDecision = target?.id !== undefined && body.interrupt_id !== undefined ? { ...decision, interruptId: target.id } : decision;
    // Only while it still waits: two answers at once, from two API processes, queue it once.
    const queued = await this.troupe.store.runs.update(record.id, { status: "queued", pendingDecision, interrupt: null }, { ifStatus: ["interrupted"] });
    if (!queued) throw new ConflictError("task_not_waiting", "the task is not waiting for a person: it was answered meanwhile", { status: (await this.record(principal, taskId)).status });
    this.#log.info({ taskId: record.id, threadId: record.threadId, decision: decision.decision, interruptId: body.interrupt_id }, "task resumed by a person");
    return (await this.troupe.store.runs.get(record.id)) as RunRecord;
  }

  /**
   * Stops a task: a running one at once (it can no longer be resumed here), a waiting or queued one
   * in place. On Postgres a run driven by another process is asked to stop (a message to every
   * process, and a flag on the run for whoever holds it next), and the answer waits up to 10 s
   * for it to stop.
   */
  async cancel(principal: Principal, taskId: string): Promise<RunRecord> {
    // A drive that has written where the run ends or rests finishes recording it first.
    await this.executor.settle(taskId);
    const record = this.#notEvalCase(await this.record(principal, taskId), "cancel");
    if (TERMINAL.has(record.status)) throw new ConflictError("task_finished", `the task has already ${record.status === "cancelled" ? "been cancelled" : "finished"}`, { status: record.status });
    const driving = this.#driving(record.id);
    if (driving) {
      await driving.cancel(record.id);
      return (await this.troupe.store.runs.get(record.id)) as RunRecord;
    }
    // Only while it waits (queued, or for a person): a worker may have started it meanwhile.
    const stopped = await this.troupe.store.runs.update(
      record.id,
      { status: "cancelled", stopReason: "cancelled", interrupt: null, suspended: null, pendingDecision: null, pid: null, worker: null, finishedAt: Date.now() },
      { ifStatus: ["queued", "interrupted"] },
    );
    if (stopped) {
      this.#publish(await this.troupe.store.events.append(record.id, { type: "run-end", status: "cancelled", stopReason: "cancelled", metrics: record.metrics ?? { ...EMPTY_METRICS, durationMs: record.activeMs } }));
      this.#metrics.tasksTotal.inc({ status: "cancelled" });
      this.#log.info({ taskId: record.id, threadId: record.threadId }, "task cancelled");
      return (await this.troupe.store.runs.get(record.id)) as RunRecord;
    }
    const control = this.troupe.store.control;
    if (!control) throw new ConflictError("task_not_cancellable", "the task changed while it was being cancelled; try again", { status: record.status });
    // Driven by another process: ask it, and leave a flag whoever holds it next will see.
    await this.troupe.store.runs.update(record.id, { cancelRequested: true });
    await control.send({ action: "cancel", runId: record.id });
    this.#log.info({ taskId: record.id, threadId: record.threadId, worker: record.worker }, "cancel sent to the process driving the task");
    const deadline = Date.now() + 10_000;
    for (;;) {
      const now = await this.troupe.store.runs.get(record.id);
      if (!now || TERMINAL.has(now.status) || Date.now() > deadline) return now ?? record;
      await sleep(100);
    }
  }

  /**
   * Takes up what a previous server left (SQLite): queued tasks, tasks stopped by a shutdown, and
   * tasks recorded as running whose process is gone. They continue from their checkpoints —
   * except a task whose process has now died `maxCrashes` times in a row while it ran: that one
   * is failed, naming the crashes, so a task that kills troupe cannot kill every server that
   * takes it up. On Postgres the shared queue does this: a dead worker's jobs come back to the
   * queue when their heartbeat stops.
   */
  async recover(): Promise<{ resumed: number; queued: number; crashed: number }> {
    let resumed = 0;
    let queued = 0;
    let crashed = 0;
    if (this.troupe.store.queue) return { resumed, queued, crashed };
    for (const record of await this.troupe.store.runs.listUnsettled()) {
      if (this.executor.isActive(record.id) || this.dispatcher?.holds(record.id)) {
        // Already taken from the queue here (it was offered when it was written queued).
        if (record.status === "queued") queued += 1;
        continue;
      }
      // A run recorded with this process's pid is an earlier process's (a restarted container reuses pids).
      if (record.status === "running" && record.pid !== process.pid && isAlive(record.pid, record.host)) continue;
      if (record.status === "running") {
        const crashes = await this.troupe.store.runs.recordCrash(record.id);
        if (crashes >= this.#maxCrashes) {
          await failCrashedRun(this.troupe, record, crashes, this.#maxCrashes, this.#log, (event) => this.#publish(event));
          this.#metrics.tasksTotal.inc({ status: "failed" });
          crashed += 1;
          continue;
        }
        this.#log.warn({ taskId: record.id, threadId: record.threadId, crashes, maxCrashes: this.#maxCrashes }, "task's process died while it ran; taking it up again");
      }
      if (record.status !== "queued") {
        await this.troupe.store.runs.update(record.id, { status: "queued", pid: null, host: null, suspended: null });
        resumed += 1;
      } else {
        queued += 1;
      }
      // Its record says queued: offered to this server's queue (again: an offer is kept once).
      this.#localQueue?.offer({ runId: record.id, threadId: record.threadId, owner: record.owner, waitsFor: record.waitsFor });
    }
    if (resumed + queued > 0) this.#log.info({ resumed, queued }, "took up unfinished tasks");
    return { resumed, queued, crashed };
  }

  /**
   * Stops accepting, asks every running task to stop at its next checkpoint, waits up to
   * `graceMs`, then stops the rest; all of them are recorded as suspended. Queued tasks stay
   * queued, to be taken up by the next server (SQLite) or another worker (Postgres: the suspended
   * runs go back to the shared queue at their last checkpoint).
   */
  async shutdown(graceMs: number): Promise<{ drained: number; stopped: number }> {
    this.#accepting = false;
    const { drained, stopped } = await (this.dispatcher?.drain(graceMs) ?? this.executor.drainAll(graceMs));
    this.#log.info({ drained, stopped, queued: this.#localQueue?.size }, "tasks suspended for shutdown");
    return { drained, stopped };
  }

  /** Whether a run executes in this process now. */
  isActive(taskId: string): boolean {
    return this.#driving(taskId) !== undefined;
  }

  /**
   * Whether a drive of this process still holds the run, one that has written where the run ends
   * or rests and still records its `run-end` included: a stream of its events is not over yet.
   */
  holdsDrive(taskId: string): boolean {
    return this.executor.get(taskId) !== undefined;
  }

  /**
   * Resolves once this process's drive of a run whose `run-end` event is `endSeq` has let the run
   * go: that event comes before the drive stops, so a follower that reads where the run rests
   * waits for this first (a run waiting for a person is not "working" here any more). At once for
   * any other event (an earlier drive's end) or a run not driven here.
   */
  async driveSettled(taskId: string, endSeq: number): Promise<void> {
    const active = this.executor.get(taskId);
    if (active?.endSeq === endSeq) await active.settled;
  }

  /** An eval's case runs in its eval, in its own workspace: it is cancelled with its eval and never resumed here. */
  #notEvalCase(record: RunRecord, action: EvalCaseAction): RunRecord {
    refuseEvalCase(record, action);
    return record;
  }

  #assertAccepting(): void {
    if (!this.#accepting) throw new TroupeError("shutting_down", "the server is shutting down; retry shortly", { retryAfterSeconds: 5 });
  }

  #publish(event: StoredEvent): void {
    this.#hub.publish(event);
  }
}
