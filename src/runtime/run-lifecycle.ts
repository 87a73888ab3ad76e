import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { Command, type LangGraphRunnableConfig, RunControl, type StateSnapshot } from "@langchain/langgraph";
import { z } from "zod";
import { RunLedger } from "../agents/run-ledger.js";
import type { TroupeConfig } from "../config/config-file.js";
import type { Budget } from "../core/budget.js";
import { ConflictError, InputError, NotFoundError } from "../core/errors.js";
import { elicitationDecision } from "../core/elicitation-answer.js";
import { DEFAULT_REVIEW_MODE } from "../core/review-mode.js";
import type { RunEvent, StoredEvent } from "../core/events.js";
import { CONVERSATION_LIMITS } from "../core/conversation.js";
import { evalCaseNamespace } from "../core/memory.js";
import { LIMITS } from "../core/limits.js";
import { assertToolsKnown } from "../core/plan-check.js";
import { type InterruptInfo, ResumeDecision, type RunRequestInput, type RunResult, RunRequest, runStatusOf } from "../core/run.js";
import { threadKey, threadNameOfRun } from "../core/thread-key.js";
import type { TroupeGraph } from "../graph/build-graph.js";
import { EVENTS_KEY, LEDGER_KEY } from "../graph/deps.js";
import { blankState, type RunSettings, type State } from "../graph/state.js";
import { recursionLimitFor, workDone } from "../graph/trace.js";
import { MODEL_ROLES } from "../providers/provider.js";
import { choiceId, type ModelSet } from "../providers/registry.js";
import { isAlive, type RunRecord, type Store, type ThreadLease } from "../store/index.js";
import { finishedPatch, type NewRun } from "../store/runs/contract.js";
import { checkOutputSchema } from "../tools/json-schema.js";
import type { ToolRegistry } from "../tools/registry.js";
import type { AgentRegistry } from "../agents/define-agent.js";
import { type ForkRequest, prepareFork, seedFork } from "./fork.js";
import { checkRunRequest } from "./request-check.js";
import { RunStatsRecorder } from "./run-stats.js";
import { busyCheck, discardSuperseded, isBusy, makeWay, untilReleased, watchDrive } from "./busy-thread.js";
import { drivePatch, driveResult, endedCleanly, type StreamEnd, streamEndOf } from "./drive-outcome.js";
import { refuseEvalCase } from "./eval-case.js";
import { RunEventLog } from "./run-events.js";
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
  /**
   * Called as the drive writes where the run ends or rests, in the same turn of the event loop:
   * on SQLite a reader sees that status from then on, while the drive still waits for the write's
   * sync and tells its `run-end` (the server stops counting it as driven here from then).
   */
  onEnding?: (result: RunResult) => void;
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

/**
 * A run's stored request, parsed once per drive: what it was stored with, with today's defaults
 * for what an older row lacks (a row that no longer parses gets the defaults alone).
 */
function requestOf(record: RunRecord): RunRequest {
  const stored = StoredRequest.safeParse(record.request);
  const request = RunRequest.safeParse({ ...(stored.success ? stored.data : {}), task: record.task });
  return request.success ? request.data : RunRequest.parse({ task: record.task });
}

/** One stretch of a run through the graph: a start, a fork's start or a resume. */
interface Drive {
  record: RunRecord;
  /** The run's request (parsed once, by `requestOf` or when the run was submitted). */
  request: RunRequest;
  /** The graph's input: a new run's first state, a resume's Command, or null to go on from the checkpoint. */
  input: unknown;
  resumed: boolean;
  /** A resume's checkpoint, read once before the drive: what the run had used so far, and its last verdict. */
  checkpoint?: Partial<State>;
}

/** The LangGraph config a drive streams the graph with. */
type DriveConfig = LangGraphRunnableConfig & { streamMode: Array<"custom" | "values">; durability: "sync"; recursionLimit: number; control: RunControl };

/** What stops a drive early, and the undo of what makes it reachable. */
interface DriveSignals {
  signal: AbortSignal;
  control: RunControl;
  /** Aborted when another run on the thread asks this one to make way at once (rollback). */
  makeWay: AbortController;
  /** Aborted when the hold on the thread is lost. */
  lost: AbortSignal | undefined;
  unwatch: () => void;
}

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
    // The thread's name is the owner's; the run is kept under its key (core/thread-key.ts).
    const name = request.threadId ?? `thread-${randomUUID()}`;
    const threadId = threadKey(owner, name);
    if ((request.onBusy ?? DEFAULT_ON_BUSY) !== "reject" && isBusy(await this.#parts.store.runs.latestForThread(threadId), this.#parts.store.threads)) {
      return this.#runWhenFree({ ...request, threadId: name }, options);
    }
    const lease = await this.#hold(threadId, undefined, () => new ConflictError("thread_busy", `thread ${name} has a run that is running; resume it or use another thread`, {}));
    try {
      const record = await this.#createRecord(
        { ...request, threadId: name },
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
    const { record, fork } = await this.#prepareFork(runId, input, options.owner);
    const lease = await this.#hold(fork.threadId, undefined, () => new ConflictError("thread_busy", `thread ${fork.threadName} is held by another drive`, {}));
    try {
      await seedFork(this.#parts, fork);
      const created = await this.#parts.store.runs.create(this.#forkRecord(record, fork, { status: "running", pid: process.pid, host: hostname(), startedAt: Date.now(), owner: options.owner ?? record.owner, ...(options.worker !== undefined ? { worker: options.worker } : {}) }));
      const { owner: _owner, evalId: _evalId, ...invoke } = options;
      return await this.#drive({ record: created, request: requestOf(created), input: null, resumed: false }, invoke, lease);
    } finally {
      await lease.release();
    }
  }

  /** Forks a run and queues the fork, to be started later with `start` (the server's queue). */
  async enqueueFork(runId: string, input: ForkRequest, options: { owner?: string } = {}): Promise<RunRecord> {
    const { record, fork } = await this.#prepareFork(runId, input, options.owner);
    // The new thread's state first: a worker may take the queued run the moment its record is written.
    await seedFork(this.#parts, fork);
    return this.#parts.store.runs.create(this.#forkRecord(record, fork, { status: "queued", pid: null, host: null, owner: options.owner ?? record.owner }));
  }

  async #prepareFork(runId: string, input: ForkRequest, owner: string | undefined) {
    const record = await this.#parts.store.runs.get(runId);
    if (!record) throw new NotFoundError("unknown_run", `no run with id ${runId}`, { runId });
    // The fork's thread is named by its owner (the original's unless another is given), kept under that owner's key.
    const threadName = input.threadId ?? `thread-${randomUUID()}`;
    const ids = { runId: `run-${randomUUID()}`, threadId: threadKey(owner ?? record.owner, threadName), threadName };
    const deps = { models: this.#parts.models, tools: this.#parts.tools, agents: this.#parts.agents, workspace: this.#parts.workspace, stash: this.#parts.store.stash };
    return { record, fork: await prepareFork({ store: this.#parts.store, graph: this.#parts.graph, deps }, record, input, ids) };
  }

  /** A fork's record: the original's request on the new thread, and where it came from. */
  #forkRecord(original: RunRecord, fork: Awaited<ReturnType<typeof prepareFork>>, fields: Pick<NewRun, "status" | "pid" | "host"> & Partial<NewRun>): NewRun {
    const { onBusy: _onBusy, ...request } = original.request;
    // The stored request names the thread as its owner does (it is parsed again to start the run).
    return { id: fork.runId, threadId: fork.threadId, task: original.task, request: { ...request, threadId: fork.threadName }, forkedFrom: fork.origin, ...fields };
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
  /** Checks a request as a run's start would (its fields, tools, webhook, output schema), writing nothing. */
  checkRequest(input: RunRequestInput): void {
    this.#parseRequest(input);
  }

  #parseRequest(input: RunRequestInput): RunRequest {
    // The output schema first, by the check every path shares (a pattern RE2 cannot run is refused alike on each).
    if (input.outputSchema !== undefined) checkOutputSchema(input.outputSchema);
    const parsed = RunRequest.safeParse(input);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new InputError("invalid_request", issue?.message ?? "invalid request", { path: issue?.path.join(".") });
    }
    const request = parsed.data;
    assertToolsKnown(request.tools, this.#parts.tools);
    const budget: Budget = { ...this.#parts.config.budget, ...request.budget };
    if (Object.keys(budget).length > 0) request.budget = budget;
    // A webhook of the task's own (a secret to sign with, a host the rules allow) and an output schema are checked now; the config's default webhook was checked at start.
    checkRunRequest(request, this.#parts);
    if (!request.webhook && this.#parts.config.webhooks?.default) request.webhook = this.#parts.config.webhooks.default;
    return request;
  }

  /**
   * Writes a run's record, refusing a thread whose latest run waits (for a person or in the
   * queue) or may still be running — checked in the write's transaction, after the runs written
   * before it in the same batch.
   */
  #createRecord(request: RunRequest, fields: Pick<NewRun, "status" | "pid" | "host"> & Partial<NewRun>): Promise<RunRecord> {
    // The request keeps the owner's name for the thread; the record its key (core/thread-key.ts).
    const name = request.threadId ?? `thread-${randomUUID()}`;
    const threadId = threadKey(fields.owner, name);
    const threads = this.#parts.store.threads;
    const choice = this.#parts.models.choice.worker;
    return this.#parts.store.runs.create(
      {
        id: `run-${randomUUID()}`,
        threadId,
        task: request.task,
        request: { ...request, threadId: name, provider: `${choice.provider}:${choice.model}` },
        ...fields,
      },
      // A busy thread refuses the run or queues it behind the thread's latest (busy-thread.ts); a
      // thread named here is new (a random name), with no run to look up.
      request.threadId === undefined ? {} : { check: busyCheck(name, fields.status === "running" ? "reject" : request.onBusy, threads) },
    );
  }

  /** Runs a recorded run from its request, from the start. */
  async #startFresh(record: RunRecord, options: InvokeOptions, lease: ThreadLease): Promise<RunResult> {
    const request = requestOf(record);
    // A rollback starts from the thread's state before the runs it stopped: those are discarded first.
    if (request.onBusy === "rollback") await discardSuperseded(this.#parts, record);
    const startedAt = record.startedAt ?? Date.now();
    await this.#parts.store.runs.update(record.id, { status: "running", pid: process.pid, host: hostname(), startedAt, suspended: null, pendingDecision: null, worker: options.worker ?? null, cancelRequested: false });
    // A fork's thread already holds its first state (seeded by updateState): the graph goes on from there.
    if (record.forkedFrom !== null) return this.#drive({ record: { ...record, status: "running", startedAt }, request, input: null, resumed: false }, options, lease);
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
      review: request.review ?? this.#parts.config.review ?? DEFAULT_REVIEW_MODE,
      ...(this.#parts.config.decide?.threshold !== undefined ? { consensusThreshold: this.#parts.config.decide.threshold } : {}),
      historyBudget: request.historyBudget ?? this.#parts.config.memory?.historyBudget ?? CONVERSATION_LIMITS.historyBudget,
      // Long-term memory is the owner's (an API principal's, or the local user's); an eval case has its own.
      memoryNamespace: record.evalId !== null ? evalCaseNamespace(record.evalId, record.threadId) : memoryNamespaceFor(record.owner),
      ...(request.outputSchema ? { outputSchema: request.outputSchema } : {}),
    };
    const graphInput = { runId: record.id, task: request.task, context: request.context ?? null, settings, startedAt: Date.now() };
    return this.#drive({ record, request, input: graphInput, resumed: false }, options, lease);
  }

  /**
   * Continues a thread's latest run: with a person's decision when it waits for one, or from its
   * last checkpoint when its process died or it was cancelled. Finished subtasks are not re-run.
   */
  async resume(threadId: string, decision: ResumeDecision | undefined, options: ResumeOptions = {}): Promise<RunResult> {
    const found = await this.#resumable(threadId);
    if (!found) throw new NotFoundError("unknown_thread", `no run found for thread ${threadId}`, { threadId });
    refuseEvalCase(found, "resume");
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

  /**
   * A resume under the thread's hold: the checkpoint read once, the person's decision checked
   * against what the run waits for, then the drive from the checkpoint.
   */
  async #resumeHeld(record: RunRecord, threadId: string, decision: ResumeDecision | undefined, options: ResumeOptions, lease: ThreadLease): Promise<RunResult> {
    refuseEvalCase(record, "resume");
    const snapshot = await this.#parts.graph.getState({ configurable: { thread_id: threadId } });
    const checkpoint = snapshot.values as Partial<State>;
    if (checkpoint.runId !== record.id) {
      // The thread's checkpoint is not this run's: it never reached its first checkpoint.
      if (record.status !== "queued" && record.status !== "running" && record.suspended === null) {
        throw new ConflictError("run_finished", `the run on thread ${threadId} has already finished (${record.stopReason ?? record.status})`, { runId: record.id });
      }
      if (decision && decision.decision !== "continue") {
        throw new InputError("not_waiting", `the run on thread ${threadId} is not waiting for a decision; resume it without one`);
      }
      return this.#startFresh(record, options, lease);
    }
    const input = this.#resumeInput(snapshot, record, threadId, decision, options.interruptId);
    // Its process died after the run's last checkpoint and before its record said so: the run is done; say so now.
    if (input === "finished") return this.#settleFinished(record, checkpoint as State, options);
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
    return this.#drive({ record, request: requestOf(record), input, resumed: true, checkpoint }, options, lease);
  }

  /**
   * What a resume hands the graph: the decision for the interrupt it answers (the first pending
   * one unless `interruptId` names another), null to go on from the checkpoint, or `finished` for
   * a run whose checkpoint shows it ended. Refuses a decision the run does not wait for, and no
   * decision when it waits for one.
   */
  #resumeInput(snapshot: StateSnapshot, record: RunRecord, threadId: string, decision: ResumeDecision | undefined, interruptId: string | undefined): Command | null | "finished" {
    const interrupts = pendingInterrupts(snapshot);
    if (interrupts.length > 0) {
      const chosen = interruptId === undefined ? interrupts[0] : interrupts.find((candidate) => candidate.id === interruptId);
      if (!chosen) {
        throw new InputError("unknown_interrupt", `the run on thread ${threadId} is not waiting on interrupt ${interruptId}; it waits on ${interrupts.map((candidate) => candidate.id).join(", ")}`, {
          interruptIds: interrupts.map((candidate) => candidate.id),
        });
      }
      const kind = (chosen.value as InterruptInfo | undefined)?.kind;
      if (!decision || decision.decision === "continue") {
        const how = kind === "mcp-elicitation" ? "pass --answer '{…}' (the server's form) or --reject" : "pass --approve, --reject or --answer";
        throw new InputError("decision_required", `the run on thread ${threadId} is waiting for ${kind ?? "a decision"}; ${how}`);
      }
      if (kind === "mcp-elicitation") {
        // A tool server's question: the answer is checked against its form here, before the run goes on.
        const value = elicitationDecision((chosen.value as InterruptInfo).payload, decision);
        return new Command({ resume: chosen.id ? { [chosen.id]: value } : value });
      }
      if (decision.decision === "elicitation") {
        throw new InputError("decision_invalid", `the run on thread ${threadId} is waiting for ${kind ?? "a decision"}, not for an answer to a tool server's question`);
      }
      if (kind === "question" && decision.decision === "approve") {
        throw new InputError("answer_required", "the run is waiting for an answer to a question; pass --answer TEXT (or --reject)");
      }
      if (kind === "tool-approval" && decision.decision !== "approve" && decision.decision !== "reject") {
        throw new InputError("decision_invalid", "the run is waiting for a tool call to be approved; pass --approve or --reject [--feedback TEXT]");
      }
      // Several subtasks may wait at once (parallel tool approvals): the decision answers the
      // one named (the first by default), by its id; the others are asked again when the run
      // pauses next.
      const value = ResumeDecision.parse(decision);
      return new Command({ resume: chosen.id ? { [chosen.id]: value } : value });
    }
    if (hasStepsLeft(snapshot)) {
      if (decision && decision.decision !== "continue") {
        throw new InputError("not_waiting", `the run on thread ${threadId} is not waiting for a decision; resume it without one`);
      }
      return null;
    }
    const state = snapshot.values as State;
    if ((record.status === "running" || record.status === "queued") && state.finished && state.stopReason) return "finished";
    throw new ConflictError("run_finished", `the run on thread ${threadId} has already ${record.status === "failed" ? "failed" : "finished"} (${record.stopReason ?? record.status})`, { runId: record.id });
  }

  /** Records a run its checkpoint shows finished (its process died before it could), and returns its result. */
  async #settleFinished(record: RunRecord, state: State, options: InvokeOptions): Promise<RunResult> {
    const result = resultFromState(record, state, record.activeMs);
    result.status = runStatusOf(state.stopReason as NonNullable<State["stopReason"]>, workDone(state));
    if (state.failure) result.error = state.failure;
    const recorded = this.#parts.store.runs.update(record.id, finishedPatch({ status: result.status, stopReason: result.stopReason, answer: result.answer, answerFormat: result.answer !== null ? (result.answerFormat ?? null) : null, error: result.error ?? null, metrics: result.metrics }));
    options.onEnding?.(result);
    await recorded;
    options.onEvent?.(await this.#parts.store.events.append(record.id, { type: "run-end", status: result.status, stopReason: result.stopReason, metrics: result.metrics }));
    return result;
  }

  /**
   * Drives a run through the graph for one stretch, then records what it came to: its events
   * opened, its signals armed, its budget ledger opened (carrying on from what a resumed run had
   * used), the graph streamed, the state it stopped in read, its result settled and stored.
   */
  async #drive(drive: Drive, options: InvokeOptions, lease: ThreadLease): Promise<RunResult> {
    const { record } = drive;
    const started = performance.now();
    // Verdicts and subtask durations feed the figures kept across runs (reflection statistics, plan estimates).
    const stats = new RunStatsRecorder(this.#parts.store, record.id, async () => (drive.checkpoint ?? (await this.#checkpointOf(record))).reviews?.at(-1));
    const events = new RunEventLog(this.#parts.store, record.id, options.onEvent, [(event) => stats.event(event)]);
    const signals = this.#armSignals(record.id, options, lease);
    // Watchers (SSE, A2A, the CLI) see the thread as its owner names it.
    events.emit({ type: "run-start", runId: record.id, threadId: threadNameOfRun(record), task: record.task, resumed: drive.resumed });
    if (drive.resumed) await this.#announceInFlight(record, events);
    const ledger = this.#openLedger(drive);
    // What the run's agents reach includes the runtime grants given since the last tool call.
    await this.#parts.tools.refreshRuntimeGrants();
    const config = this.#graphConfig(drive, signals, ledger, options, events);
    let end: StreamEnd;
    try {
      end = await this.#stream(drive.input, config, events, signals, options);
    } finally {
      ledger.dispose();
      signals.unwatch();
    }
    const { state, interrupt } = await this.#stateAfter(record, end, events);
    const activeMs = record.activeMs + Math.round(performance.now() - started);
    const result = driveResult(record, state, interrupt, end, activeMs);
    if (result.interrupt) events.emit({ type: "approval-request", interrupt: result.interrupt });
    if (signals.lost?.aborted) {
      // Another process may hold the thread now: it records the run, not this one.
      await events.delivered();
      throw signals.lost.reason instanceof Error ? signals.lost.reason : new Error("the hold on the thread was lost");
    }
    const recorded = this.#parts.store.runs.update(record.id, drivePatch(result, end, activeMs));
    options.onEnding?.(result);
    await recorded;
    events.emit({ type: "run-end", status: result.status, stopReason: result.stopReason, metrics: result.metrics });
    await events.delivered();
    await stats.settled();
    events.warnIfLost();
    return result;
  }

  /** The thread's latest checkpoint values. */
  async #checkpointOf(record: RunRecord): Promise<Partial<State>> {
    return (await this.#parts.graph.getState({ configurable: { thread_id: record.threadId } })).values as Partial<State>;
  }

  /**
   * What stops a drive: the caller's signal, a lost hold on the thread (the database session
   * holding it ended: another process may take it now), and another run on the thread asking this
   * one to make way (busy-thread.ts) — at a superstep boundary (the control), or at once.
   */
  #armSignals(runId: string, options: InvokeOptions, lease: ThreadLease): DriveSignals {
    const lost = lease.lost;
    const control = options.control ?? new RunControl();
    const makeWay = new AbortController();
    const unwatch = watchDrive(this.#parts.store, runId, control, makeWay);
    const signal = AbortSignal.any([makeWay.signal, ...(options.signal ? [options.signal] : []), ...(lost ? [lost] : [])]);
    return { signal, control, makeWay, lost, unwatch };
  }

  /** A resumed run's calls that began and never finished (the process died in them): each is settled by its call id when its step runs again. */
  async #announceInFlight(record: RunRecord, events: RunEventLog): Promise<void> {
    const inFlight = await this.#parts.store.audit.unfinished({ runId: record.id });
    if (inFlight.length > 0) events.emit({ type: "calls-in-flight", calls: inFlight.map((row) => ({ auditId: row.id, tool: row.tool, ...(row.subtaskId ? { subtaskId: row.subtaskId } : {}) })) });
  }

  /** The budget ledger of a drive, carrying on from what a resumed run had used (its checkpoint's metrics). */
  #openLedger(drive: Drive): RunLedger {
    const { record, checkpoint } = drive;
    const metrics = checkpoint?.runId === record.id ? checkpoint.metrics : undefined;
    const used = metrics ? { ...metrics, activeMs: record.activeMs } : { llmCalls: 0, promptTokens: 0, completionTokens: 0, costUsd: 0, activeMs: record.activeMs };
    return new RunLedger(drive.request.budget ?? {}, used);
  }

  /**
   * The LangGraph config of a drive. The run's budget ledger travels in `configurable`, so every
   * node and task of this run (and only of this run) reaches it through its own config (`ledgerOf`).
   */
  #graphConfig(drive: Drive, signals: DriveSignals, ledger: RunLedger, options: InvokeOptions, events: RunEventLog): DriveConfig {
    return {
      // A run never resumed has made no tool call before: the registry need not look its call ids up.
      // The run's events come straight from the nodes (see EVENTS_KEY), not as chunks of the stream.
      configurable: { thread_id: drive.record.threadId, troupe_first_pass: !drive.resumed, [LEDGER_KEY]: ledger, [EVENTS_KEY]: (event: RunEvent) => events.emit(event) },
      streamMode: ["custom", "values"],
      durability: "sync",
      recursionLimit: recursionLimitFor(LIMITS.maxSubtasks, drive.request.maxIterations),
      maxConcurrency: drive.request.concurrency,
      signal: signals.signal,
      control: signals.control,
      ...(options.callbacks ? { callbacks: options.callbacks } : {}),
    };
  }

  /** Streams the graph: custom chunks are the run's events, values its state; how it ended, thrown or not. */
  async #stream(input: unknown, config: DriveConfig, events: RunEventLog, signals: DriveSignals, options: InvokeOptions): Promise<StreamEnd> {
    let last: State | undefined;
    try {
      const stream = await this.#parts.graph.stream(input as never, config);
      for await (const [mode, chunk] of stream as AsyncIterable<[string, unknown]>) {
        if (mode === "custom") events.emit(chunk as RunEvent);
        else last = chunk as State;
      }
      return { last, cancelled: false, suspended: false };
    } catch (error) {
      return streamEndOf(error, last, {
        drainReason: signals.control.drainReason,
        makeWay: signals.makeWay.signal,
        signal: signals.signal,
        drainRequested: options.control?.drainRequested === true,
        lost: signals.lost,
        recursionLimit: config.recursionLimit,
      });
    }
  }

  /**
   * The state a drive stopped in, and the interrupt it waits on: a run that reached finalize is
   * fully described by its last values; otherwise the checkpoint tells, with the plan and results
   * of a planner's node still streaming taken from the events.
   */
  async #stateAfter(record: RunRecord, end: StreamEnd, events: RunEventLog): Promise<{ state: State; interrupt: InterruptInfo | undefined }> {
    if (endedCleanly(record, end)) return { state: end.last, interrupt: undefined };
    const snapshot = await this.#parts.graph.getState({ configurable: { thread_id: record.threadId } });
    // A thread with no checkpoint yet (stopped before the graph's first one) has no values: the defaults stand in.
    let state = { ...blankState(), ...(snapshot.values as Partial<State>) };
    const interrupt = pendingInterrupts(snapshot)[0]?.value as InterruptInfo | undefined;
    // Paused or stopped inside the planner's node (a streamed plan): the plan is in its events.
    if (!state.finished && state.runId === record.id) {
      await events.delivered();
      state = liveState(state, await this.#parts.store.events.list(record.id, 0, 100_000));
    }
    return { state, interrupt };
  }
}
