import { type ListTasksRequest, type ListTasksResponse, type Task, TaskState } from "@a2a-js/sdk";
import { RequestMalformedError } from "@a2a-js/sdk/errors";
import { LRUCache } from "lru-cache";
import type { ServerCallContext, TaskStore } from "@a2a-js/sdk/server";
import { isTroupeError } from "../../core/errors.js";
import { threadKey } from "../../core/thread-key.js";
import type { RunFilter, RunRecord } from "../../store/index.js";
import type { Principal } from "../config.js";
import type { TaskService } from "../task-service.js";
import { TERMINAL_STATES, taskOf, taskStateOf } from "./task-view.js";

/** The principal an A2A call acts for (its user's name is the API key's principal, set by the route). */
export function principalOf(context: ServerCallContext | undefined): Principal {
  const name = context?.user?.isAuthenticated ? context.user.userName : undefined;
  if (!name) throw new Error("an A2A call without a principal reached the task store");
  return { id: name };
}

/** How many finished tasks' A2A form (with their files) is kept, so a burst of reads does not build it again. */
const FINISHED_CACHE = 64;
/** How long a finished task's A2A form is kept. */
const FINISHED_TTL_MS = 60_000;

/** The runs in an A2A state (a run waiting for a person is input-required; a person's rejection, rejected). */
function filterOf(state: TaskState): RunFilter {
  switch (state) {
    case TaskState.TASK_STATE_SUBMITTED:
      return { status: "queued" };
    case TaskState.TASK_STATE_WORKING:
      return { statuses: ["running", "interrupted"], interrupt: "unset" };
    case TaskState.TASK_STATE_INPUT_REQUIRED:
      return { status: "interrupted", interrupt: "set" };
    case TaskState.TASK_STATE_COMPLETED:
      return { status: "completed" };
    case TaskState.TASK_STATE_FAILED:
      return { status: "failed", rejected: false };
    case TaskState.TASK_STATE_REJECTED:
      return { status: "failed", rejected: true };
    case TaskState.TASK_STATE_CANCELED:
      return { status: "cancelled" };
    default:
      // auth-required: troupe never asks for it.
      return { statuses: [] };
  }
}

/** A page token: where the last page ended in the listing's order (last changed first), opaque to the client. */
function pageTokenOf(record: RunRecord): string {
  return Buffer.from(JSON.stringify([record.updatedAt, record.id])).toString("base64url");
}

/** The place a page token names; a token troupe did not give is refused. */
function cursorOf(token: string): { updatedAt: number; id: string } {
  const refuse = () => new RequestMalformedError("pageToken is not one this server gave: pass the nextPageToken of the previous page, or none for the first");
  if (!/^[A-Za-z0-9_-]{1,400}$/.test(token)) throw refuse();
  let cursor: unknown;
  try {
    cursor = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
  } catch {
    throw refuse();
  }
  if (!Array.isArray(cursor) || cursor.length !== 2 || !Number.isSafeInteger(cursor[0]) || cursor[0] < 0 || typeof cursor[1] !== "string" || cursor[1] === "") throw refuse();
  return { updatedAt: cursor[0] as number, id: cursor[1] as string };
}

/** RFC 3339 (the ISO 8601 profile A2A's timestamps use): a date, a time and a zone. */
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

/** The time `statusTimestampAfter` names, in ms; anything that is not such a timestamp is refused. */
function timestampOf(value: string): number {
  const ms = TIMESTAMP.test(value) ? Date.parse(value) : Number.NaN;
  if (!Number.isFinite(ms)) throw new RequestMalformedError(`statusTimestampAfter must be an ISO 8601 timestamp such as 2026-01-31T12:00:00Z, got ${JSON.stringify(value).slice(0, 80)}`);
  return ms;
}

/** The checks of a ListTasks request the SDK leaves to the store: its page token and timestamp (before any work). */
export function checkListRequest(params: ListTasksRequest): void {
  if (params.pageToken) cursorOf(params.pageToken);
  if (params.statusTimestampAfter) timestampOf(params.statusTimestampAfter);
}

/**
 * The SDK's task store over troupe's runs: a task is read from its run's record (its status,
 * question, answer and files), so it is always what the run is — after a restart, and for runs
 * started through the REST API. Writes carry nothing a run does not already hold, with one
 * exception: a task saved as canceled while its run has not ended cancels the run (the SDK's
 * cancel of a task no executor is attached to).
 */
export class RunTaskStore implements TaskStore {
  readonly #tasks: TaskService;
  /** Finished tasks by run id (a finished run does not change; its record is still read for each load). */
  readonly #finished = new LRUCache<string, Task>({ max: FINISHED_CACHE, ttl: FINISHED_TTL_MS });

  constructor(tasks: TaskService) {
    this.#tasks = tasks;
  }

  async #record(taskId: string, context: ServerCallContext): Promise<RunRecord | undefined> {
    try {
      return await this.#tasks.record(principalOf(context), taskId);
    } catch (error) {
      if (isTroupeError(error) && error.code === "task_not_found") return undefined;
      throw error;
    }
  }

  async load(taskId: string, context: ServerCallContext): Promise<Task | undefined> {
    // The record every time, even for a finished task kept here: it says whose it is, and that it
    // still exists (a run deleted by any process — DELETE /tasks/:id, `troupe runs delete`, gc — is gone at once).
    const record = await this.#record(taskId, context);
    if (!record) {
      this.#finished.delete(taskId);
      return undefined;
    }
    return structuredClone(await this.taskOf(record));
  }

  /**
   * A run as a task, its record already read (owner checked by the caller). A finished run's task
   * — its answer and files read back — is made once and kept: the SDK reads a task again for each
   * event it handles, and the bridge tells its artifacts from the same copy. Not to be changed.
   */
  async taskOf(record: RunRecord): Promise<Task> {
    const kept = this.#finished.get(record.id);
    if (kept && kept.metadata?.troupe?.status === record.status) return kept;
    const task = await taskOf(this.#tasks.troupe, record, this.#tasks.isActive(record.id));
    if (TERMINAL_STATES.has(task.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED)) this.#finished.set(record.id, task);
    return task;
  }

  async save(task: Task, context: ServerCallContext): Promise<void> {
    if (task.status?.state !== TaskState.TASK_STATE_CANCELED) return;
    const record = await this.#record(task.id, context);
    if (!record || TERMINAL_STATES.has(taskStateOf(record, false))) return;
    await this.#tasks.cancel(principalOf(context), record.id);
  }

  /**
   * The caller's tasks, last changed first (A2A's order), a page at a time by a cursor: the
   * filters (context, state, changed since) are the store's, so every page is full and
   * `totalSize` counts what the filters take. `pageSize` says the size asked for (or 50).
   */
  async list(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    const principal = principalOf(context);
    const pageSize = params.pageSize ?? 50;
    const filter: RunFilter = {
      owner: principal.id,
      ...(params.contextId ? { threadId: threadKey(principal.id, params.contextId) } : {}),
      ...(params.status !== undefined && params.status !== TaskState.TASK_STATE_UNSPECIFIED ? filterOf(params.status) : {}),
      ...(params.statusTimestampAfter ? { updatedSince: timestampOf(params.statusTimestampAfter) } : {}),
    };
    const after = params.pageToken ? cursorOf(params.pageToken) : undefined;
    const [records, totalSize] = await Promise.all([
      this.#tasks.troupe.store.runs.list({ ...filter, order: "updated", limit: pageSize + 1, ...(after ? { after } : {}) }),
      this.#tasks.troupe.store.runs.count(filter),
    ]);
    const page = records.slice(0, pageSize);
    const tasks: Task[] = [];
    for (const record of page) tasks.push(await taskOf(this.#tasks.troupe, record, this.#tasks.isActive(record.id), { artifacts: params.includeArtifacts === true }));
    const last = page.at(-1);
    return { tasks, nextPageToken: records.length > pageSize && last ? pageTokenOf(last) : "", pageSize, totalSize };
  }
}
