import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import path from "node:path";
import type { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { Command, GraphRecursionError, isGraphDrained, type RunControl } from "@langchain/langgraph";
import { z } from "zod";
import type { AgentRegistry } from "../agents/define-agent.js";
import { createAgentRegistry } from "../agents/index.js";
import { RunLedger } from "../agents/run-ledger.js";
import { loadConfig, type TroupeConfig } from "../config/config-file.js";
import { type Env, parseEnv } from "../config/env.js";
import { resolveToolsConfig, type ToolsConfig } from "../config/tools-config.js";
import type { Budget } from "../core/budget.js";
import { ConflictError, errorMessage, InputError, NotFoundError } from "../core/errors.js";
import type { RunEvent, StoredEvent } from "../core/events.js";
import { LIMITS } from "../core/limits.js";
import {
  type InterruptInfo,
  ResumeDecision,
  type RunRequestInput,
  type RunResult,
  RunRequest,
  runStatusOf,
} from "../core/run.js";
import { emptyExecutionGraph, type ExecutionGraph, renderExecutionGraph } from "../core/execution-graph.js";
import { liveSubtasks } from "../core/live-results.js";
import { buildGraph, type TroupeGraph } from "../graph/build-graph.js";
import type { RunSettings, State } from "../graph/state.js";
import { recursionLimitFor, workDone } from "../graph/trace.js";
import type { CallPolicy } from "../providers/call-policy.js";
import { MODEL_ROLES, type ProviderDefinition } from "../providers/provider.js";
import { choiceId, type ModelSet } from "../providers/registry.js";
import { openStore, type RunRecord, type Store } from "../store/index.js";
import type { NewRun } from "../store/run-store.js";
import type { ToolOutcome } from "../tools/define-tool.js";
import { OPERATOR, type PermissionPolicy } from "../tools/permissions.js";
import type { ToolRegistry } from "../tools/registry.js";
import { checkWorkspacePath, workspaceRoot } from "../tools/workspace.js";
import { setWorkspaceQuota } from "../tools/workspace-quota.js";
import { createModels, type ProviderSource, registryFor } from "./model-selection.js";
import { hasStepsLeft, pendingInterrupts } from "./interrupts.js";
import { liveState, resultFromState } from "./result.js";
import { createToolPlatform, type ToolPlatform } from "./tool-platform.js";

export type { ProviderSource } from "./model-selection.js";

export interface TroupeOptions {
  env?: Env;
  dataDir?: string;
  workspace?: string;
  /** `provider` or `provider:model`; defaults to TROUPE_PROVIDER, then the config file, then `offline`. */
  provider?: string;
  model?: string;
  /** The config to use instead of reading `troupe.config.json`/`.ts` (or TROUPE_CONFIG) from `configDir`. */
  config?: TroupeConfig;
  /** Where to look for the config file (default: the working directory). */
  configDir?: string;
  /** Timeout, retries and backoff of model calls, over the environment and config file. */
  callPolicy?: Partial<CallPolicy>;
  /** Models to use instead of creating them from a provider (tests, embedding). */
  models?: ModelSet;
  providers?: ProviderDefinition[];
  tools?: ToolRegistry;
  agents?: AgentRegistry;
  maxWorkerSteps?: number;
  /** The config file to read, instead of TROUPE_CONFIG or the one found in `configDir` (`--config`). */
  configFile?: string;
  /** The `tools` section given in code, instead of the config file's. */
  toolsConfig?: unknown;
}

/** What `runs show` reports of a run. */
export interface RunView {
  runId: string;
  threadId: string;
  task: string;
  status: RunRecord["status"];
  stopReason: RunRecord["stopReason"];
  answer: string | null;
  plan: RunResult["plan"];
  metrics: RunResult["metrics"] | null;
  trace: RunResult["trace"] | undefined;
  /** The execution graph: subtasks with their status, summary and duration, and the data flow between them. */
  graph: ExecutionGraph;
  interrupt?: InterruptInfo;
  error?: string;
  createdAt: number;
  finishedAt: number | null;
}

export interface InvokeOptions {
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

/** An interrupt a thread waits on, with the id a decision can name it by. */
export interface PendingInterrupt extends InterruptInfo {
  id: string;
}

/**
 * A run's request as stored with it, read back leniently: older rows may lack fields, and the
 * stored copy carries the provider too (unknown keys are dropped, not refused, so the request
 * can be parsed again to start a queued run).
 */
const StoredRequest = z.object(RunRequest.shape).partial();

/** Whether the process that owns a run (by its pid and host) is alive; this process counts. */
export function isAlive(pid: number | null, host: string | null): boolean {
  if (pid === null || host !== hostname()) return false;
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** A troupe instance: one compiled graph, its store, tools, agents and models. */
export class Troupe {
  readonly env: Env;
  readonly store: Store;
  readonly graph: TroupeGraph;
  readonly tools: ToolRegistry;
  readonly agents: AgentRegistry;
  readonly models: ModelSet;
  readonly providerSource: ProviderSource;
  readonly workspace: string;
  readonly config: TroupeConfig;
  readonly policy: PermissionPolicy;
  readonly toolsConfig: ToolsConfig;
  /** Why optional MCP servers were skipped. */
  readonly warnings: string[];
  readonly #maxWorkerSteps: number;
  /** The budget ledgers of the runs this instance is driving, shared with the graph's nodes. */
  readonly #ledgers: Map<string, RunLedger>;
  readonly #platform: ToolPlatform;
  /** Whether this instance owns its store and tool platform (false for one made by `withWorkspace`). */
  readonly #owner: boolean;

  private constructor(fields: {
    env: Env;
    store: Store;
    graph: TroupeGraph;
    tools: ToolRegistry;
    agents: AgentRegistry;
    models: ModelSet;
    providerSource: ProviderSource;
    workspace: string;
    config: TroupeConfig;
    maxWorkerSteps: number;
    ledgers: Map<string, RunLedger>;
    platform: ToolPlatform;
    toolsConfig: ToolsConfig;
    owner?: boolean;
  }) {
    this.env = fields.env;
    this.store = fields.store;
    this.graph = fields.graph;
    this.tools = fields.tools;
    this.agents = fields.agents;
    this.models = fields.models;
    this.providerSource = fields.providerSource;
    this.workspace = fields.workspace;
    this.config = fields.config;
    this.#maxWorkerSteps = fields.maxWorkerSteps;
    this.#ledgers = fields.ledgers;
    this.#platform = fields.platform;
    this.policy = fields.platform.policy;
    this.warnings = fields.platform.warnings;
    this.toolsConfig = fields.toolsConfig;
    this.#owner = fields.owner ?? true;
  }

  static async create(options: TroupeOptions = {}): Promise<Troupe> {
    const env = options.env ?? parseEnv();
    const loaded = options.config ? { config: options.config, file: undefined } : await loadConfig(options.configDir, options.configFile ?? env.TROUPE_CONFIG);
    const { config } = loaded;
    let models = options.models;
    let providerSource: ProviderSource = "injected";
    if (!models) {
      const registry = registryFor(config, options.providers ?? []);
      ({ models, source: providerSource } = createModels(registry, { env, config, provider: options.provider, model: options.model, policy: options.callPolicy }));
    }
    // The config file's `tools` section (validated here, where its folders are made absolute against the file's own folder).
    const toolsConfig =
      options.toolsConfig !== undefined
        ? resolveToolsConfig(options.toolsConfig)
        : resolveToolsConfig(config.tools, { base: loaded.file ? path.dirname(loaded.file) : path.resolve(options.configDir ?? process.cwd()), file: loaded.file });
    // A workspace path that cannot be a folder is bad input, refused before anything is written.
    checkWorkspacePath(options.workspace ?? env.TROUPE_WORKSPACE);
    const store = openStore(options.dataDir ?? env.TROUPE_DATA_DIR);
    try {
      const workspace = await workspaceRoot(options.workspace ?? env.TROUPE_WORKSPACE);
      setWorkspaceQuota(workspace, toolsConfig.quota);
      const platform = await createToolPlatform({ config: toolsConfig, agents: options.agents ?? createAgentRegistry(), tools: options.tools, audit: store.audit });
      const { tools, agents } = platform;
      const ledgers = new Map<string, RunLedger>();
      let graph: TroupeGraph;
      try {
        graph = buildGraph({ models, tools, agents, workspace, stash: store.stash, ledgers }, store.checkpointer);
      } catch (error) {
        await platform.close();
        throw error;
      }
      const maxWorkerSteps = options.maxWorkerSteps ?? LIMITS.workerMaxSteps;
      return new Troupe({ env, store, graph, tools, agents, models, providerSource, workspace, config, maxWorkerSteps, ledgers, platform, toolsConfig });
    } catch (error) {
      store.close();
      throw error;
    }
  }

  /**
   * An instance on the same store, tools, agents and permissions that works in another workspace,
   * with other models when given: an eval case gets its own files (and its own cassette) while
   * its run is kept with every other. Closing it closes nothing it shares.
   */
  async withWorkspace(workspace: string, options: { models?: ModelSet } = {}): Promise<Troupe> {
    checkWorkspacePath(workspace);
    const root = await workspaceRoot(workspace);
    setWorkspaceQuota(root, this.toolsConfig.quota);
    const models = options.models ?? this.models;
    const ledgers = new Map<string, RunLedger>();
    const graph = buildGraph({ models, tools: this.tools, agents: this.agents, workspace: root, stash: this.store.stash, ledgers }, this.store.checkpointer);
    return new Troupe({
      env: this.env,
      store: this.store,
      graph,
      tools: this.tools,
      agents: this.agents,
      models,
      providerSource: this.providerSource,
      workspace: root,
      config: this.config,
      maxWorkerSteps: this.#maxWorkerSteps,
      ledgers,
      platform: this.#platform,
      toolsConfig: this.toolsConfig,
      owner: false,
    });
  }

  /** Starts a run and drives it until it finishes or waits for a person. */
  async run(input: RunRequestInput, options: RunOptions = {}): Promise<RunResult> {
    const request = this.#parseRequest(input);
    const { owner, evalId, ...invoke } = options;
    const record = this.#createRecord(request, {
      status: "running",
      pid: process.pid,
      host: hostname(),
      startedAt: Date.now(),
      ...(owner !== undefined ? { owner } : {}),
      ...(evalId !== undefined ? { evalId } : {}),
    });
    return this.#begin(record, request, invoke);
  }

  /**
   * Records a run as queued, to be started later with `start` (the server's queue). The record
   * is written (and synced) before this returns, so an accepted run survives a crash.
   */
  enqueue(input: RunRequestInput, options: EnqueueOptions = {}): RunRecord {
    const request = this.#parseRequest(input);
    return this.#createRecord(request, { status: "queued", pid: null, host: null, ...options });
  }

  /** Starts a queued run that has never run. */
  async start(runId: string, options: InvokeOptions = {}): Promise<RunResult> {
    const record = this.store.runs.get(runId);
    if (!record) throw new NotFoundError("unknown_run", `no run with id ${runId}`, { runId });
    if (record.status !== "queued" || record.startedAt !== null) {
      throw new ConflictError("run_started", `run ${runId} has already started (${record.status}); resume it instead`, { runId });
    }
    return this.#startFresh(record, options);
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
    const unknown = (request.tools ?? []).filter((name) => !this.tools.has(name));
    if (unknown.length > 0) {
      throw new InputError("unknown_tool", `unknown tool${unknown.length > 1 ? "s" : ""}: ${unknown.join(", ")}; available: ${this.tools.names().join(", ")}`, { tools: unknown });
    }
    const budget: Budget = { ...this.config.budget, ...request.budget };
    if (Object.keys(budget).length > 0) request.budget = budget;
    return request;
  }

  #createRecord(request: RunRequest, fields: Pick<NewRun, "status" | "pid" | "host"> & Partial<NewRun>): RunRecord {
    const threadId = request.threadId ?? `thread-${randomUUID()}`;
    const previous = this.store.runs.latestForThread(threadId);
    if (previous && (previous.status === "interrupted" || previous.status === "queued" || (previous.status === "running" && isAlive(previous.pid, previous.host)))) {
      throw new ConflictError("thread_busy", `thread ${threadId} has a run that is ${previous.status}; resume it or use another thread`, { runId: previous.id });
    }
    const choice = this.models.choice.worker;
    return this.store.runs.create({
      id: `run-${randomUUID()}`,
      threadId,
      task: request.task,
      request: { ...request, provider: `${choice.provider}:${choice.model}` },
      ...fields,
    });
  }

  /** Runs a recorded run from its request, from the start. */
  #startFresh(record: RunRecord, options: InvokeOptions): Promise<RunResult> {
    const stored = StoredRequest.safeParse(record.request);
    const request = RunRequest.parse({ ...(stored.success ? stored.data : {}), task: record.task });
    const startedAt = record.startedAt ?? Date.now();
    this.store.runs.update(record.id, { status: "running", pid: process.pid, host: hostname(), startedAt, suspended: null, pendingDecision: null });
    return this.#begin({ ...record, status: "running", startedAt }, request, options);
  }

  #begin(record: RunRecord, request: RunRequest, options: InvokeOptions): Promise<RunResult> {
    const settings: RunSettings = {
      maxIterations: request.maxIterations,
      approvePlan: request.approvePlan,
      approveAnswer: request.approveAnswer,
      maxWorkerSteps: this.#maxWorkerSteps,
      maxSubtasks: LIMITS.maxSubtasks,
      models: Object.fromEntries(MODEL_ROLES.map((role) => [role, choiceId(this.models.choice[role])])),
      mapConcurrency: request.mapConcurrency,
      promptBudget: request.promptBudget,
      allowedTools: request.tools ?? null,
    };
    const graphInput = { runId: record.id, task: request.task, context: request.context ?? null, settings, startedAt: Date.now() };
    return this.#drive(record, graphInput, request.concurrency, false, options);
  }

  /**
   * Continues a thread's latest run: with a person's decision when it waits for one, or from its
   * last checkpoint when its process died or it was cancelled. Finished subtasks are not re-run.
   */
  async resume(threadId: string, decision: ResumeDecision | undefined, options: ResumeOptions = {}): Promise<RunResult> {
    const record = this.store.runs.latestForThread(threadId);
    if (!record) throw new NotFoundError("unknown_thread", `no run found for thread ${threadId}`, { threadId });
    if (record.evalId !== null) {
      // Its files are in its case's workspace, not this instance's: resuming it here would work on the wrong folder.
      throw new ConflictError("eval_case", `run ${record.id} is a case of eval ${record.evalId}; an eval's cases are not resumed (run the eval again)`, { runId: record.id, evalId: record.evalId });
    }
    const config = { configurable: { thread_id: threadId } };
    const snapshot = await this.graph.getState(config);
    if ((snapshot.values as Partial<State>).runId !== record.id) {
      // The thread's checkpoint is not this run's: it never reached its first checkpoint.
      if (record.status === "running" && isAlive(record.pid, record.host)) {
        throw new ConflictError("run_active", `run ${record.id} is still running in process ${record.pid}`, { runId: record.id });
      }
      if (record.status !== "queued" && record.status !== "running" && record.suspended === null) {
        throw new ConflictError("run_finished", `the run on thread ${threadId} has already finished (${record.stopReason ?? record.status})`, { runId: record.id });
      }
      if (decision && decision.decision !== "continue") {
        throw new InputError("not_waiting", `the run on thread ${threadId} is not waiting for a decision; resume it without one`);
      }
      return this.#startFresh(record, options);
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
      if (record.status === "running" && isAlive(record.pid, record.host)) {
        throw new ConflictError("run_active", `run ${record.id} is still running in process ${record.pid}`, { runId: record.id });
      }
      if (decision && decision.decision !== "continue") {
        throw new InputError("not_waiting", `the run on thread ${threadId} is not waiting for a decision; resume it without one`);
      }
      input = null;
    } else {
      throw new ConflictError("run_finished", `the run on thread ${threadId} has already ${record.status === "failed" ? "failed" : "finished"} (${record.stopReason ?? record.status})`, { runId: record.id });
    }
    this.store.runs.update(record.id, { status: "running", pid: process.pid, host: hostname(), interrupt: null, suspended: null, pendingDecision: null, startedAt: record.startedAt ?? Date.now() });
    const request = StoredRequest.safeParse(record.request);
    const concurrency = (request.success ? request.data.concurrency : undefined) ?? LIMITS.subtaskConcurrency;
    return this.#drive(record, input, concurrency, true, options);
  }

  async #drive(record: RunRecord, input: unknown, concurrency: number, resumed: boolean, options: InvokeOptions): Promise<RunResult> {
    const started = performance.now();
    const emit = (event: RunEvent): void => {
      const stored = this.store.events.append(record.id, event);
      options.onEvent?.(stored);
    };
    emit({ type: "run-start", runId: record.id, threadId: record.threadId, task: record.task, resumed });
    if (resumed) {
      // Calls that began and never finished (the process died in them): each is settled by its call id when the step runs again.
      const inFlight = this.store.audit.unfinished({ runId: record.id });
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
      signal: options.signal,
      ...(options.control ? { control: options.control } : {}),
      ...(options.callbacks ? { callbacks: options.callbacks } : {}),
    };
    let failure: string | undefined;
    let cancelled = false;
    let suspended = false;
    let last: State | undefined;
    const ledger = await this.#openLedger(record, resumed, request.success ? request.data.budget : undefined);
    try {
      const stream = await this.graph.stream(input as never, config);
      for await (const [mode, chunk] of stream as AsyncIterable<[string, unknown]>) {
        if (mode === "custom") emit(chunk as RunEvent);
        else last = chunk as State;
      }
    } catch (error) {
      if (isGraphDrained(error) || (options.signal?.aborted && options.control?.drainRequested)) suspended = true;
      else if (options.signal?.aborted) cancelled = true;
      else if (error instanceof GraphRecursionError) failure = `the run exceeded its step limit (${config.recursionLimit} supersteps)`;
      else failure = errorMessage(error);
    } finally {
      ledger.dispose();
      this.#ledgers.delete(record.id);
    }
    // A run that reached finalize is fully described by its last values; otherwise ask the
    // checkpoint, which also knows about a pending interrupt.
    let state: State;
    let interrupt: InterruptInfo | undefined;
    if (last?.finished && last.runId === record.id && failure === undefined && !cancelled && !suspended) {
      state = last;
    } else {
      const snapshot = await this.graph.getState({ configurable: { thread_id: record.threadId } });
      state = snapshot.values as State;
      interrupt = pendingInterrupts(snapshot)[0]?.value as InterruptInfo | undefined;
    }
    const activeMs = record.activeMs + Math.round(performance.now() - started);
    // Paused or stopped inside the planner's node (a streamed plan): the plan is in its events.
    if (!state.finished && state.runId === record.id) state = liveState(state, this.store.events.list(record.id, 0, 100_000));
    const result = resultFromState(record, state, activeMs);
    if (suspended && !state.finished) {
      // Stopped by a drain (server shutdown): not waiting for a person, resumed when a server starts.
      result.status = "interrupted";
      result.stopReason = null;
    } else if (cancelled) {
      result.status = "cancelled";
      result.stopReason = "cancelled";
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
    this.store.runs.update(record.id, {
      status: result.status,
      stopReason: result.stopReason,
      answer: result.answer,
      error: result.error ?? null,
      metrics: result.metrics,
      interrupt: result.interrupt ?? null,
      activeMs,
      pid: null,
      finishedAt: result.status === "interrupted" ? null : Date.now(),
      suspended: suspended && result.status === "interrupted" && !result.interrupt ? "shutdown" : null,
    });
    emit({ type: "run-end", status: result.status, stopReason: result.stopReason, metrics: result.metrics });
    return result;
  }

  /** The budget ledger of a run's stretch, carrying on from what a resumed run had used. */
  async #openLedger(record: RunRecord, resumed: boolean, budget: Budget | undefined): Promise<RunLedger> {
    let used = { llmCalls: 0, promptTokens: 0, completionTokens: 0, costUsd: 0, activeMs: record.activeMs };
    if (resumed) {
      const values = (await this.graph.getState({ configurable: { thread_id: record.threadId } })).values as Partial<State>;
      if (values.runId === record.id && values.metrics) used = { ...values.metrics, activeMs: record.activeMs };
    }
    const ledger = new RunLedger(budget ?? {}, used);
    this.#ledgers.set(record.id, ledger);
    return ledger;
  }

  /** The interrupts a thread's run waits on, each with its id (several subtasks may wait for approval at once). */
  async pendingInterrupts(threadId: string): Promise<PendingInterrupt[]> {
    const snapshot = await this.graph.getState({ configurable: { thread_id: threadId } });
    return pendingInterrupts(snapshot).flatMap((pending) => {
      const info = pending.value as InterruptInfo | undefined;
      return pending.id && info?.kind ? [{ id: pending.id, kind: info.kind, payload: info.payload ?? {} }] : [];
    });
  }

  /**
   * A run as it stands. The plan and trace come from the thread's checkpoint while the run is
   * the thread's latest; an older run on a reused thread shows what its record kept.
   */
  async show(runId: string): Promise<RunView> {
    const record = this.store.runs.get(runId);
    if (!record) throw new NotFoundError("unknown_run", `no run with id ${runId}`, { runId });
    const snapshot = await this.graph.getState({ configurable: { thread_id: record.threadId } });
    const sameRun = (snapshot.values as State).runId === record.id;
    // Started and not ended: running, or waiting inside a step for a person to approve a tool call.
    const live = record.status === "running" || (record.status === "interrupted" && record.interrupt?.kind === "tool-approval") || record.suspended !== null;
    const events = sameRun && live ? this.store.events.list(record.id, 0, 100_000) : [];
    // While the node running the subtasks goes on, its plan and those it has finished are in its events, not yet in the state.
    const progress = liveSubtasks(events);
    const state = sameRun && live ? liveState(snapshot.values as State, events) : (snapshot.values as State);
    const result = sameRun ? resultFromState(record, state, record.activeMs) : undefined;
    const graph = sameRun ? renderExecutionGraph(state.plan, state.results, { running: Object.keys(progress.runningSince), runningSince: progress.runningSince }) : emptyExecutionGraph();
    const view: RunView = {
      runId: record.id,
      threadId: record.threadId,
      task: record.task,
      status: record.status,
      stopReason: record.stopReason,
      answer: record.answer ?? result?.answer ?? null,
      plan: result?.plan ?? [],
      metrics: result?.metrics ?? record.metrics,
      trace: result?.trace,
      graph,
      createdAt: record.createdAt,
      finishedAt: record.finishedAt,
    };
    if (record.interrupt) view.interrupt = record.interrupt;
    if (record.error) view.error = record.error;
    return view;
  }


  /** Subtasks of a run that have started and not ended, by its events. */
  runningSubtasks(runId: string): string[] {
    return Object.keys(liveSubtasks(this.store.events.list(runId, 0, 100_000)).runningSince);
  }

  /**
   * Calls a tool directly, through the same permissions and audit as an agent's call: as an
   * agent, or as the local operator (every level, no approval) when no agent is given. No one
   * can be asked for an approval here, so an agent's high-risk call is refused at once
   * (`approval_required`). `principal` names who is behind the call in the audit trail (an API
   * key's name).
   */
  async callTool(name: string, args: unknown, options: { agent?: string; signal?: AbortSignal; principal?: string } = {}): Promise<ToolOutcome> {
    if (options.agent !== undefined && options.agent !== OPERATOR && !this.agents.get(options.agent)) {
      throw new InputError("unknown_agent", `unknown agent "${options.agent}"; agents: ${this.agents.names().join(", ")}`);
    }
    return this.tools.call(name, args, {
      workspace: this.workspace,
      agent: options.agent ?? OPERATOR,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.principal !== undefined ? { principal: options.principal } : {}),
    });
  }

  /** Closes the store and the MCP servers' connections (stdio servers are stopped); nothing for an instance made by `withWorkspace`. */
  close(): void {
    if (!this.#owner) return;
    this.store.close();
    void this.#platform.close();
  }

  /** Like close, and waits for the MCP connections to end. */
  async shutdown(): Promise<void> {
    if (!this.#owner) return;
    this.store.close();
    await this.#platform.close();
  }
}

export function createTroupe(options: TroupeOptions = {}): Promise<Troupe> {
  return Troupe.create(options);
}
