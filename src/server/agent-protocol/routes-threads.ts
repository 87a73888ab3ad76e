import { z } from "zod";
import type { FastifyInstance } from "fastify";
import { InputError } from "../../core/errors.js";
import type { ApiDocs } from "../openapi.js";
import { parseRequestPart } from "../validation.js";
import { documentRoute } from "./route-docs.js";
import type { AgentThreads } from "./threads.js";
import { CheckpointParams, HistoryRequest, StateAt, StateQuery, ThreadCount, ThreadCreate, ThreadParams, ThreadPatch, ThreadSearch, ThreadStateView, ThreadView } from "./wire.js";

const HistoryQuery = z.object({ limit: z.coerce.number().int().min(1).max(1_000).optional(), before: z.string().min(1).max(200).optional() });

/** The protocol's threads: make, search, count, read, change metadata, delete; state and history. */
export function registerThreadRoutes(scope: FastifyInstance, { threads, docs }: { threads: AgentThreads; docs: ApiDocs }): void {
  documentRoute(docs, {
    method: "post",
    path: "/threads",
    operationId: "createThread",
    summary: "Agent Protocol: make a thread (its name: thread_id, or a new UUID), with metadata",
    body: ThreadCreate,
    ok: { status: 200, description: "the thread", schema: ThreadView },
    errors: [409, 422],
  });
  scope.post("/threads", async (request) => {
    const body = parseRequestPart(ThreadCreate, request.body ?? {});
    if (body.supersteps !== undefined && body.supersteps !== null) throw new InputError("agent_protocol_unsupported", "supersteps: a troupe thread's state comes from its runs only", { field: "supersteps" });
    if (body.ttl !== undefined && body.ttl !== null) throw new InputError("agent_protocol_unsupported", "ttl: troupe keeps a thread until it is deleted, or its runs are collected (troupe gc)", { field: "ttl" });
    return threads.create(request.principal, body);
  });

  documentRoute(docs, {
    method: "post",
    path: "/threads/search",
    operationId: "searchThreads",
    summary: "Agent Protocol: the caller's threads (made here or by the REST API, MCP, A2A, schedules), filtered by metadata, status or ids, sorted and paged",
    body: ThreadSearch,
    ok: { status: 200, description: "a page of threads", schema: z.array(ThreadView) },
    errors: [422],
  });
  scope.post("/threads/search", async (request) => threads.search(request.principal, parseRequestPart(ThreadSearch, request.body ?? {})));

  documentRoute(docs, { method: "post", path: "/threads/count", operationId: "countThreads", summary: "Agent Protocol: how many of the caller's threads match", body: ThreadCount, ok: { status: 200, description: "a count", schema: z.number() }, errors: [422] });
  scope.post("/threads/count", async (request) => threads.count(request.principal, parseRequestPart(ThreadCount, request.body ?? {})));

  documentRoute(docs, {
    method: "get",
    path: "/threads/{thread_id}",
    operationId: "getThread",
    summary: "Agent Protocol: a thread, with its values and what it waits on",
    params: ThreadParams,
    ok: { status: 200, description: "the thread", schema: ThreadView },
    errors: [404],
  });
  scope.get("/threads/:thread_id", async (request) => threads.view(request.principal, parseRequestPart(ThreadParams, request.params).thread_id));

  documentRoute(docs, {
    method: "patch",
    path: "/threads/{thread_id}",
    operationId: "patchThread",
    summary: "Agent Protocol: merge keys into a thread's metadata",
    params: ThreadParams,
    body: ThreadPatch,
    ok: { status: 200, description: "the thread", schema: ThreadView },
    errors: [404, 422],
  });
  scope.patch("/threads/:thread_id", async (request) => {
    const { thread_id } = parseRequestPart(ThreadParams, request.params);
    const body = parseRequestPart(ThreadPatch, request.body ?? {});
    if (body.ttl !== undefined && body.ttl !== null) throw new InputError("agent_protocol_unsupported", "ttl: troupe keeps a thread until it is deleted, or its runs are collected (troupe gc)", { field: "ttl" });
    return threads.patch(request.principal, thread_id, body.metadata ?? {});
  });

  documentRoute(docs, {
    method: "delete",
    path: "/threads/{thread_id}",
    operationId: "deleteThread",
    summary: "Agent Protocol: delete a thread, its runs (all stopped) and checkpoints",
    params: ThreadParams,
    ok: { status: 204, description: "deleted" },
    errors: [404, 409],
  });
  scope.delete("/threads/:thread_id", async (request, reply) => {
    await threads.remove(request.principal, parseRequestPart(ThreadParams, request.params).thread_id);
    return reply.code(204).send();
  });

  documentRoute(docs, {
    method: "get",
    path: "/threads/{thread_id}/state",
    operationId: "getThreadState",
    summary: "Agent Protocol: a thread's state — its latest checkpoint's values, next nodes, tasks and the interrupts it waits on",
    params: ThreadParams,
    query: StateQuery,
    ok: { status: 200, description: "the state", schema: ThreadStateView },
    errors: [404],
  });
  scope.get("/threads/:thread_id/state", async (request) => {
    parseRequestPart(StateQuery, request.query);
    return threads.state(request.principal, parseRequestPart(ThreadParams, request.params).thread_id);
  });

  documentRoute(docs, {
    method: "get",
    path: "/threads/{thread_id}/state/{checkpoint_id}",
    operationId: "getThreadStateAt",
    summary: "Agent Protocol: a thread's state at one of its checkpoints",
    params: CheckpointParams,
    query: StateQuery,
    ok: { status: 200, description: "the state", schema: ThreadStateView },
    errors: [404],
  });
  scope.get("/threads/:thread_id/state/:checkpoint_id", async (request) => {
    const { thread_id, checkpoint_id } = parseRequestPart(CheckpointParams, request.params);
    parseRequestPart(StateQuery, request.query);
    return threads.state(request.principal, thread_id, checkpoint_id);
  });

  documentRoute(docs, {
    method: "post",
    path: "/threads/{thread_id}/state/checkpoint",
    operationId: "getThreadStateAtCheckpoint",
    summary: "Agent Protocol: a thread's state at the checkpoint the body names",
    params: ThreadParams,
    body: StateAt,
    ok: { status: 200, description: "the state", schema: ThreadStateView },
    errors: [404],
  });
  scope.post("/threads/:thread_id/state/checkpoint", async (request) => {
    const { thread_id } = parseRequestPart(ThreadParams, request.params);
    const body = parseRequestPart(StateAt, request.body ?? {});
    return threads.state(request.principal, thread_id, body.checkpoint.checkpoint_id ?? undefined);
  });

  documentRoute(docs, {
    method: "post",
    path: "/threads/{thread_id}/history",
    operationId: "getThreadHistory",
    summary: "Agent Protocol: a thread's checkpoints, newest first, as states (limit, before a checkpoint)",
    params: ThreadParams,
    body: HistoryRequest,
    ok: { status: 200, description: "the states", schema: z.array(ThreadStateView) },
    errors: [404, 422],
  });
  scope.post("/threads/:thread_id/history", async (request) => {
    const { thread_id } = parseRequestPart(ThreadParams, request.params);
    return threads.history(request.principal, thread_id, parseRequestPart(HistoryRequest, request.body ?? {}));
  });
  documentRoute(docs, {
    method: "get",
    path: "/threads/{thread_id}/history",
    operationId: "listThreadHistory",
    summary: "Agent Protocol: a thread's checkpoints, newest first (the protocol's GET form)",
    params: ThreadParams,
    query: HistoryQuery,
    ok: { status: 200, description: "the states", schema: z.array(ThreadStateView) },
    errors: [404],
  });
  scope.get("/threads/:thread_id/history", async (request) => {
    const { thread_id } = parseRequestPart(ThreadParams, request.params);
    const query = parseRequestPart(HistoryQuery, request.query);
    return threads.history(request.principal, thread_id, { ...(query.limit ? { limit: query.limit } : {}), ...(query.before ? { before: query.before } : {}) });
  });
}
