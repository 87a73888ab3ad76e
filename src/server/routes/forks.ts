import type { FastifyInstance } from "fastify";
import { NotFoundError } from "../../core/errors.js";
import { threadKey, threadNameOfRun } from "../../core/thread-key.js";
import type { GcReport } from "../../core/retention.js";
import { envelopeOf, ok } from "../envelope.js";
import { originOf, type RouteContext } from "../route-context.js";
import { DeletionReport, ForkAccepted, ForkBody, TaskParams, ThreadHistory, ThreadParams } from "../schemas.js";
import { parseRequestPart } from "../validation.js";

function deletion(report: GcReport) {
  return {
    runs: report.runs,
    threads_deleted: report.threads.deleted,
    threads_pruned: report.threads.pruned,
    events: report.events,
    stash_values: report.stashValues,
    webhook_deliveries: report.webhookDeliveries,
    bytes_before: report.bytesBefore,
    bytes_after: report.bytesAfter,
  };
}

/** Time travel and retention over HTTP: fork a task, a thread's history, delete a task or a thread (the caller's only). */
export function registerForkRoutes(api: FastifyInstance, { troupe, tasks, docs }: RouteContext): void {
  docs.add({
    method: "post",
    path: "/api/v1/tasks/{id}/fork", operationId: "forkTask", errors: ["task_not_found", "invalid_fork", "invalid_plan", "checkpoint_of_another_run", "checkpoint_at_end", "checkpoint_at_start", "no_checkpoints", "unknown_fork_point", "run_active", "thread_in_use", "eval_case"],
    summary: "Fork a task from a subtask or a checkpoint onto a new thread: finished results upstream are kept, the rest runs",
    tags: ["tasks"],
    params: TaskParams,
    body: ForkBody,
    responses: { 202: { description: "the fork is queued", schema: envelopeOf(ForkAccepted) } },
  });
  api.post("/tasks/:id/fork", async (request, reply) => {
    const { id } = parseRequestPart(TaskParams, request.params);
    const body = parseRequestPart(ForkBody, request.body);
    const original = await tasks.record(request.principal, id);
    const record = await troupe.enqueueFork(
      original.id,
      { from: body.from, ...(body.plan ? { plan: body.plan } : {}), ...(body.args ? { args: body.args } : {}), ...(body.thread_id ? { threadId: body.thread_id } : {}) },
      { owner: request.principal.id },
    );
    tasks.accepted(record, originOf(request));
    reply.code(202).header("location", `/api/v1/tasks/${record.id}`);
    const origin = record.forkedFrom;
    return ok(
      {
        task_id: record.id,
        thread_id: threadNameOfRun(record),
        status: record.status,
        forked_from: { task_id: original.id, thread_id: threadNameOfRun(original), checkpoint_id: origin?.checkpointId ?? "", subtask_id: origin?.subtaskId ?? null },
      },
      "forked: the new task runs in the background",
    );
  });

  docs.add({
    method: "get",
    path: "/api/v1/threads/{id}/history", operationId: "getThreadHistory", errors: ["thread_not_found"],
    summary: "A thread's checkpoints, oldest first: what each followed and what runs next (fork from one with POST /tasks/{id}/fork)",
    tags: ["tasks"],
    params: ThreadParams,
    responses: { 200: { description: "the checkpoints", schema: envelopeOf(ThreadHistory) } },
  });
  api.get("/threads/:id/history", async (request) => {
    const { id } = parseRequestPart(ThreadParams, request.params);
    // The caller's thread of that name: kept under its key (core/thread-key.ts).
    const key = threadKey(request.principal.id, id);
    const runs = await troupe.store.runs.list({ threadId: key, limit: 1_000 });
    if (runs.length === 0 || runs.some((run) => run.owner !== request.principal.id)) throw new NotFoundError("thread_not_found", `there is no thread ${id} of yours`, { thread_id: id });
    const entries = await troupe.history(key);
    return ok({
      thread_id: id,
      checkpoints: entries.map((entry) => ({
        checkpoint_id: entry.checkpointId,
        parent_id: entry.parentId,
        created_at: entry.createdAt,
        step: entry.step,
        source: entry.source,
        task_id: entry.runId,
        after: entry.after,
        ended: entry.ended,
        next: entry.next,
        waiting: entry.waiting,
      })),
    });
  });

  docs.add({
    method: "delete",
    path: "/api/v1/tasks/{id}", operationId: "deleteTask", errors: ["task_not_found", "run_active"],
    summary: "Delete a finished task with its checkpoints, events and stash values (a queued, running or waiting task is refused: cancel it first)",
    tags: ["tasks"],
    params: TaskParams,
    responses: { 200: { description: "what was removed", schema: envelopeOf(DeletionReport) } },
  });
  api.delete("/tasks/:id", async (request) => {
    const { id } = parseRequestPart(TaskParams, request.params);
    return ok(deletion(await troupe.deleteRun(id, { owner: request.principal.id })), "deleted");
  });

  docs.add({
    method: "delete",
    path: "/api/v1/threads/{id}", operationId: "deleteThread", errors: ["thread_not_found", "thread_busy"],
    summary: "Delete a thread: every task on it (all stopped) and its checkpoints",
    tags: ["tasks"],
    params: ThreadParams,
    responses: { 200: { description: "what was removed", schema: envelopeOf(DeletionReport) } },
  });
  api.delete("/threads/:id", async (request) => {
    const { id } = parseRequestPart(ThreadParams, request.params);
    return ok(deletion(await troupe.deleteThread(threadKey(request.principal.id, id), { owner: request.principal.id })), "deleted");
  });
}
