import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import { z } from "zod";
import { Command, GraphRecursionError, isGraphDrained, type RunControl } from "@langchain/langgraph";
import type { AgentRegistry } from "../agents/define-agent.js";
import { createAgentRegistry } from "../agents/index.js";
import { type Env, parseEnv } from "../config/env.js";
import { ConflictError, errorMessage, InputError, NotFoundError } from "../core/errors.js";
import type { RunEvent, StoredEvent } from "../core/events.js";
import { LIMITS } from "../core/limits.js";
import {
  type InterruptInfo,
  ResumeDecision,
  type RunRequestInput,
  type RunResult,
  RunRequest,
  statusForStopReason,
} from "../core/run.js";
import { buildGraph, type TroupeGraph } from "../graph/build-graph.js";
import type { RunSettings, State } from "../graph/state.js";
import { recursionLimitFor } from "../graph/trace.js";
import type { ProviderDefinition } from "../providers/provider.js";
import { createProviderRegistry, type ModelChoice, type ModelSet, type ProviderRegistry } from "../providers/registry.js";
import { openStore, type RunRecord, type Store } from "../store/index.js";
import type { NewRun } from "../store/run-store.js";
import { scriptedProvider } from "../testing/scripted-provider.js";
import { createBuiltinRegistry } from "../tools/builtin/index.js";
import type { ToolRegistry } from "../tools/registry.js";
import { workspaceRoot } from "../tools/workspace.js";
import { resultFromState } from "./result.js";

export interface TroupeOptions {
  env?: Env;
  dataDir?: string;
  workspace?: string;
  /** `provider` or `provider:model`; defaults to TROUPE_PROVIDER, then `offline`. */
  provider?: string;
  model?: string;
  /** Models to use instead of creating them from a provider (tests, embedding). */
  models?: ModelSet;
  providers?: ProviderDefinition[];
  tools?: ToolRegistry;
  agents?: AgentRegistry;
  maxWorkerSteps?: number;
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
  /**
   * Stream the answer as `answer-token` events while the synthesizer writes it (models that can
   * stream do). Off by default: only a live watcher (the server's SSE) has a use for them.
   */
  streamAnswer?: boolean;
}

/** Who submitted a queued run, and how to recognise a replay of its submission. */
export interface EnqueueOptions {
  owner?: string;
  idempotencyKey?: string;
  requestHash?: string;
}

/**
 * A run's request as stored with it, read back leniently: older rows may lack fields, and the
 * stored copy carries the provider too (unknown keys are dropped, not refused).
 */
const StoredRequest = z.object(RunRequest.shape).partial();

/** Where the provider choice came from, so the CLI can say when it fell back to `offline`. */
export type ProviderSource = "option" | "env" | "default" | "injected";

/** Resolves the provider choice without creating anything (used to fail fast on bad configuration). */
export function resolveModelChoice(registry: ProviderRegistry, env: Env, provider?: string, model?: string): { choice: ModelChoice; source: ProviderSource } {
  const spec = provider ?? env.TROUPE_PROVIDER;
  const choice = registry.resolve(spec ?? "offline", model ?? env.TROUPE_MODEL);
  registry.check(choice, env);
  return { choice, source: provider ? "option" : spec ? "env" : "default" };
}

function isAlive(pid: number | null, host: string | null): boolean {
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
  readonly #maxWorkerSteps: number;

  private constructor(fields: {
    env: Env;
    store: Store;
    graph: TroupeGraph;
    tools: ToolRegistry;
    agents: AgentRegistry;
    models: ModelSet;
    providerSource: ProviderSource;
    workspace: string;
    maxWorkerSteps: number;
  }) {
    this.env = fields.env;
    this.store = fields.store;
    this.graph = fields.graph;
    this.tools = fields.tools;
    this.agents = fields.agents;
    this.models = fields.models;
    this.providerSource = fields.providerSource;
    this.workspace = fields.workspace;
    this.#maxWorkerSteps = fields.maxWorkerSteps;
  }

  static async create(options: TroupeOptions = {}): Promise<Troupe> {
    const env = options.env ?? parseEnv();
    let models = options.models;
    let providerSource: ProviderSource = "injected";
    if (!models) {
      const registry = createProviderRegistry([scriptedProvider, ...(options.providers ?? [])]);
      const resolved = resolveModelChoice(registry, env, options.provider, options.model);
      models = registry.createModelSet(resolved.choice, env);
      providerSource = resolved.source;
    }
    const store = openStore(options.dataDir ?? env.TROUPE_DATA_DIR);
    try {
      const workspace = await workspaceRoot(options.workspace ?? env.TROUPE_WORKSPACE);
      const tools = options.tools ?? createBuiltinRegistry();
      const agents = options.agents ?? createAgentRegistry();
      const graph = buildGraph({ models, tools, agents, workspace }, store.checkpointer);
      return new Troupe({ env, store, graph, tools, agents, models, providerSource, workspace, maxWorkerSteps: options.maxWorkerSteps ?? LIMITS.workerMaxSteps });
    } catch (error) {
      store.close();
      throw error;
    }
  }

  /** Starts a run and drives it until it finishes or waits for a person. */
  async run(input: RunRequestInput, options: InvokeOptions = {}): Promise<RunResult> {
    const request = this.#parseRequest(input);
    const record = this.#createRecord(request, { status: "running", pid: process.pid, host: hostname(), startedAt: Date.now() });
    return this.#begin(record, request, options);
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

  #parseRequest(input: RunRequestInput): RunRequest {
    const parsed = RunRequest.safeParse(input);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new InputError("invalid_request", issue?.message ?? "invalid request", { path: issue?.path.join(".") });
    }
    const unknown = (parsed.data.tools ?? []).filter((name) => !this.tools.has(name));
    if (unknown.length > 0) {
      throw new InputError("unknown_tool", `unknown tool${unknown.length > 1 ? "s" : ""}: ${unknown.join(", ")}; available: ${this.tools.names().join(", ")}`, { tools: unknown });
    }
    return parsed.data;
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
      allowedTools: request.tools ?? null,
    };
    const graphInput = { runId: record.id, task: request.task, context: request.context ?? null, settings, startedAt: Date.now() };
    return this.#drive(record, graphInput, request.concurrency, false, options);
  }

  /**
   * Continues a thread's latest run: with a person's decision when it waits for one, or from its
   * last checkpoint when its process died or it was cancelled. Finished subtasks are not re-run.
   */
  async resume(threadId: string, decision: ResumeDecision | undefined, options: InvokeOptions = {}): Promise<RunResult> {
    const record = this.store.runs.latestForThread(threadId);
    if (!record) throw new NotFoundError("unknown_thread", `no run found for thread ${threadId}`, { threadId });
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
    const interrupts = snapshot.tasks.flatMap((task) => task.interrupts);
    let input: Command | null;
    if (interrupts.length > 0) {
      if (!decision || decision.decision === "continue") {
        const kind = (interrupts[0]?.value as InterruptInfo | undefined)?.kind ?? "a decision";
        throw new InputError("decision_required", `the run on thread ${threadId} is waiting for ${kind}; pass --approve, --reject or --answer`);
      }
      const kind = (interrupts[0]?.value as InterruptInfo | undefined)?.kind;
      if (kind === "question" && decision.decision === "approve") {
        throw new InputError("answer_required", "the run is waiting for an answer to a question; pass --answer TEXT (or --reject)");
      }
      input = new Command({ resume: ResumeDecision.parse(decision) });
    } else if (snapshot.next.length > 0) {
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
    const request = StoredRequest.safeParse(record.request);
    const maxIterations = (request.success ? request.data.maxIterations : undefined) ?? LIMITS.maxIterationsDefault;
    const config = {
      configurable: { thread_id: record.threadId, ...(options.streamAnswer ? { stream_answer: true } : {}) },
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
      interrupt = snapshot.tasks.flatMap((task) => task.interrupts)[0]?.value as InterruptInfo | undefined;
    }
    const activeMs = record.activeMs + Math.round(performance.now() - started);
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
      result.status = statusForStopReason(state.stopReason);
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

  /**
   * A run as it stands. The plan and trace come from the thread's checkpoint while the run is
   * the thread's latest; an older run on a reused thread shows what its record kept.
   */
  async show(runId: string): Promise<RunView> {
    const record = this.store.runs.get(runId);
    if (!record) throw new NotFoundError("unknown_run", `no run with id ${runId}`, { runId });
    const snapshot = await this.graph.getState({ configurable: { thread_id: record.threadId } });
    const state = snapshot.values as State;
    const result = state.runId === record.id ? resultFromState(record, state, record.activeMs) : undefined;
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
      createdAt: record.createdAt,
      finishedAt: record.finishedAt,
    };
    if (record.interrupt) view.interrupt = record.interrupt;
    if (record.error) view.error = record.error;
    return view;
  }

  close(): void {
    this.store.close();
  }
}

export function createTroupe(options: TroupeOptions = {}): Promise<Troupe> {
  return Troupe.create(options);
}
