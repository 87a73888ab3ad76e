import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { Command, GraphRecursionError, isGraphDrained, RunControl } from "@langchain/langgraph";
import { z } from "zod";
import { RunLedger } from "../agents/run-ledger.js";
import type { TroupeConfig } from "../config/config-file.js";
import type { Budget } from "../core/budget.js";
import { ConflictError, errorMessage, InputError, NotFoundError } from "../core/errors.js";
import type { RunEvent, StoredEvent } from "../core/events.js";
import { CONVERSATION_LIMITS } from "../core/conversation.js";
import { evalCaseNamespace } from "../core/memory.js";
import { LIMITS } from "../core/limits.js";
import { type InterruptInfo, ResumeDecision, type RunRequestInput, type RunResult, RunRequest, runStatusOf } from "../core/run.js";
import type { TroupeGraph } from "../graph/build-graph.js";
import type { RunSettings, State } from "../graph/state.js";
import { recursionLimitFor, workDone } from "../graph/trace.js";
import { MODEL_ROLES } from "../providers/provider.js";
import { choiceId, type ModelSet } from "../providers/registry.js";
import { isAlive, type RunRecord, type Store, type ThreadLease } from "../store/index.js";
import { finishedPatch, type NewRun } from "../store/runs/contract.js";
import { schemaProblem } from "../tools/json-schema.js";
import type { ToolRegistry } from "../tools/registry.js";
import type { AgentRegistry } from "../agents/define-agent.js";
import { type ForkRequest, prepareFork, seedFork } from "./fork.js";
import { checkWebhook } from "./webhook-sender.js";
import { RunStatsRecorder } from "./run-stats.js";
import { busyCheck, discardSuperseded, isBusy, localDrives, makeWay, SUPERSEDED, supersededPatch, untilReleased } from "./busy-thread.js";
import { DEFAULT_ON_BUSY } from "../core/on-busy.js";
import { hasStepsLeft, pendingInterrupts } from "./interrupts.js";
import { memoryNamespaceFor } from "./memory-owner.js";
import { liveState, resultFromState } from "./result.js";

export interface InvokeOptions extends Driver {
  signal?: AbortSignal;
  onEvent?: (event: StoredEvent) => void;
  /**
   * Drains the run cooperatively (a server shutting down): it stops at the next superstep
   * boundary with its checkpoint saved, and is recorded as suspended, to be resumed later. An
   * abort of `signal` after a drain was requested also suspends the run instead of cancelling it.
   */
  control?: RunControl;
  /** LangChain callback handlers for the run's nodes and model calls (metrics, tracing). */
  callbacks?: BaseCallbackHandler[];
}

/** Who a run started at once is for: an API principal, an eval whose case it is. */
export interface RunOptions extends InvokeOptions {
  owner?: string;
  /** The eval this run is a case of: it is kept with the eval's id and never resumed elsewhere. */
  evalId?: string;
}

/** Which of several pending interrupts a decision answers (the first when none is named). */
export interface ResumeOptions extends InvokeOptions {
  interruptId?: string;
}

/** Who submitted a queued run, and how to recognise a replay of its submission. */
export interface EnqueueOptions {
  owner?: string;
  idempotencyKey?: string;
  requestHash?: string;
}

/**
 * A run's request as stored with it, read back leniently: older rows may lack fields, and the
 * stored copy carries the provider too (unknown keys are dropped, not refused, so the request
 * can be parsed again to start a queued run).
 */
const StoredRequest = z.object(RunRequest.shape).partial();

export { isAlive };

/** Who drives a run, recorded with it: this process, and the worker it is (scale-out), if one. */
export interface Driver {
  /** The worker process's id, stored on the run while it runs (Postgres deployments). */
  worker?: string;
}

/** What a run's lifecycle works with: the instance's store, graph, tools, models and config. */
export interface LifecycleParts {
  store: Store;
  graph: TroupeGraph;
  tools: ToolRegistry;
  models: ModelSet;
  config: TroupeConfig;
  maxWorkerSteps: number;
  /** The budget ledgers of the runs being driven, shared with the graph's nodes. */
  ledgers: Map<string, RunLedger>;
  /** The agents (with the tools each reaches), for checking a fork's edited plan as the planner's is. */
  agents: AgentRegistry;
  workspace: string;
}

/**
 * The write side of runs: starting, queueing, resuming and driving a run through the graph,
 * and recording what it came to. Reading runs back is `run-queries.ts`.
 */
export class RunLifecycle {
  readonly #parts: LifecycleParts;

  constructor(parts: LifecycleParts) {
    this.#parts = parts;
  }

  /** Starts a run and drives it until it finishes or waits for a person. */
  async run(input: RunRequestInput, options: RunOptions = {}): Promise<RunResult> {
    const request = this.#parseRequest(input);
    const { owner, evalId, ...invoke } = options;
    const threadId = request.threadId ?? `thread-${randomUUID()}`;
    if ((request.onBusy ?? DEFAULT_ON_BUSY) !== "reject" && isBusy(await this.#parts.store.runs.latestForThread(threadId), this.#parts.store.threads)) {
      return this.#runWhenFree({ ...request, threadId }, options);
    }
    const lease = await this.#hold(threadId, undefined, () => new ConflictError("thread_busy", `thread ${threadId} has a run that is running; resume it or use another thread`, {}));
    try {
      const record = await this.#createRecord(
        { ...request, threadId },
        {
          status: "running",
          pid: process.pid,
          host: hostname(),
          startedAt: Date.now(),
          ...(invoke.worker !== undefined ? { worker: invoke.worker } : {}),
          ...(owner !== undefined ? { owner } : {}),
          ...(evalId !== undefined ? { evalId } : {}),
        },
      );
      return await this.#begin(record, request, invoke, lease);
    } finally {
      await lease.release();
    }
  }

  /**
   * Forks a run (`fork.ts`): a new run on a new thread from one of its checkpoints, keeping the
   * results it does not run again, driven at once. The original run and thread are untouched.
   */
  async fork(runId: string, input: ForkRequest, options: RunOptions = {}): Promise<RunResult> {
    const { record, fork } = await this.#prepareFork(runId, input);
    const lease = await this.#hold(fork.threadId, undefined, () => new ConflictError("thread_busy", `thread ${fork.threadId} is held by another drive`, {}));
    try {
      await seedFork(this.#parts, fork);
      const created = await this.#parts.store.runs.create(this.#forkRecord(record, fork, { status: "running", pid: process.pid, host: hostname(), startedAt: Date.now(), owner: options.owner ?? record.owner, ...(options.worker !== undefined ? { worker: options.worker } : {}) }));
      const { owner: _owner, evalId: _evalId, ...invoke } = options;
      return await this.#drive(created, null, this.#concurrencyOf(created), false, invoke, lease);
    } finally {
      await lease.release();
    }
  }

  /** Forks a run and queues the fork, to be started later with `start` (the server's queue). */
  async enqueueFork(runId: string, input: ForkRequest, options: { owner?: string } = {}): Promise<RunRecord> {
    const { record, fork } = await this.#prepareFork(runId, input);
    // The new thread's state first: a worker may take the queued run the moment its record is written.
    await seedFork(this.#parts, fork);
    return this.#parts.store.runs.create(this.#forkRecord(record, fork, { status: "queued", pid: null, host: null, owner: options.owner ?? record.owner }));
  }

  async #prepareFork(runId: string, input: ForkRequest) {
    const record = await this.#parts.store.runs.get(runId);
    if (!record) throw new NotFoundError("unknown_run", `no run with id ${runId}`, { runId });
    const ids = { runId: `run-${randomUUID()}`, threadId: input.threadId ?? `thread-${randomUUID()}` };
    const deps = { models: this.#parts.models, tools: this.#parts.tools, agents: this.#parts.agents, workspace: this.#parts.workspace, stash: this.#parts.store.stash };
    return { record, fork: await prepareFork({ store: this.#parts.store, graph: this.#parts.graph, deps }, record, input, ids) };
  }

  /** A fork's record: the original's request on the new thread, and where it came from. */
  #forkRecord(original: RunRecord, fork: Awaited<ReturnType<typeof prepareFork>>, fields: Pick<NewRun, "status" | "pid" | "host"> & Partial<NewRun>): NewRun {
    const { onBusy: _onBusy, ...request } = original.request;
    return { id: fork.runId, threadId: fork.threadId, task: original.task, request: { ...request, threadId: fork.threadId }, forkedFrom: fork.origin, ...fields };
  }

  #concurrencyOf(record: RunRecord): number {
    const request = StoredRequest.safeParse(record.request);
    return (request.success ? request.data.concurrency : undefined) ?? LIMITS.subtaskConcurrency;
  }

  /**
   * A run on a busy thread (not --on-busy reject): queued behind the thread's run, which is asked
   * to make way as the strategy says, then started here once the store releases it. Cancelled
   * (by the signal) while it waits, it is recorded cancelled and never runs.
   */
  async #runWhenFree(request: RunRequest, options: RunOptions): Promise<RunResult> {
    const { owner, evalId: _evalId, ...invoke } = options;
    const record = await this.#createRecord(request, { status: "queued", pid: null, host: null, ...(owner !== undefined ? { owner } : {}) });
    if (record.waitsFor === null) return this.start(record.id, invoke);
    await makeWay(this.#parts.store, record, request.onBusy ?? DEFAULT_ON_BUSY);
    try {
      await untilReleased(this.#parts.store, record.id, options.signal);
    } catch (error) {
      if (!options.signal?.aborted) throw error;
      await this.#parts.store.runs.update(record.id, { status: "cancelled", stopReason: "cancelled", waitsFor: null, finishedAt: Date.now() }, { ifStatus: ["queued"] });
      throw new ConflictError("cancelled_waiting", `cancelled while waiting for run ${record.waitsFor} on thread ${record.threadId}; run ${record.id} did not run`, { runId: record.id });
    }
    return this.start(record.id, invoke);
  }

  /** Holds a thread for this drive, or refuses with `busy` when another drive holds it. */
  async #hold(threadId: string, latest: RunRecord | undefined, busy: () => Error): Promise<ThreadLease> {
    const lease = await this.#parts.store.threads.acquire(threadId, latest);
    if (!lease) throw busy();
    return lease;
  }

  /**
   * Records a run as queued, to be started later with `start` (the server's queue). The record
   * is written (and synced) before this returns, so an accepted run survives a crash.
   */
  async enqueue(input: RunRequestInput, options: EnqueueOptions = {}): Promise<RunRecord> {
    const request = this.#parseRequest(input);
    const record = await this.#createRecord(request, { status: "queued", pid: null, host: null, ...options });
    // On a busy thread it waits: what it does to the runs in its way is the request's choice.
    if (record.waitsFor !== null) await makeWay(this.#parts.store, record, request.onBusy ?? DEFAULT_ON_BUSY);
    return record;
  }

  /** Starts a queued run that has never run. */
  async start(runId: string, options: InvokeOptions = {}): Promise<RunResult> {
    const found = await this.#parts.store.runs.get(runId);
    if (!found) throw new NotFoundError("unknown_run", `no run with id ${runId}`, { runId });
    const lease = await this.#hold(found.threadId, found, () => new ConflictError("run_active", `run ${runId} is running in another process`, { runId }));
    try {
      // Read again under the hold: another process may have started it meanwhile.
      const record = (await this.#parts.store.runs.get(runId)) ?? found;
      if (record.status !== "queued" || record.startedAt !== null) {
        throw new ConflictError("run_started", `run ${runId} has already started (${record.status}); resume it instead`, { runId });
      }
      if (record.waitsFor !== null) throw new ConflictError("run_waiting", `run ${runId} waits for run ${record.waitsFor} on its thread to stop`, { runId, waitsFor: record.waitsFor });
      return await this.#startFresh(record, options, lease);
    } finally {
      await lease.release();
    }
  }

  /**
   * A request validated: its tools must exist (they narrow what the run's agents may use, never
   * widen their grants), and the config's budget is its default, limit by limit (the run keeps
   * it for its resumes).
   */
  #parseRequest(input: RunRequestInput): RunRequest {
    const parsed = RunRequest.safeParse(input);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new InputError("invalid_request", issue?.message ?? "invalid request", { path: issue?.path.join(".") });
    }
    const request = parsed.data;
    const unknown = (request.tools ?? []).filter((name) => !this.#parts.tools.has(name));
    if (unknown.length > 0) {
      throw new InputError("unknown_tool", `unknown tool${unknown.length > 1 ? "s" : ""}: ${unknown.join(", ")}; available: ${this.#parts.tools.names().join(", ")}`, { tools: unknown });
    }
    const budget: Budget = { ...this.#parts.config.budget, ...request.budget };
    if (Object.keys(budget).length > 0) request.budget = budget;
    // A webhook of the task's own is checked now (a secret to sign with, a host the rules allow); the config's default was checked at start.
    if (request.webhook) {
      try {
        checkWebhook(request.webhook.url, this.#parts.config.webhooks);
      } catch (error) {
        const code = (error as { code?: string }).code;
        throw new InputError(code === "webhook_secret_missing" ? code : "webhook_refused", `webhook: ${errorMessage(error)}`, { url: request.webhook.url });
      }
    } else if (this.#parts.config.webhooks?.default) {
      request.webhook = this.#parts.config.webhooks.default;
    }
    if (request.outputSchema) {
      const problem = schemaProblem(request.outputSchema);
      if (problem) throw new InputError("invalid_output_schema", `the output schema is not a valid JSON Schema: ${problem}`);
    }
    return request;
  }

  /**
   * Writes a run's record, refusing a thread whose latest run waits (for a person or in the
   * queue) or may still be running — checked in the write's transaction, after the runs written
   * before it in the same batch.
   */
  #createRecord(request: RunRequest, fields: Pick<NewRun, "status" | "pid" | "host"> & Partial<NewRun>): Promise<RunRecord> {
    const threadId = request.threadId ?? `thread-${randomUUID()}`;
    const threads = this.#parts.store.threads;
    const choice = this.#parts.models.choice.worker;
    return this.#parts.store.runs.create(
      {
        id: `run-${randomUUID()}`,
        threadId,
        task: request.task,
        request: { ...request, provider: `${choice.provider}:${choice.model}` },
        ...fields,
      },
      // A busy thread refuses the run or queues it behind the thread's latest (busy-thread.ts).
      { check: busyCheck(threadId, fields.status === "running" ? "reject" : request.onBusy, threads) },
    );
  }

  /** Runs a recorded run from its request, from the start. */
  async #startFresh(record: RunRecord, options: InvokeOptions, lease: ThreadLease): Promise<RunResult> {
    const stored = StoredRequest.safeParse(record.request);
    const request = RunRequest.parse({ ...(stored.success ? stored.data : {}), task: record.task });
    // A rollback starts from the thread's state before the runs it stopped: those are discarded first.
    if (request.onBusy === "rollback") await discardSuperseded(this.#parts, record);
    const startedAt = record.startedAt ?? Date.now();
    await this.#parts.store.runs.update(record.id, { status: "running", pid: process.pid, host: hostname(), startedAt, suspended: null, pendingDecision: null, worker: options.worker ?? null, cancelRequested: false });
    // A fork's thread already holds its first state (seeded by updateState): the graph goes on from there.
    if (record.forkedFrom !== null) return this.#drive({ ...record, status: "running", startedAt }, null, this.#concurrencyOf(record), false, options, lease);
    return this.#begin({ ...record, status: "running", startedAt }, request, options, lease);
  }

  #begin(record: RunRecord, request: RunRequest, options: InvokeOptions, lease: ThreadLease): Promise<RunResult> {
    const settings: RunSettings = {
      maxIterations: request.maxIterations,
      approvePlan: request.approvePlan,
      approveAnswer: request.approveAnswer,
      maxWorkerSteps: this.#parts.maxWorkerSteps,
      maxSubtasks: LIMITS.maxSubtasks,
      models: Object.fromEntries(MODEL_ROLES.map((role) => [role, choiceId(this.#parts.models.choice[role])])),
      mapConcurrency: request.mapConcurrency,
      promptBudget: request.promptBudget,
      allowedTools: request.tools ?? null,
      ...(request.reviewers > 1 ? { reviewers: request.reviewers } : {}),
      ...(this.#parts.config.decide?.threshold !== undefined ? { consensusThreshold: this.#parts.config.decide.threshold } : {}),
      historyBudget: request.historyBudget ?? this.#parts.config.memory?.historyBudget ?? CONVERSATION_LIMITS.historyBudget,
      // Long-term memory is the owner's (an API principal's, or the local user's); an eval case has its own.
      memoryNamespace: record.evalId !== null ? evalCaseNamespace(record.evalId, record.threadId) : memoryNamespaceFor(record.owner),
      ...(request.outputSchema ? { outputSchema: request.outputSchema } : {}),
    };
    const graphInput = { runId: record.id, task: request.task, context: request.context ?? null, settings, startedAt: Date.now() };
    return this.#drive(record, graphInput, request.concurrency, false, options, lease);
  }

  /**
   * Continues a thread's latest run: with a person's decision when it waits for one, or from its
   * last checkpoint when its process died or it was cancelled. Finished subtasks are not re-run.
   */
  async resume(threadId: string, decision: ResumeDecision | undefined, options: ResumeOptions = {}): Promise<RunResult> {
    const found = await this.#resumable(threadId);
    if (!found) throw new NotFoundError("unknown_thread", `no run found for thread ${threadId}`, { threadId });
    if (found.evalId !== null) {
      // Its files are in its case's workspace, not this instance's: resuming it here would work on the wrong folder.
      throw new ConflictError("eval_case", `run ${found.id} is a case of eval ${found.evalId}; an eval's cases are not resumed (run the eval again)`, { runId: found.id, evalId: found.evalId });
    }
    const lease = await this.#hold(threadId, found, () => new ConflictError("run_active", `run ${found.id} is still running in process ${found.pid}${found.worker ? ` (worker ${found.worker})` : ""}`, { runId: found.id }));
    try {
      // Read again under the hold: another process may have driven it meanwhile.
      const record = (await this.#resumable(threadId)) ?? found;
      return await this.#resumeHeld(record, threadId, decision, options, lease);
    } finally {
      await lease.release();
    }
  }

  /**
   * The run a resume of the thread continues: its latest run that has started — runs queued behind
   * it on a busy thread (never started) are not it.
   */
  async #resumable(threadId: string): Promise<RunRecord | undefined> {
    const latest = await this.#parts.store.runs.latestForThread(threadId);
    if (!latest || latest.status !== "queued" || latest.startedAt !== null) return latest;
    const runs = await this.#parts.store.runs.list({ threadId, limit: 50 });
    return runs.find((run) => !(run.status === "queued" && run.startedAt === null)) ?? latest;
  }

  async #resumeHeld(record: RunRecord, threadId: string, decision: ResumeDecision | undefined, options: ResumeOptions, lease: ThreadLease): Promise<RunResult> {
    if (record.evalId !== null) {
      // Its files are in its case's workspace, not this instance's: resuming it here would work on the wrong folder.
      throw new ConflictError("eval_case", `run ${record.id} is a case of eval ${record.evalId}; an eval's cases are not resumed (run the eval again)`, { runId: record.id, evalId: record.evalId });
    }
    const config = { configurable: { thread_id: threadId } };
    const snapshot = await this.#parts.graph.getState(config);
    if ((snapshot.values as Partial<State>).runId !== record.id) {
      // The thread's checkpoint is not this run's: it never reached its first checkpoint.
      if (record.status !== "queued" && record.status !== "running" && record.suspended === null) {
        throw new ConflictError("run_finished", `the run on thread ${threadId} has already finished (${record.stopReason ?? record.status})`, { runId: record.id });
      }
      if (decision && decision.decision !== "continue") {
        throw new InputError("not_waiting", `the run on thread ${threadId} is not waiting for a decision; resume it without one`);
      }
      return this.#startFresh(record, options, lease);
    }
    const interrupts = pendingInterrupts(snapshot);
    let input: Command | null;
    if (interrupts.length > 0) {
      const chosen = options.interruptId === undefined ? interrupts[0] : interrupts.find((candidate) => candidate.id === options.interruptId);
      if (!chosen) {
        throw new InputError("unknown_interrupt", `the run on thread ${threadId} is not waiting on interrupt ${options.interruptId}; it waits on ${interrupts.map((candidate) => candidate.id).join(", ")}`, {
          interruptIds: interrupts.map((candidate) => candidate.id),
        });
      }
      const first = chosen;
      const kind = (first.value as InterruptInfo | undefined)?.kind;
      if (!decision || decision.decision === "continue") {
        throw new InputError("decision_required", `the run on thread ${threadId} is waiting for ${kind ?? "a decision"}; pass --approve, --reject or --answer`);
      }
      if (kind === "question" && decision.decision === "approve") {
        throw new InputError("answer_required", "the run is waiting for an answer to a question; pass --answer TEXT (or --reject)");
      }
      if (kind === "tool-approval" && decision.decision !== "approve" && decision.decision !== "reject") {
        throw new InputError("approval_required", "the run is waiting for a tool call to be approved; pass --approve or --reject [--feedback TEXT]");
      }
      // Several subtasks may wait at once (parallel tool approvals): the decision answers the
      // one named (the first by default), by its id; the others are asked again when the run
      // pauses next.
      const value = ResumeDecision.parse(decision);
      input = new Command({ resume: first.id ? { [first.id]: value } : value });
    } else if (hasStepsLeft(snapshot)) {
      if (decision && decision.decision !== "continue") {
        throw new InputError("not_waiting", `the run on thread ${threadId} is not waiting for a decision; resume it without one`);
      }
      input = null;
    } else {
      const state = snapshot.values as State;
      if ((record.status === "running" || record.status === "queued") && state.finished && state.stopReason) {
        // Its process died after the run's last checkpoint and before its record said so: the run is done; say so now.
        return this.#settleFinished(record, state, options);
      }
      throw new ConflictError("run_finished", `the run on thread ${threadId} has already ${record.status === "failed" ? "failed" : "finished"} (${record.stopReason ?? record.status})`, { runId: record.id });
    }
    await this.#parts.store.runs.update(record.id, {
      status: "running",
      pid: process.pid,
      host: hostname(),
      interrupt: null,
      suspended: null,
      pendingDecision: null,
      startedAt: record.startedAt ?? Date.now(),
      worker: options.worker ?? null,
      cancelRequested: false,
    });
    const request = StoredRequest.safeParse(record.request);
    const concurrency = (request.success ? request.data.concurrency : undefined) ?? LIMITS.subtaskConcurrency;
    return this.#drive(record, input, concurrency, true, options, lease);
  }

  /** Records a run its checkpoint shows finished (its process died before it could), and returns its result. */
  async #settleFinished(record: RunRecord, state: State, options: InvokeOptions): Promise<RunResult> {
    const result = resultFromState(record, state, record.activeMs);
    result.status = runStatusOf(state.stopReason as NonNullable<State["stopReason"]>, workDone(state));
    if (state.failure) result.error = state.failure;
    await this.#parts.store.runs.update(record.id, finishedPatch({ status: result.status, stopReason: result.stopReason, answer: result.answer, error: result.error ?? null, metrics: result.metrics }));
    options.onEvent?.(await this.#parts.store.events.append(record.id, { type: "run-end", status: result.status, stopReason: result.stopReason, metrics: result.metrics }));
    return result;
  }

  async #drive(record: RunRecord, input: unknown, concurrency: number, resumed: boolean, options: InvokeOptions, lease: ThreadLease): Promise<RunResult> {
    const started = performance.now();
    // Events are numbered and stored in the order emitted (a turn's share one write), and handed
    // to `onEvent` in that order once stored; the run's end waits for the last of them.
    let delivered: Promise<void> = Promise.resolve();
    let eventFailure: unknown;
    // Verdicts and subtask durations feed the figures kept across runs (reflection statistics, plan estimates).
    const stats = new RunStatsRecorder(this.#parts.store, record.id, async () => ((await this.#parts.graph.getState({ configurable: { thread_id: record.threadId } })).values as Partial<State>).reviews?.at(-1));
    const emit = (event: RunEvent): void => {
      stats.event(event);
      const stored = this.#parts.store.events.append(record.id, event);
      delivered = delivered.then(
        () =>
          stored.then(
            (value) => options.onEvent?.(value),
            (error: unknown) => {
              eventFailure ??= error;
            },
          ),
        () => {},
      );
    };
    // A lost hold (the database session holding the thread ended) stops the run where it is: another process may take it now.
    const lost = lease.lost;
    // Another run on the thread may ask this one to make way (busy-thread.ts): at a superstep boundary, or at once.
    const control = options.control ?? new RunControl();
    const makeWay = new AbortController();
    const watch = this.#watchDrive(record.id, control, makeWay);
    const signal = AbortSignal.any([makeWay.signal, ...(options.signal ? [options.signal] : []), ...(lost ? [lost] : [])]);
    emit({ type: "run-start", runId: record.id, threadId: record.threadId, task: record.task, resumed });
    if (resumed) {
      // Calls that began and never finished (the process died in them): each is settled by its call id when the step runs again.
      const inFlight = await this.#parts.store.audit.unfinished({ runId: record.id });
      if (inFlight.length > 0) emit({ type: "calls-in-flight", calls: inFlight.map((row) => ({ auditId: row.id, tool: row.tool, ...(row.subtaskId ? { subtaskId: row.subtaskId } : {}) })) });
    }
    const request = StoredRequest.safeParse(record.request);
    const maxIterations = (request.success ? request.data.maxIterations : undefined) ?? LIMITS.maxIterationsDefault;
    const config = {
      // A run never resumed has made no tool call before: the registry need not look its call ids up.
      configurable: { thread_id: record.threadId, troupe_first_pass: !resumed },
      streamMode: ["custom", "values"] as Array<"custom" | "values">,
      durability: "sync" as const,
      recursionLimit: recursionLimitFor(LIMITS.maxSubtasks, maxIterations),
      maxConcurrency: concurrency,
      signal,
      control,
      ...(options.callbacks ? { callbacks: options.callbacks } : {}),
    };
    let failure: string | undefined;
    let cancelled = false;
    let suspended = false;
    let superseded: ReturnType<typeof supersededPatch>;
    let last: State | undefined;
    const ledger = await this.#openLedger(record, resumed, request.success ? request.data.budget : undefined);
    // What the run's agents reach includes the runtime grants given since the last tool call.
    await this.#parts.tools.refreshRuntimeGrants();
    try {
      const stream = await this.#parts.graph.stream(input as never, config);
      for await (const [mode, chunk] of stream as AsyncIterable<[string, unknown]>) {
        if (mode === "custom") emit(chunk as RunEvent);
        else last = chunk as State;
      }
    } catch (error) {
      if (superseded === undefined) superseded = supersededPatch(control.drainReason ?? (makeWay.signal.aborted ? String(makeWay.signal.reason) : undefined));
      if (superseded) cancelled = true;
      else if (isGraphDrained(error) || (signal?.aborted && (options.control?.drainRequested || lost?.aborted))) suspended = true;
      else if (signal?.aborted) cancelled = true;
      else if (error instanceof GraphRecursionError) failure = `the run exceeded its step limit (${config.recursionLimit} supersteps)`;
      else failure = errorMessage(error);
    } finally {
      ledger.dispose();
      this.#parts.ledgers.delete(record.id);
      watch();
    }
    // A run that reached finalize is fully described by its last values; otherwise ask the
    // checkpoint, which also knows about a pending interrupt.
    let state: State;
    let interrupt: InterruptInfo | undefined;
    if (last?.finished && last.runId === record.id && failure === undefined && !cancelled && !suspended) {
      state = last;
    } else {
      const snapshot = await this.#parts.graph.getState({ configurable: { thread_id: record.threadId } });
      state = snapshot.values as State;
      interrupt = pendingInterrupts(snapshot)[0]?.value as InterruptInfo | undefined;
    }
    const activeMs = record.activeMs + Math.round(performance.now() - started);
    // Paused or stopped inside the planner's node (a streamed plan): the plan is in its events.
    if (!state.finished && state.runId === record.id) {
      await delivered;
      state = liveState(state, await this.#parts.store.events.list(record.id, 0, 100_000));
    }
    const result = resultFromState(record, state, activeMs);
    if (suspended && !state.finished) {
      // Stopped by a drain (server shutdown): not waiting for a person, resumed when a server starts.
      result.status = "interrupted";
      result.stopReason = null;
    } else if (cancelled) {
      result.status = "cancelled";
      result.stopReason = "cancelled";
      if (superseded) result.error = superseded.error;
    } else if (failure !== undefined) {
      result.status = "failed";
      result.stopReason = "failed";
      result.error = failure;
    } else if (interrupt && !state.finished) {
      result.status = "interrupted";
      result.stopReason = null;
      result.interrupt = interrupt;
      emit({ type: "approval-request", interrupt });
    } else if (state.finished && state.stopReason) {
      result.status = runStatusOf(state.stopReason, workDone(state));
      if (state.failure) result.error = state.failure;
    } else {
      result.status = "failed";
      result.stopReason = "failed";
      result.error = "the run stopped before it finished";
    }
    if (lost?.aborted) {
      // Another process may hold the thread now: it records the run, not this one.
      await delivered;
      throw lost.reason instanceof Error ? lost.reason : new Error("the hold on the thread was lost");
    }
    await this.#parts.store.runs.update(record.id, {
      status: result.status,
      stopReason: result.stopReason,
      answer: result.answer,
      error: result.error ?? null,
      metrics: result.metrics,
      interrupt: result.interrupt ?? null,
      activeMs,
      pid: null,
      worker: null,
      finishedAt: result.status === "interrupted" ? null : Date.now(),
      suspended: suspended && result.status === "interrupted" && !result.interrupt ? "shutdown" : null,
      ...(superseded ? { supersededBy: superseded.supersededBy } : {}),
    });
    emit({ type: "run-end", status: result.status, stopReason: result.stopReason, metrics: result.metrics });
    await delivered;
    await stats.settled();
    if (eventFailure !== undefined) process.emitWarning(`troupe: some events of run ${record.id} could not be stored: ${errorMessage(eventFailure)}`);
    return result;
  }

  /**
   * Makes a drive reachable by runs that need its thread (--on-busy interrupt, rollback): through
   * this process's registry, a control message from another process (Postgres), or — another
   * process on SQLite — the flag on its record, read once a second. Returns the undo.
   */
  #watchDrive(runId: string, control: RunControl, abort: AbortController): () => void {
    localDrives.set(runId, { drain: (reason) => control.requestDrain(reason), abort: (reason) => abort.abort(reason) });
    const store = this.#parts.store;
    RunLifecycle.#listen(store);
    let timer: NodeJS.Timeout | undefined;
    if (!store.control) {
      timer = setInterval(() => {
        void store.runs.get(runId).then(
          (record) => {
            if (!record?.supersededBy || control.drainRequested || abort.signal.aborted) return;
            const strategy = (record.request as { onBusy?: string } | undefined)?.onBusy;
            void store.runs.get(record.supersededBy).then((by) => {
              const how = `${SUPERSEDED}:${record.supersededBy}:${(by?.request as { onBusy?: string } | undefined)?.onBusy ?? strategy ?? "interrupt"}`;
              if (how.endsWith(":rollback")) abort.abort(how);
              else control.requestDrain(how);
            });
          },
          () => {},
        );
      }, 1_000);
      timer.unref();
    }
    return () => {
      localDrives.delete(runId);
      if (timer) clearInterval(timer);
    };
  }

  /** The stores whose control channel this process listens on for supersede messages (once each). */
  static readonly #listening = new WeakSet<Store>();

  static #listen(store: Store): void {
    if (!store.control || RunLifecycle.#listening.has(store)) return;
    RunLifecycle.#listening.add(store);
    store.control.subscribe((message) => {
      if (message.action !== "supersede" || !message.runId || !message.by) return;
      const how = `${SUPERSEDED}:${message.by}:${message.mode === "cancel" ? "rollback" : "interrupt"}`;
      const drive = localDrives.get(message.runId);
      if (message.mode === "cancel") drive?.abort(how);
      else drive?.drain(how);
    });
  }

  /** The budget ledger of a run's stretch, carrying on from what a resumed run had used. */
  async #openLedger(record: RunRecord, resumed: boolean, budget: Budget | undefined): Promise<RunLedger> {
    let used = { llmCalls: 0, promptTokens: 0, completionTokens: 0, costUsd: 0, activeMs: record.activeMs };
    if (resumed) {
      const values = (await this.#parts.graph.getState({ configurable: { thread_id: record.threadId } })).values as Partial<State>;
      if (values.runId === record.id && values.metrics) used = { ...values.metrics, activeMs: record.activeMs };
    }
    const ledger = new RunLedger(budget ?? {}, used);
    this.#parts.ledgers.set(record.id, ledger);
    return ledger;
  }
}
