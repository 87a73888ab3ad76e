import type { FastifyInstance } from "fastify";
import type { z } from "zod";
import { ok, envelopeOf } from "../envelope.js";
import { originOf, type RouteContext } from "../route-context.js";
import { ExecuteBody } from "../run-request-wire.js";
import { IdempotencyKey, MAX_TASK_OFFSET, ResumeBody, TaskAccepted, TaskList, TaskListQuery, TaskParams, TaskView } from "../schemas.js";
import { taskSummary } from "../task-views.js";
import { parseRequestPart } from "../validation.js";
import { InputError } from "../../core/errors.js";
import { threadNameOfRun } from "../../core/thread-key.js";
import type { RunStatus } from "../../core/run.js";
import type { RunRecord } from "../../store/index.js";

/** The short answer to a submit, resume or cancel: which task, on which thread, in which state. */
function taskState(record: RunRecord, status: RunStatus = record.status): z.infer<typeof TaskAccepted> {
  return { task_id: record.id, thread_id: threadNameOfRun(record), status };
}

/** POST /execute, GET /tasks, GET /tasks/:id, POST /tasks/:id/resume, POST /tasks/:id/cancel. */
export function registerTaskRoutes(api: FastifyInstance, { tasks, docs }: RouteContext): void {
  docs.add({
    method: "post",
    path: "/api/v1/execute",
    operationId: "submitTask",
    summary: "Submit a task; it runs in the background",
    description: "Answers 202 as soon as the task is stored. A replay with the same Idempotency-Key returns the same task; the same key with another body is 422.",
    tags: ["tasks"],
    body: ExecuteBody,
    headers: [{ name: "Idempotency-Key", description: "makes a retried submission return the task the first one created" }],
    responses: { 202: { description: "accepted", schema: envelopeOf(TaskAccepted) } },
    errors: ["idempotency_key_invalid", "idempotency_key_reused", "context_too_large", "invalid_request", "invalid_output_schema", "webhook_refused", "thread_not_found", "thread_busy"],
  });
  api.post("/execute", async (request, reply) => {
    const body = parseRequestPart(ExecuteBody, request.body);
    const header = request.headers["idempotency-key"];
    let idempotencyKey: string | undefined;
    if (header !== undefined) {
      const parsed = IdempotencyKey.safeParse(Array.isArray(header) ? header[0] : header);
      if (!parsed.success) throw new InputError("idempotency_key_invalid", parsed.error.issues[0]?.message ?? "invalid Idempotency-Key");
      idempotencyKey = parsed.data;
    }
    const { record, replayed } = await tasks.submit(request.principal, body, idempotencyKey, originOf(request));
    reply.code(202).header("location", `/api/v1/tasks/${record.id}`);
    if (replayed) reply.header("idempotent-replayed", "true");
    return ok(
      taskState(record),
      replayed ? "a replay: the task this Idempotency-Key created" : "accepted: the task runs in the background",
    );
  });

  docs.add({
    method: "get",
    path: "/api/v1/tasks",
    operationId: "listTasks",
    summary: "The caller's tasks, newest first",
    description: `A page at a time: follow next_cursor (each page costs the same however deep); offset goes back at most ${MAX_TASK_OFFSET} tasks. total counts at most 10,000 (total_exact false beyond).`,
    tags: ["tasks"],
    query: TaskListQuery,
    responses: { 200: { description: "a page of tasks", schema: envelopeOf(TaskList) } },
  });
  api.get("/tasks", async (request) => {
    const query = parseRequestPart(TaskListQuery, request.query);
    const { items, total, totalExact, nextCursor } = await tasks.list(request.principal, query);
    const next = query.offset + items.length;
    // Offsets go as deep as MAX_TASK_OFFSET; past it, and after a cursor, the next page is by cursor only.
    const nextOffset = nextCursor !== null && query.cursor === undefined && next <= MAX_TASK_OFFSET ? next : null;
    return ok({ items: items.map(taskSummary), total, total_exact: totalExact, limit: query.limit, offset: query.offset, next_offset: nextOffset, next_cursor: nextCursor });
  });

  docs.add({
    method: "get",
    path: "/api/v1/tasks/{id}",
    operationId: "getTask",
    summary: "A task: status, progress, what it waits for, result, stop reason, metrics",
    tags: ["tasks"],
    params: TaskParams,
    responses: { 200: { description: "the task", schema: envelopeOf(TaskView) } },
    errors: ["task_not_found"],
  });
  api.get("/tasks/:id", async (request) => {
    const { id } = parseRequestPart(TaskParams, request.params);
    return ok(await tasks.view(request.principal, id));
  });

  docs.add({
    method: "post",
    path: "/api/v1/tasks/{id}/resume",
    operationId: "resumeTask",
    summary: "Answer a task that waits for a person: approve, reject, edit or answer (a tool call waiting for approval: approve or reject)",
    tags: ["tasks"],
    params: TaskParams,
    body: ResumeBody,
    responses: { 202: { description: "the task continues", schema: envelopeOf(TaskAccepted) } },
    errors: ["task_not_found", "task_not_waiting", "interrupt_not_pending", "answer_required", "decision_invalid", "plan_required", "eval_case"],
  });
  api.post("/tasks/:id/resume", async (request, reply) => {
    const { id } = parseRequestPart(TaskParams, request.params);
    const body = parseRequestPart(ResumeBody, request.body);
    const record = await tasks.resume(request.principal, id, body);
    reply.code(202);
    return ok(taskState(record, tasks.isActive(record.id) ? "running" : record.status), `${body.decision}: the task continues`);
  });

  docs.add({
    method: "post",
    path: "/api/v1/tasks/{id}/cancel",
    operationId: "cancelTask",
    summary: "Cancel a queued, running or waiting task",
    tags: ["tasks"],
    params: TaskParams,
    responses: { 200: { description: "the task as it stands after the cancel", schema: envelopeOf(TaskAccepted) } },
    errors: ["task_not_found", "task_finished", "task_not_cancellable", "eval_case"],
  });
  api.post("/tasks/:id/cancel", async (request) => {
    const { id } = parseRequestPart(TaskParams, request.params);
    const record = await tasks.cancel(request.principal, id);
    return ok(taskState(record), "cancelled");
  });
}
