import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { RunControl } from "@langchain/langgraph";
import type { Context } from "@opentelemetry/api";
import type { Logger } from "pino";
import { ConflictError, errorMessage, InputError, isTroupeError, NotFoundError, TroupeError } from "../core/errors.js";
import type { StoredEvent } from "../core/events.js";
import { emptyExecutionGraph, type ExecutionGraph } from "../core/execution-graph.js";
import type { SubtaskView } from "../core/plan.js";
import type { ResumeDecision, RunRequestInput, RunResult } from "../core/run.js";
import { stableStringify } from "../core/text.js";
import { isAlive, type Troupe } from "../runtime/engine.js";
import { reconcileRun } from "../runtime/reconcile.js";
import type { RunRecord } from "../store/index.js";
import type { Principal } from "./config.js";
import type { EventHub } from "./event-hub.js";
import type { ServerMetrics } from "./metrics.js";
import { RunObserver } from "./run-observer.js";
import type { ExecuteBody, ResumeBody, TaskListQuery, TaskView } from "./schemas.js";

type RecalledView = TaskView["memories"];
import { taskView } from "./task-views.js";
import { newTraceId, type Telemetry } from "./telemetry.js";
import { TurnGate } from "./turn-gate.js";
import { GroupCommit } from "./group-commit.js";
import { decisionFor } from "./decisions.js";

export interface TaskServiceOptions {
  troupe: Troupe;
  maxRunning: number;
  /** A run whose process died this many times in a row while it ran is failed instead of taken up again (default 2). */
  maxCrashes?: number;
  metrics: ServerMetrics;
  telemetry: Telemetry;
  hub: EventHub;
  logger: Logger;
}

/** Where a submission came from, for the logs and the run's trace. */
export interface Origin {
  requestId?: string;
  traceId?: string;
  parent?: Context;
}

interface ActiveRun {
  record: RunRecord;
  controller: AbortController;
  control: RunControl;
  observer: RunObserver;
  settled: Promise<void>;
  log: Logger;
}

const TERMINAL = new Set(["completed", "failed", "cancelled"]);

/** Refusals of a drive that leave the run as its checkpoint has it, rather than failed. */
const SETTLE_CODES = new Set(["decision_required", "run_finished", "unknown_interrupt", "approval_required", "answer_required"]);

/**
 * The server's tasks: runs accepted over HTTP, persisted before they are acknowledged, executed
 * at most `maxRunning` at a time (the rest wait in a queue), drained to a checkpoint on
 * shutdown and taken up again when a server starts.
 */
export class TaskService {
  readonly troupe: Troupe;
  readonly maxRunning: number;
  readonly #maxCrashes: number;
  readonly #metrics: ServerMetrics;
  readonly #telemetry: Telemetry;
  readonly #hub: EventHub;
  readonly #log: Logger;
  readonly #queue: string[] = [];
  readonly #active = new Map<string, ActiveRun>();
  /** Trace of each submission until its run starts. */
  readonly #origins = new Map<string, Origin>();
  readonly #gate = new TurnGate();
  readonly #commits: GroupCommit;
  /** Submissions with an Idempotency-Key whose batch is not committed yet. */
  readonly #pendingKeys = new Map<string, { requestHash: string; record: Promise<RunRecord> }>();
  #accepting = true;
  #pumpScheduled = false;
  /** Runs taken from the queue and waiting for their turn to start. */
  #starting = 0;

  constructor(options: TaskServiceOptions) {
    this.troupe = options.troupe;
    this.maxRunning = options.maxRunning;
    this.#maxCrashes = options.maxCrashes ?? 2;
    this.#metrics = options.metrics;
    this.#telemetry = options.telemetry;
    this.#hub = options.hub;
    this.#log = options.logger;
    this.#commits = new GroupCommit(this.troupe.store.db);
    this.troupe.tools.onCall((report) => {
      this.#metrics.toolCalls.inc({ tool: report.tool, outcome: report.outcome.ok ? "ok" : report.outcome.error.code });
      if (report.context.runId) this.#active.get(report.context.runId)?.observer.toolCall(report);
    });
  }

  get accepting(): boolean {
    return this.#accepting;
  }

  stats(): { running: number; queued: number } {
    return { running: this.#active.size, queued: this.#queue.length + this.#starting };
  }

  /**
   * Accepts a task: validated, written to the runs table (synced, in a group commit with the
   * other submissions of the same turn) and queued before this resolves. A replay of an
   * Idempotency-Key returns the task it created; the same key with a different body is refused.
   */
  async submit(principal: Principal, body: ExecuteBody, idempotencyKey: string | undefined, origin: Origin = {}): Promise<{ record: RunRecord; replayed: boolean }> {
    this.#assertAccepting();
    const requestHash = createHash("sha256").update(stableStringify(body)).digest("hex");
    const pendingKey = idempotencyKey === undefined ? undefined : `${principal.id}\n${idempotencyKey}`;
    if (idempotencyKey !== undefined && pendingKey !== undefined) {
      const replay = (existing: { requestHash: string | null; id: string }): void => {
        if (existing.requestHash !== requestHash) {
          throw new InputError("idempotency_key_reused", "this Idempotency-Key was used with a different request body", { task_id: existing.id });
        }
      };
      const pending = this.#pendingKeys.get(pendingKey);
      if (pending) {
        if (pending.requestHash !== requestHash) throw new InputError("idempotency_key_reused", "this Idempotency-Key was used with a different request body");
        return { record: await pending.record, replayed: true };
      }
      const existing = this.troupe.store.runs.findByIdempotencyKey(principal.id, idempotencyKey);
      if (existing) {
        replay(existing);
        return { record: existing, replayed: true };
      }
    }
    if (body.thread_id !== undefined) {
      // Another client's thread is as good as missing: its conversation is not the caller's to continue or to see.
      const previous = this.troupe.store.runs.latestForThread(body.thread_id);
      if (previous && previous.owner !== principal.id) {
        throw new NotFoundError("thread_not_found", `there is no thread ${body.thread_id} of yours; choose another thread_id`, { thread_id: body.thread_id });
      }
    }
    const input: RunRequestInput = { task: body.task };
    if (body.context !== undefined) input.context = typeof body.context === "string" ? body.context : JSON.stringify(body.context);
    if (body.max_iterations !== undefined) input.maxIterations = body.max_iterations;
    if (body.approve_plan !== undefined) input.approvePlan = body.approve_plan;
    if (body.approve_answer !== undefined) input.approveAnswer = body.approve_answer;
    if (body.thread_id !== undefined) input.threadId = body.thread_id;
    if (body.tools !== undefined) input.tools = body.tools;
    if (body.reviewers !== undefined) input.reviewers = body.reviewers;
    if (body.history_budget !== undefined) input.historyBudget = body.history_budget;
    // The engine checks the request and the thread again inside the transaction, after the
    // submissions written before it in the same batch.
    const written = this.#commits.run(() => this.troupe.enqueue(input, { owner: principal.id, idempotencyKey, requestHash }));
    if (pendingKey !== undefined) {
      this.#pendingKeys.set(pendingKey, { requestHash, record: written });
      written.then(
        () => this.#pendingKeys.delete(pendingKey),
        () => this.#pendingKeys.delete(pendingKey),
      );
    }
    const record = await written;
    this.#origins.set(record.id, origin);
    this.#metrics.tasksSubmitted.inc();
    this.#log.info({ taskId: record.id, threadId: record.threadId, requestId: origin.requestId, traceId: origin.traceId }, "task accepted");
    this.#enqueue(record.id);
    return { record, replayed: false };
  }

  /** A principal's task; another principal's is as good as missing. */
  record(principal: Principal, taskId: string): RunRecord {
    const record = this.troupe.store.runs.get(taskId);
    if (!record || record.owner !== principal.id) throw new NotFoundError("task_not_found", `no task with id ${taskId}`, { task_id: taskId });
    return record;
  }

  list(principal: Principal, query: TaskListQuery): { items: RunRecord[]; total: number } {
    const filter = { owner: principal.id, ...(query.status ? { status: query.status } : {}), ...(query.thread_id ? { threadId: query.thread_id } : {}) };
    return { items: this.troupe.store.runs.list({ ...filter, limit: query.limit, offset: query.offset }), total: this.troupe.store.runs.count(filter) };
  }

  /**
   * The run as `troupe runs show` sees it (plan with statuses, execution graph), with the
   * subtasks running here marked as running; null for a run that has not started.
   */
  async #show(record: RunRecord): Promise<{ plan: SubtaskView[]; graph: ExecutionGraph; memories: RecalledView | null } | null> {
    if (record.startedAt === null) return null;
    const view = await this.troupe.show(record.id);
    const running = new Set(this.#active.get(record.id)?.observer.runningSubtasks() ?? []);
    return {
      memories: view.trace?.memories ?? null,
      plan: view.plan.map((subtask) => (running.has(subtask.id) && subtask.status === "pending" ? { ...subtask, status: "running" as const } : subtask)),
      graph: { ...view.graph, nodes: view.graph.nodes.map((node) => (running.has(node.id) && node.status === "PENDING" ? { ...node, status: "RUNNING" as const } : node)) },
    };
  }

  /** The plan with statuses (from the checkpoint, with the subtasks running here marked). */
  async plan(record: RunRecord): Promise<SubtaskView[]> {
    return (await this.#show(record))?.plan ?? [];
  }

  /** The execution graph (issue 4's renderer, as `troupe runs show --json`), with the subtasks running here marked. */
  async graph(record: RunRecord): Promise<ExecutionGraph> {
    return (await this.#show(record))?.graph ?? emptyExecutionGraph();
  }

  async view(principal: Principal, taskId: string): Promise<TaskView> {
    const record = this.record(principal, taskId);
    const active = this.#active.get(record.id);
    const shown = await this.#show(record);
    const latest = this.troupe.store.runs.get(record.id) ?? record;
    const interrupts = latest.status === "interrupted" && latest.interrupt ? await this.troupe.pendingInterrupts(latest.threadId) : [];
    const live = active ? { step: active.observer.currentStep(), runningSubtasks: active.observer.runningSubtasks() } : undefined;
    return { ...taskView(latest, shown?.plan ?? [], live, interrupts), conversation: this.#conversation(principal, latest), memories: shown?.memories ?? null };
  }

  /** The runs of a task's thread before it, the caller's only, oldest first: the conversation it continues. */
  #conversation(principal: Principal, record: RunRecord): TaskView["conversation"] {
    const earlier = this.troupe.store.runs
      .list({ threadId: record.threadId, owner: principal.id, limit: 200 })
      .filter((run) => run.id !== record.id && (run.createdAt < record.createdAt || (run.createdAt === record.createdAt && run.id < record.id)))
      .slice(0, 50)
      .reverse();
    return earlier.map((run) => ({ task_id: run.id, task: run.task, status: run.status, answer: run.answer === null ? null : run.answer.length > 1_000 ? `${run.answer.slice(0, 999)}…` : run.answer }));
  }

  /**
   * Answers a run waiting for a person; it continues as soon as a slot is free. When several
   * interrupts are pending (tool calls of parallel subtasks waiting for approval), `interrupt_id`
   * names the one answered (the first by default); the others are asked again when the run
   * pauses next.
   */
  async resume(principal: Principal, taskId: string, body: ResumeBody): Promise<RunRecord> {
    this.#assertAccepting();
    const waiting = (record: RunRecord): RunRecord & { interrupt: NonNullable<RunRecord["interrupt"]> } => {
      if (this.#active.has(record.id) || record.status !== "interrupted" || !record.interrupt) {
        const why = record.suspended ? "it was stopped by a shutdown and resumes by itself" : `it is ${record.status}`;
        throw new ConflictError("task_not_waiting", `the task is not waiting for a person: ${why}`, { status: record.status });
      }
      return record as RunRecord & { interrupt: NonNullable<RunRecord["interrupt"]> };
    };
    const first = waiting(this.#notEvalCase(this.record(principal, taskId)));
    const pending = await this.troupe.pendingInterrupts(first.threadId);
    // Checked again after the read: another request may have answered meanwhile.
    const record = waiting(this.record(principal, taskId));
    const target = body.interrupt_id === undefined ? pending[0] : pending.find((candidate) => candidate.id === body.interrupt_id);
    if (body.interrupt_id !== undefined && !target) {
      throw new ConflictError("interrupt_not_pending", `the task does not wait on interrupt ${body.interrupt_id}; it waits on ${pending.map((candidate) => candidate.id).join(", ") || "nothing"}`, {
        interrupt_ids: pending.map((candidate) => candidate.id),
      });
    }
    const decision: ResumeDecision = decisionFor(target?.kind ?? record.interrupt.kind, body);
    const pendingDecision = target?.id !== undefined && body.interrupt_id !== undefined ? { ...decision, interruptId: target.id } : decision;
    this.troupe.store.runs.update(record.id, { status: "queued", pendingDecision, interrupt: null });
    this.#log.info({ taskId: record.id, threadId: record.threadId, decision: decision.decision, interruptId: body.interrupt_id }, "task resumed by a person");
    this.#enqueue(record.id, true);
    return this.troupe.store.runs.get(record.id) as RunRecord;
  }

  /** Stops a task: a running one at once (it can no longer be resumed here), a waiting one in place. */
  async cancel(principal: Principal, taskId: string): Promise<RunRecord> {
    const record = this.#notEvalCase(this.record(principal, taskId));
    if (TERMINAL.has(record.status)) throw new ConflictError("task_finished", `the task has already ${record.status === "cancelled" ? "been cancelled" : "finished"}`, { status: record.status });
    const active = this.#active.get(record.id);
    if (active) {
      active.controller.abort();
      await Promise.race([active.settled, sleep(10_000, undefined, { ref: false })]);
      return this.troupe.store.runs.get(record.id) as RunRecord;
    }
    const index = this.#queue.indexOf(record.id);
    if (index >= 0) this.#queue.splice(index, 1);
    this.#metrics.tasksQueued.set(this.#queue.length);
    this.troupe.store.runs.update(record.id, { status: "cancelled", stopReason: "cancelled", interrupt: null, suspended: null, pendingDecision: null, pid: null, finishedAt: Date.now() });
    const metrics = record.metrics ?? { llmCalls: 0, toolCalls: 0, promptTokens: 0, completionTokens: 0, costUsd: 0, reflectionCount: 0, nodeVisits: 0, durationMs: record.activeMs };
    this.#publish(this.troupe.store.events.append(record.id, { type: "run-end", status: "cancelled", stopReason: "cancelled", metrics }));
    this.#metrics.tasksTotal.inc({ status: "cancelled" });
    this.#log.info({ taskId: record.id, threadId: record.threadId }, "task cancelled");
    return this.troupe.store.runs.get(record.id) as RunRecord;
  }

  /**
   * Takes up what a previous server left: queued tasks, tasks stopped by a shutdown, and tasks
   * recorded as running whose process is gone. They continue from their checkpoints — except a
   * task whose process has now died `maxCrashes` times in a row while it ran: that one is failed,
   * naming the crashes, so a task that kills troupe cannot kill every server that takes it up.
   */
  recover(): { resumed: number; queued: number; crashed: number } {
    let resumed = 0;
    let queued = 0;
    let crashed = 0;
    for (const record of this.troupe.store.runs.listUnsettled()) {
      if (this.#active.has(record.id) || this.#queue.includes(record.id)) continue;
      // A run recorded with this process's pid is an earlier process's (a restarted container reuses pids).
      if (record.status === "running" && record.pid !== process.pid && isAlive(record.pid, record.host)) continue;
      if (record.status === "running") {
        const crashes = this.troupe.store.runs.recordCrash(record.id);
        if (crashes >= this.#maxCrashes) {
          this.#failCrashed(record, crashes);
          crashed += 1;
          continue;
        }
        this.#log.warn({ taskId: record.id, threadId: record.threadId, crashes, maxCrashes: this.#maxCrashes }, "task's process died while it ran; taking it up again");
      }
      if (record.status !== "queued") {
        this.troupe.store.runs.update(record.id, { status: "queued", pid: null, host: null, suspended: null });
        resumed += 1;
      } else {
        queued += 1;
      }
      this.#enqueue(record.id);
    }
    if (resumed + queued > 0) this.#log.info({ resumed, queued }, "took up unfinished tasks");
    return { resumed, queued, crashed };
  }

  /** Fails a run whose process kept dying while it ran (a poison task). */
  #failCrashed(record: RunRecord, crashes: number): void {
    const error =
      `the process running this task died ${crashes} times in a row while the task ran (killed, or out of memory), ` +
      `so it is not taken up again (limit ${this.#maxCrashes}: --max-crashes, TROUPE_MAX_CRASHES); its audit trail shows the tool calls left unfinished`;
    this.troupe.store.runs.update(record.id, { status: "failed", stopReason: "failed", error, pid: null, host: null, suspended: null, pendingDecision: null, crashes, finishedAt: Date.now() });
    const metrics = record.metrics ?? { llmCalls: 0, toolCalls: 0, promptTokens: 0, completionTokens: 0, costUsd: 0, reflectionCount: 0, nodeVisits: 0, durationMs: record.activeMs };
    this.#publish(this.troupe.store.events.append(record.id, { type: "run-end", status: "failed", stopReason: "failed", metrics }));
    this.#metrics.tasksTotal.inc({ status: "failed" });
    const unfinished = this.troupe.store.audit.unfinished({ runId: record.id }).map((row) => ({ id: row.id, tool: row.tool, subtaskId: row.subtaskId }));
    this.#log.error({ taskId: record.id, threadId: record.threadId, crashes, unfinishedToolCalls: unfinished }, "task failed: its process kept dying while it ran");
  }

  /**
   * Stops accepting, asks every running task to stop at its next checkpoint, waits up to
   * `graceMs`, then stops the rest; all of them are recorded as suspended, and queued tasks stay
   * queued, to be taken up by the next server.
   */
  async shutdown(graceMs: number): Promise<{ drained: number; stopped: number }> {
    this.#accepting = false;
    const active = [...this.#active.values()];
    for (const run of active) run.control.requestDrain("shutdown");
    const all = Promise.all(active.map((run) => run.settled));
    const timer = sleep(graceMs, "timeout" as const, { ref: false });
    const outcome = await Promise.race([all.then(() => "drained" as const), timer]);
    const left = [...this.#active.values()];
    for (const run of left) run.controller.abort();
    await Promise.race([Promise.all(left.map((run) => run.settled)), sleep(5_000, undefined, { ref: false })]);
    const stopped = outcome === "timeout" ? left.length : 0;
    this.#log.info({ drained: active.length - stopped, stopped, queued: this.#queue.length }, "tasks suspended for shutdown");
    return { drained: active.length - stopped, stopped };
  }

  /** Whether a run executes in this server now. */
  isActive(taskId: string): boolean {
    return this.#active.has(taskId);
  }

  /** An eval's case runs in its eval, in its own workspace: it is cancelled with its eval and never resumed here. */
  #notEvalCase(record: RunRecord): RunRecord {
    if (record.evalId !== null) {
      throw new ConflictError("eval_case", `the task is a case of eval ${record.evalId}; cancel the eval instead (an eval's cases are not resumed)`, { eval_id: record.evalId });
    }
    return record;
  }

  #assertAccepting(): void {
    if (!this.#accepting) throw new TroupeError("system", "shutting_down", "the server is shutting down; retry shortly", { retryAfterSeconds: 5 });
  }

  #enqueue(taskId: string, first = false): void {
    if (first) this.#queue.unshift(taskId);
    else this.#queue.push(taskId);
    this.#metrics.tasksQueued.set(this.#queue.length);
    if (this.#pumpScheduled) return;
    this.#pumpScheduled = true;
    // The 202 goes out first; runs start on the next turn of the event loop.
    setImmediate(() => {
      this.#pumpScheduled = false;
      this.#pump();
    });
  }

  #pump(): void {
    while (this.#accepting && this.#active.size + this.#starting < this.maxRunning && this.#queue.length > 0) {
      const taskId = this.#queue.shift() as string;
      // Starting a run reads and writes the database before its first step: one start per turn
      // of the event loop, like every step, so a burst of starts does not hold up requests.
      this.#starting += 1;
      void this.#gate.pass().then(() => {
        this.#starting -= 1;
        this.#launch(taskId);
      });
    }
    this.#metrics.tasksQueued.set(this.#queue.length);
    this.#metrics.tasksRunning.set(this.#active.size);
  }

  #publish(event: StoredEvent): void {
    this.#hub.publish(event);
  }

  #launch(taskId: string): void {
    const record = this.troupe.store.runs.get(taskId);
    // Cancelled meanwhile, or the server is stopping: a queued run stays queued for the next one.
    if (!record || record.status !== "queued" || !this.#accepting) {
      this.#pump();
      return;
    }
    const origin = this.#origins.get(taskId) ?? {};
    this.#origins.delete(taskId);
    const resumed = record.startedAt !== null;
    const observer = new RunObserver({
      taskId,
      threadId: record.threadId,
      resumed,
      metrics: this.#metrics,
      models: this.troupe.models.choice,
      tracer: this.#telemetry.tracer,
      parent: origin.parent,
      gate: this.#gate,
    });
    if (resumed) observer.resumeWith(this.troupe.runningSubtasks(record.id));
    const traceId = observer.traceId ?? origin.traceId ?? newTraceId();
    const log = this.#log.child({ taskId, threadId: record.threadId, traceId });
    const controller = new AbortController();
    const control = new RunControl();
    const before = record.metrics;
    let settle: () => void = () => {};
    const active: ActiveRun = { record, controller, control, observer, log, settled: new Promise<void>((resolve) => (settle = resolve)) };
    this.#active.set(taskId, active);
    const options = {
      signal: controller.signal,
      control,
      callbacks: [observer],
      onEvent: (event: StoredEvent) => {
        observer.event(event);
        if (event.type === "critic-verdict") this.#metrics.verdict(event.verdict.passed);
        this.#publish(event);
      },
    };
    log.info({ resumed, decision: record.pendingDecision?.decision }, resumed ? "task resumed" : "task started");
    const { interruptId, ...decision } = record.pendingDecision ?? { decision: undefined };
    const drive: Promise<RunResult> = resumed
      ? this.troupe.resume(record.threadId, decision.decision === undefined ? undefined : (decision as ResumeDecision), { ...options, ...(interruptId !== undefined ? { interruptId } : {}) })
      : this.troupe.start(taskId, options);
    drive
      .then((result) => this.#finished(active, result, before))
      .catch((error: unknown) => this.#failed(active, error))
      .finally(() => {
        this.#active.delete(taskId);
        settle();
        this.#metrics.tasksRunning.set(this.#active.size);
        this.#pump();
      });
  }

  #finished(active: ActiveRun, result: RunResult, before: RunRecord["metrics"]): void {
    active.observer.finish(result.status, result.error);
    this.#metrics.llmTokens.inc({ kind: "prompt" }, Math.max(0, result.metrics.promptTokens - (before?.promptTokens ?? 0)));
    this.#metrics.llmTokens.inc({ kind: "completion" }, Math.max(0, result.metrics.completionTokens - (before?.completionTokens ?? 0)));
    if (TERMINAL.has(result.status)) {
      this.#metrics.tasksTotal.inc({ status: result.status });
      this.#metrics.tasksDuration.observe({ status: result.status }, result.metrics.durationMs / 1000);
    }
    const suspended = this.troupe.store.runs.get(result.runId)?.suspended ?? null;
    active.log.info({ status: result.status, stopReason: result.stopReason, suspended, durationMs: result.metrics.durationMs, error: result.error }, "task stopped");
  }

  /** A drive that threw before running (a conflict found on resume): settle the record from its checkpoint. */
  async #failed(active: ActiveRun, error: unknown): Promise<void> {
    const taskId = active.record.id;
    active.observer.finish("failed", errorMessage(error));
    const code = isTroupeError(error) ? error.code : undefined;
    // The run is where its checkpoint says (still waiting, or finished): a decision that did not
    // fit what it waits for (an interrupt answered meanwhile, a kind changed) leaves it waiting.
    if (code !== undefined && SETTLE_CODES.has(code)) {
      const events = await reconcileRun(this.troupe, taskId);
      for (const event of events) this.#publish(event);
      if (events.length > 0) {
        active.log.info({ code }, "task record settled from its checkpoint");
        return;
      }
    }
    active.log.error({ err: error }, "task could not run");
    this.troupe.store.runs.update(taskId, { status: "failed", stopReason: "failed", error: errorMessage(error), pid: null, pendingDecision: null, finishedAt: Date.now() });
    const metrics = active.record.metrics ?? { llmCalls: 0, toolCalls: 0, promptTokens: 0, completionTokens: 0, costUsd: 0, reflectionCount: 0, nodeVisits: 0, durationMs: 0 };
    this.#publish(this.troupe.store.events.append(taskId, { type: "run-end", status: "failed", stopReason: "failed", metrics }));
    this.#metrics.tasksTotal.inc({ status: "failed" });
  }
}
