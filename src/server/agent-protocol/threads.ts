import type { RunnableConfig } from "@langchain/core/runnables";
import type { StateSnapshot } from "@langchain/langgraph";
import { v7 } from "@langchain/core/utils/uuid";
import { ConflictError, InputError, NotFoundError } from "../../core/errors.js";
import { threadKey, threadNameOf } from "../../core/thread-key.js";
import type { AgentThread, RunRecord } from "../../store/index.js";
import type { Principal } from "../config.js";
import type { TaskService } from "../task-service.js";
import { emptyState, isCheckpoint, stateView, type ThreadStateView } from "./thread-state.js";
import { emptyValues, GRAPH_METADATA, interruptOf, iso, type MessageDict, TURNS_SHOWN, threadStatusOf, turnMessages } from "./views.js";
import type { HistoryRequest, ThreadSearch } from "./wire.js";

/** A thread of the caller's: its key, and what exists of it (a row made through the protocol, runs). */
export interface FoundThread {
  name: string;
  key: string;
  row: { owner: string; metadata: Record<string, unknown>; createdAt: number; updatedAt: number } | undefined;
  latest: RunRecord | undefined;
}

export interface ThreadView {
  thread_id: string;
  created_at: string;
  updated_at: string;
  state_updated_at: string;
  metadata: Record<string, unknown>;
  status: AgentThread["status"];
  values: Record<string, unknown>;
  interrupts: Record<string, ReturnType<typeof interruptOf>[]>;
  config: Record<string, unknown>;
  error: string | null;
}

/** The most turns a page of a thread search carries, all its threads together, and the characters of a message there. */
const LISTED_TURNS = 2_000;
const LISTED_CHARS = 2_000;

const cut = (text: string): string => (text.length > LISTED_CHARS ? `${text.slice(0, LISTED_CHARS - 1)}…` : text);

/** A message as a listing shows it: cut, and marked so, when it is long (the thread's state has it whole). */
function listed(message: MessageDict): MessageDict {
  return message.content.length > LISTED_CHARS ? { ...message, content: cut(message.content), additional_kwargs: { ...(message.additional_kwargs as object), troupe_truncated: true } } : message;
}

/** How many of a thread's runs a state or history reads (the conversation shows the last TURNS_SHOWN of them). */
const RUNS_READ = 1_000;

/**
 * The protocol's threads over troupe's: a key's thread is its runs' (REST, MCP, A2A, schedules
 * made it) or one made here, kept by its key (core/thread-key.ts) so another key's thread of the
 * same name is another thread and any other key's is not found. Its state and history are its
 * LangGraph checkpoints.
 */
export class AgentThreads {
  readonly #tasks: TaskService;

  constructor(tasks: TaskService) {
    this.#tasks = tasks;
  }

  get #store() {
    return this.#tasks.troupe.store;
  }

  /** The caller's thread of that name, or undefined: a thread of another owner (the CLI's, for the open API) is not the caller's. */
  async find(principal: Principal, name: string): Promise<FoundThread | undefined> {
    const key = threadKey(principal.id, name);
    const [row, latest] = await Promise.all([this.#store.agentProtocol.thread(key), this.#store.runs.latestForThread(key)]);
    if (row && row.owner !== principal.id) return undefined;
    if (latest && latest.owner !== principal.id) return undefined;
    if (!row && !latest) return undefined;
    return { name, key, row, latest };
  }

  async require(principal: Principal, name: string): Promise<FoundThread> {
    const found = await this.find(principal, name);
    if (!found) throw new NotFoundError("thread_not_found", `there is no thread ${name} of yours`, { thread_id: name });
    return found;
  }

  /** Makes a thread (a new UUID unless named); an existing one is refused, or returned with `if_exists: do_nothing`. */
  async create(principal: Principal, body: { thread_id?: string | null; metadata?: Record<string, unknown> | null; if_exists?: "raise" | "do_nothing" | null }): Promise<ThreadView> {
    const name = body.thread_id ?? v7();
    const key = threadKey(principal.id, name);
    const existing = await this.#store.runs.latestForThread(key);
    if (existing && existing.owner !== principal.id) throw new ConflictError("thread_exists", `thread ${name} is taken; choose another thread_id`, { thread_id: name });
    const added = existing ? false : await this.#store.agentProtocol.addThread({ threadId: key, owner: principal.id, metadata: body.metadata ?? {}, now: Date.now() });
    if (!added) {
      const found = await this.find(principal, name);
      if (!found) throw new ConflictError("thread_exists", `thread ${name} is taken; choose another thread_id`, { thread_id: name });
      if (body.if_exists !== "do_nothing") throw new ConflictError("thread_exists", `you have a thread ${name} already; send if_exists: do_nothing to get it, or choose another thread_id`, { thread_id: name });
    }
    return this.view(principal, name);
  }

  /** Merges metadata into a thread's. */
  async patch(principal: Principal, name: string, metadata: Record<string, unknown>): Promise<ThreadView> {
    const found = await this.require(principal, name);
    const now = Date.now();
    await this.#store.agentProtocol.mergeMetadata({ threadId: found.key, owner: principal.id, metadata, now, createdAt: found.row?.createdAt ?? found.latest?.createdAt ?? now });
    return this.view(principal, name);
  }

  /** Deletes a thread: its runs (every one stopped) and checkpoints, and its row. */
  async remove(principal: Principal, name: string): Promise<void> {
    const found = await this.require(principal, name);
    if (found.latest) await this.#tasks.troupe.deleteThread(found.key, { owner: principal.id });
    await this.#store.agentProtocol.deleteThread(found.key);
  }

  /** The listing of one thread (its times, metadata and status as a search has them). */
  async #listed(principal: Principal, key: string): Promise<AgentThread | undefined> {
    const [listed] = await this.#store.agentProtocol.threads({ owner: principal.id, threadIds: [key], defaultMetadata: GRAPH_METADATA, sortBy: "thread_id", sortOrder: "asc", limit: 1, offset: 0 });
    return listed;
  }

  /** A thread with its whole state's values and what it waits on. */
  async view(principal: Principal, name: string): Promise<ThreadView> {
    const found = await this.require(principal, name);
    const listed = await this.#listed(principal, found.key);
    const head = await this.state(principal, name);
    const interrupts: ThreadView["interrupts"] = {};
    for (const task of head.tasks) if (task.interrupts.length > 0) interrupts[task.id] = task.interrupts;
    const now = Date.now();
    return this.#threadView(name, listed ?? { threadId: found.key, metadata: found.row?.metadata ?? null, createdAt: now, updatedAt: now, status: threadStatusOf(found.latest) }, head.values, interrupts, found.latest);
  }

  #threadView(name: string, listed: AgentThread, values: Record<string, unknown>, interrupts: ThreadView["interrupts"], latest: RunRecord | undefined): ThreadView {
    return {
      thread_id: name,
      created_at: iso(listed.createdAt),
      updated_at: iso(listed.updatedAt),
      state_updated_at: iso(listed.updatedAt),
      metadata: listed.metadata ?? { ...GRAPH_METADATA },
      status: listed.status,
      values,
      interrupts,
      config: {},
      error: latest?.status === "failed" ? (latest.error ?? `the run stopped: ${latest.stopReason ?? "failed"}`) : null,
    };
  }

  /**
   * A page of the caller's threads. Each carries its conversation (the last runs' tasks and
   * answers) and its latest run's task, answer and status as `values`; the plan and results are
   * in its state (getState), read one thread at a time.
   */
  async search(principal: Principal, query: ThreadSearch): Promise<ThreadView[]> {
    if (query.values && Object.keys(query.values).length > 0) throw new InputError("agent_protocol_unsupported", "troupe does not search threads by their values; filter by metadata, status or ids");
    if (query.extract !== undefined) throw new InputError("agent_protocol_unsupported", "troupe does not extract from thread values in a search");
    const page = await this.#store.agentProtocol.threads({
      owner: principal.id,
      ...(query.ids ? { threadIds: query.ids.map((name) => threadKey(principal.id, name)) } : {}),
      ...(query.metadata ? { metadata: query.metadata } : {}),
      ...(query.status ? { status: query.status } : {}),
      defaultMetadata: GRAPH_METADATA,
      sortBy: query.sort_by ?? "created_at",
      sortOrder: query.sort_order ?? "desc",
      limit: query.limit ?? 10,
      offset: query.offset ?? 0,
    });
    // A listing stays bounded whatever the threads hold: at most LISTED_TURNS turns in a page, each message cut at LISTED_CHARS.
    const perThread = Math.max(1, Math.min(TURNS_SHOWN, Math.floor(LISTED_TURNS / Math.max(1, page.length))));
    const turns = await this.#store.agentProtocol.turns(
      page.map((thread) => thread.threadId),
      perThread,
    );
    const views: ThreadView[] = [];
    for (const thread of page) {
      const own = turns.filter((turn) => turn.threadId === thread.threadId);
      const last = own.at(-1);
      const values = last
        ? {
            ...emptyValues(),
            messages: turnMessages(own.map((turn) => ({ runId: turn.runId, task: turn.task, answer: turn.answer, status: turn.status }))).map(listed),
            run_id: last.runId,
            task: last.task,
            answer: last.answer === null ? null : cut(last.answer),
            status: last.status,
            stop_reason: last.stopReason,
          }
        : {};
      const interrupts: ThreadView["interrupts"] = {};
      if (thread.status === "interrupted") {
        for (const pending of await this.#tasks.troupe.pendingInterrupts(thread.threadId)) interrupts[pending.id] = [interruptOf(pending.id, pending)];
      }
      const name = threadNameOf(principal.id, thread.threadId);
      const view = this.#threadView(name, thread, values, interrupts, undefined);
      if (last?.status === "failed") view.error = `the run stopped: ${last.stopReason ?? "failed"}`;
      views.push(select(view, query.select));
    }
    return views;
  }

  async count(principal: Principal, query: Pick<ThreadSearch, "metadata" | "status" | "values">): Promise<number> {
    if (query.values && Object.keys(query.values).length > 0) throw new InputError("agent_protocol_unsupported", "troupe does not count threads by their values; filter by metadata or status");
    return this.#store.agentProtocol.countThreads({
      owner: principal.id,
      ...(query.metadata ? { metadata: query.metadata } : {}),
      ...(query.status ? { status: query.status } : {}),
      defaultMetadata: GRAPH_METADATA,
    });
  }

  /** The thread's runs, oldest first (the caller's own). */
  async runsOf(principal: Principal, key: string): Promise<RunRecord[]> {
    return (await this.#store.runs.list({ threadId: key, owner: principal.id, limit: RUNS_READ })).reverse();
  }

  /** The plan of the head's run while it runs, with the subtasks running now (from its events; the checkpoint has them only once its step ends). */
  async #live(latest: RunRecord | undefined, snapshot: StateSnapshot): Promise<Parameters<typeof stateView>[1]["live"]> {
    if (!latest || (snapshot.values as { runId?: string }).runId !== latest.id) return undefined;
    if (latest.status !== "running" && !(latest.status === "interrupted" && latest.interrupt?.kind === "tool-approval")) return undefined;
    return this.#tasks.plan(latest);
  }

  /** The thread's state: its latest checkpoint, or the one named. */
  async state(principal: Principal, name: string, checkpointId?: string): Promise<ThreadStateView> {
    const found = await this.require(principal, name);
    const config: RunnableConfig = { configurable: { thread_id: found.key, ...(checkpointId !== undefined ? { checkpoint_id: checkpointId } : {}) } };
    const snapshot = await this.#tasks.troupe.graph.getState(config);
    if (!isCheckpoint(snapshot)) {
      if (checkpointId !== undefined) throw new NotFoundError("unknown_fork_point", `thread ${name} has no checkpoint ${checkpointId}`, { thread_id: name, checkpoint_id: checkpointId });
      return emptyState(name);
    }
    const runs = await this.runsOf(principal, found.key);
    const head = checkpointId === undefined;
    const live = head ? await this.#live(found.latest, snapshot) : undefined;
    return stateView(snapshot, { threadName: name, runs, head, ...(live ? { live } : {}) });
  }

  /** The id of the thread's latest checkpoint (undefined before its first run). */
  async latestCheckpoint(principal: Principal, name: string): Promise<string | undefined> {
    const found = await this.require(principal, name);
    const snapshot = await this.#tasks.troupe.graph.getState({ configurable: { thread_id: found.key } });
    return isCheckpoint(snapshot) ? String(snapshot.config.configurable?.checkpoint_id) : undefined;
  }

  /** The thread's checkpoints, newest first: `limit` of them, before one when asked. */
  async history(principal: Principal, name: string, request: HistoryRequest): Promise<ThreadStateView[]> {
    const found = await this.require(principal, name);
    if (request.metadata && Object.keys(request.metadata).length > 0) throw new InputError("agent_protocol_unsupported", "troupe does not filter a thread's history by metadata");
    // troupe's graph has no subgraphs: a namespace other than the root's has no checkpoints.
    if (request.checkpoint?.checkpoint_ns) return [];
    if (request.checkpoint?.checkpoint_id) throw new InputError("agent_protocol_unsupported", "read one checkpoint with GET /threads/{thread_id}/state/{checkpoint_id}; a history starts at the latest, or before one");
    const named = request.before;
    const before = typeof named === "string" ? named : ((named && "configurable" in named ? (named.configurable as { checkpoint_id?: string | null }).checkpoint_id : (named as { checkpoint_id?: string | null } | null | undefined)?.checkpoint_id) ?? undefined);
    const limit = request.limit ?? 10;
    const snapshots: StateSnapshot[] = [];
    const config = { configurable: { thread_id: found.key } };
    for await (const snapshot of this.#tasks.troupe.graph.getStateHistory(config, { limit, ...(before ? { before: { configurable: { thread_id: found.key, checkpoint_id: before } } } : {}) })) {
      snapshots.push(snapshot);
    }
    if (snapshots.length === 0) return [];
    const runs = await this.runsOf(principal, found.key);
    const head = snapshots[0] as StateSnapshot;
    const latestCheckpoint = before === undefined;
    const live = latestCheckpoint ? await this.#live(found.latest, head) : undefined;
    return snapshots.map((snapshot, index) => stateView(snapshot, { threadName: name, runs, head: latestCheckpoint && index === 0, ...(index === 0 && live ? { live } : {}) }));
  }
}

/** The fields a search asked for (`select`); all of them by default. */
function select(view: ThreadView, fields: readonly string[] | null | undefined): ThreadView {
  if (!fields || fields.length === 0) return view;
  return Object.fromEntries(Object.entries(view).filter(([key]) => fields.includes(key))) as unknown as ThreadView;
}
