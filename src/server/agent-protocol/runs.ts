import { ConflictError, InputError, NotFoundError, TroupeError } from "../../core/errors.js";
import { threadKey, threadNameOfRun } from "../../core/thread-key.js";
import type { RunRecord } from "../../store/index.js";
import type { AgentRunInfo } from "../../store/agent-protocol/contract.js";
import type { Principal } from "../config.js";
import { lastEventSeq, type RunFeed } from "../run-follow.js";
import type { Origin, TaskService } from "../task-service.js";
import { executeBodyOf, resumeBodyFor } from "./run-input.js";
import type { AgentThreads } from "./threads.js";
import { ASSISTANT_ID, GRAPH_METADATA, isTroupeAssistant, iso, type ProtocolRunStatus, runStatusOf, troupeStatusesOf } from "./views.js";
import type { RunCreate } from "./wire.js";

export interface RunView {
  run_id: string;
  thread_id: string;
  assistant_id: string;
  created_at: string;
  updated_at: string;
  status: ProtocolRunStatus;
  metadata: Record<string, unknown>;
  multitask_strategy: string | null;
  kwargs: Record<string, unknown>;
}

/** A run the protocol started or took up: its record, and the last event before it (a stream of it starts after that). */
export interface StartedRun {
  record: RunRecord;
  startAfter: number;
}

/** LangGraph's END: a `Command(goto=END)` ends the thread's waiting run. */
const END = "__end__";

/** Whether the run waits for a person now (not stopped by a shutdown, not answered yet). */
export function isWaiting(record: RunRecord | undefined): record is RunRecord & { interrupt: NonNullable<RunRecord["interrupt"]> } {
  return record !== undefined && record.status === "interrupted" && record.suspended === null && record.interrupt !== null;
}

/** Refuses, by name, what a run asks for that troupe cannot do (rather than doing something else). */
function refuseUnsupported(body: RunCreate): void {
  const refuse = (field: string, why: string): never => {
    throw new InputError("agent_protocol_unsupported", `${field}: ${why}`, { field });
  };
  const nonEmpty = (value: unknown): boolean => value !== undefined && value !== null && !(Array.isArray(value) && value.length === 0);
  if (nonEmpty(body.interrupt_before) || nonEmpty(body.interrupt_after)) refuse(body.interrupt_before ? "interrupt_before" : "interrupt_after", "troupe pauses where a person approves: send context.approve_plan or context.approve_answer");
  if (nonEmpty(body.feedback_keys)) refuse("feedback_keys", "troupe keeps no LangSmith feedback");
  if (body.after_seconds !== undefined && body.after_seconds !== null && body.after_seconds > 0) refuse("after_seconds", "troupe starts runs now; schedule later ones with /api/v1/schedules");
  if (body.on_completion === "delete") refuse("on_completion", "troupe keeps every run's record (delete it with DELETE /threads/{thread_id}/runs/{run_id})");
}

/**
 * The protocol's runs over troupe's: a run with input is a task submitted through the task
 * service (its queue, checkpoints, per-key fairness and runs store — the REST API's path), a
 * `Command` resume answers the thread's waiting run as `troupe resume` does, `goto: "__end__"`
 * stops it. A run belongs to the key that made it and is found under its own thread only.
 */
export class AgentRuns {
  readonly #feed: RunFeed;
  readonly #tasks: TaskService;
  readonly #threads: AgentThreads;

  constructor(feed: RunFeed, threads: AgentThreads) {
    this.#feed = feed;
    this.#tasks = feed.tasks;
    this.#threads = threads;
  }

  get #store() {
    return this.#tasks.troupe.store;
  }

  /** Starts a run on the caller's thread (or, without one, on a new thread of its own), or answers the thread's waiting run. */
  async create(principal: Principal, threadName: string | null, body: RunCreate, origin: Origin): Promise<StartedRun> {
    if (!isTroupeAssistant(body.assistant_id)) {
      throw new NotFoundError("assistant_not_found", `there is no assistant ${body.assistant_id.slice(0, 100)}: troupe serves one, troupe (${ASSISTANT_ID})`, { assistant_id: body.assistant_id.slice(0, 100) });
    }
    refuseUnsupported(body);
    await this.#refuseBranch(principal, threadName, body);
    const command = body.command ?? undefined;
    const hasInput = body.input !== undefined && body.input !== null && Object.keys(body.input).length > 0;
    if (command && hasInput) throw new InputError("command_invalid", "send input (a new task) or command (an answer to the waiting run), not both");
    if (command) {
      if (threadName === null) throw new InputError("command_invalid", "a command answers a thread's waiting run: send it to /threads/{thread_id}/runs");
      return this.#command(principal, threadName, command);
    }
    if (!hasInput || !body.input) throw new InputError("agent_protocol_unsupported", "the run has no input: send input.task, or input.messages with a human message (or command.resume for a waiting run)", { field: "input" });
    // The request is checked before anything is written: a refused one makes no thread either.
    const request = executeBodyOf(body, body.input, threadName ?? undefined);
    if (threadName !== null) await this.#ensureThread(principal, threadName, body.if_not_exists === "create");
    let record: RunRecord;
    try {
      record = (await this.#tasks.submit(principal, request, undefined, origin)).record;
    } catch (error) {
      if (error instanceof ConflictError && error.code === "thread_busy") {
        throw new ConflictError("thread_busy", `thread ${threadName ?? ""} has a run that is not finished (${String(error.data.runId ?? "")}): answer it with command.resume, wait for it, or send multitask_strategy enqueue, interrupt or rollback`, error.data);
      }
      throw error;
    }
    await this.#store.agentProtocol.addRun({ runId: record.id, owner: principal.id, metadata: body.metadata ?? {}, multitaskStrategy: body.multitask_strategy ?? "reject", now: Date.now() });
    return { record, startAfter: 0 };
  }

  /**
   * A run starts from its thread's latest checkpoint: naming that one is taken (useStream names
   * the head it shows), naming an earlier one — a branch, as a client's "edit" or "regenerate"
   * makes — is refused (troupe forks a run into a new thread: POST /api/v1/tasks/{id}/fork).
   */
  async #refuseBranch(principal: Principal, threadName: string | null, body: RunCreate): Promise<void> {
    const named = body.checkpoint_id ?? (typeof body.checkpoint?.checkpoint_id === "string" ? body.checkpoint.checkpoint_id : undefined);
    const field = body.checkpoint_id ? "checkpoint_id" : "checkpoint";
    if (named === undefined || named === null) {
      if (body.checkpoint && Object.keys(body.checkpoint).some((key) => key !== "checkpoint_ns" || body.checkpoint?.checkpoint_ns !== "")) {
        throw new InputError("agent_protocol_unsupported", `${field}: name the thread's latest checkpoint by its checkpoint_id, or none`, { field });
      }
      return;
    }
    const latest = threadName === null ? undefined : await this.#threads.latestCheckpoint(principal, threadName);
    if (latest !== named) {
      throw new InputError("agent_protocol_unsupported", `${field}: a run starts from its thread's latest state; branching from an earlier checkpoint is not taken (fork the run into a new thread with POST /api/v1/tasks/{id}/fork)`, { field });
    }
  }

  /** The caller's thread exists (made now when asked), and says which graph it runs. */
  async #ensureThread(principal: Principal, name: string, create: boolean): Promise<void> {
    const found = await this.#threads.find(principal, name);
    const key = threadKey(principal.id, name);
    if (!found) {
      if (!create) throw new NotFoundError("thread_not_found", `there is no thread ${name} of yours: make it with POST /threads, or send if_not_exists: create`, { thread_id: name });
      if (await this.#store.runs.latestForThread(key)) throw new NotFoundError("thread_not_found", `there is no thread ${name} of yours; choose another thread_id`, { thread_id: name });
      await this.#store.agentProtocol.addThread({ threadId: key, owner: principal.id, metadata: { ...GRAPH_METADATA }, now: Date.now() });
      return;
    }
    if (found.row?.metadata.graph_id === undefined) {
      const now = Date.now();
      await this.#store.agentProtocol.mergeMetadata({ threadId: key, owner: principal.id, metadata: { ...GRAPH_METADATA, ...(found.row?.metadata ?? {}) }, now, createdAt: found.row?.createdAt ?? found.latest?.createdAt ?? now });
    }
  }

  async #command(principal: Principal, threadName: string, command: NonNullable<RunCreate["command"]>): Promise<StartedRun> {
    if (command.update !== undefined) throw new InputError("agent_protocol_unsupported", "command.update: troupe's state changes only by its runs; answer the waiting run with command.resume", { field: "command" });
    const found = await this.#threads.require(principal, threadName);
    const latest = found.latest;
    if (!isWaiting(latest)) {
      const why = !latest ? "it has no run" : latest.suspended ? "its run was stopped by a shutdown and resumes by itself" : `its run is ${latest.status}`;
      throw new ConflictError("task_not_waiting", `thread ${threadName} is not waiting for a person: ${why}`, { thread_id: threadName, ...(latest ? { run_id: latest.id, status: latest.status } : {}) });
    }
    const startAfter = await lastEventSeq(this.#feed, latest.id);
    if (command.goto !== undefined) {
      if (command.resume !== undefined) throw new InputError("command_invalid", "send command.resume or command.goto, not both");
      if (command.goto !== END) throw new InputError("command_invalid", `command.goto takes "${END}" (stop the waiting run); troupe's graph is not steered from outside`);
      return { record: await this.#tasks.cancel(principal, latest.id), startAfter };
    }
    const pending = await this.#tasks.troupe.pendingInterrupts(latest.threadId);
    const resume = resumeBodyFor(command.resume, pending, latest.interrupt.kind);
    return { record: await this.#tasks.resume(principal, latest.id, resume), startAfter };
  }

  /** The caller's run, under the thread named (another thread's, or another key's, is not found). */
  async runOf(principal: Principal, threadName: string | null, runId: string): Promise<RunRecord> {
    const record = await this.#store.runs.get(runId);
    if (!record || record.owner !== principal.id || (threadName !== null && record.threadId !== threadKey(principal.id, threadName))) {
      throw new NotFoundError("run_not_found", `there is no run ${runId.slice(0, 100)} of yours${threadName !== null ? ` on thread ${threadName}` : ""}`, { run_id: runId.slice(0, 100) });
    }
    return record;
  }

  async views(records: readonly RunRecord[]): Promise<RunView[]> {
    const infos = await this.#store.agentProtocol.runs(records.map((record) => record.id));
    return records.map((record) => runView(record, infos.get(record.id)));
  }

  /** The thread's runs, newest first. */
  async list(principal: Principal, threadName: string, query: { limit?: number; offset?: number; status?: ProtocolRunStatus }): Promise<RunView[]> {
    const found = await this.#threads.require(principal, threadName);
    const limit = query.limit ?? 10;
    const offset = query.offset ?? 0;
    if (!query.status) return this.views(await this.#store.runs.list({ threadId: found.key, owner: principal.id, limit, offset }));
    const statuses = new Set(troupeStatusesOf(query.status));
    const matching = (await this.#store.runs.list({ threadId: found.key, owner: principal.id, limit: 10_000 })).filter((record) => statuses.has(record.status) && runStatusOf(record) === query.status);
    return this.views(matching.slice(offset, offset + limit));
  }

  /** Cancels a run (queued, running or waiting); `rollback` is refused: troupe keeps the run it cancels. */
  async cancel(principal: Principal, threadName: string, runId: string, action: "interrupt" | "rollback"): Promise<RunRecord> {
    const record = await this.runOf(principal, threadName, runId);
    if (action === "rollback") throw new InputError("agent_protocol_unsupported", "action rollback: troupe keeps the runs it cancels; cancel with action interrupt, then DELETE the run", { field: "action" });
    return this.#tasks.cancel(principal, record.id);
  }

  /** Deletes a finished run with its checkpoints, events and results. */
  async remove(principal: Principal, threadName: string, runId: string): Promise<void> {
    const record = await this.runOf(principal, threadName, runId);
    try {
      await this.#tasks.troupe.deleteRun(record.id, { owner: principal.id });
    } catch (error) {
      if (error instanceof TroupeError && error.code === "unknown_run") throw new NotFoundError("run_not_found", `there is no run ${runId} of yours`, { run_id: runId });
      throw error;
    }
  }
}

export function runView(record: RunRecord, info: AgentRunInfo | undefined): RunView {
  return {
    run_id: record.id,
    thread_id: threadNameOfRun(record),
    assistant_id: ASSISTANT_ID,
    created_at: iso(record.createdAt),
    updated_at: iso(record.updatedAt),
    status: runStatusOf(record),
    metadata: info?.metadata ?? {},
    multitask_strategy: info?.multitaskStrategy ?? null,
    kwargs: { input: { task: record.task } },
  };
}
