import { type ListTasksRequest, type ListTasksResponse, type Task, TaskState } from "@a2a-js/sdk";
import { LRUCache } from "lru-cache";
import type { ServerCallContext, TaskStore } from "@a2a-js/sdk/server";
import { isTroupeError } from "../../core/errors.js";
import type { RunRecord } from "../../store/index.js";
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

  async list(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    const principal = principalOf(context);
    const pageSize = params.pageSize ?? 50;
    const offset = params.pageToken ? Number.parseInt(params.pageToken, 10) || 0 : 0;
    const { items, total } = await this.#tasks.list(principal, { limit: Math.min(100, pageSize), offset, ...(params.contextId ? { thread_id: params.contextId } : {}) });
    const tasks: Task[] = [];
    for (const record of items) {
      const task = await taskOf(this.#tasks.troupe, record, this.#tasks.isActive(record.id), { artifacts: params.includeArtifacts === true });
      if (params.status !== undefined && params.status !== TaskState.TASK_STATE_UNSPECIFIED && task.status?.state !== params.status) continue;
      tasks.push(task);
    }
    const next = offset + items.length;
    return { tasks, nextPageToken: next < total ? String(next) : "", pageSize, totalSize: total };
  }
}
