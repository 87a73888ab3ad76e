import { z } from "zod";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { threadNameOfRun } from "../../core/thread-key.js";
import type { ApiDocs } from "../openapi.js";
import { originOf } from "../route-context.js";
import { lastEventSeq, type RunFeed } from "../run-follow.js";
import { parseRequestPart } from "../validation.js";
import { documentRoute } from "./route-docs.js";
import { joinStart, sendRunOutput, sendRunStream, type StreamStart } from "./run-stream.js";
import { type AgentRuns, runView, type StartedRun } from "./runs.js";
import type { AgentThreads } from "./threads.js";
import { CancelQuery, JoinQuery, JoinStreamQuery, RunCreate, RunListQuery, RunParams, RunView, STREAM_MODES, type StreamMode, ThreadParams } from "./wire.js";

const StatelessRunParams = z.object({ run_id: z.string().min(1).max(200) });
const LAST_EVENT_ID = { name: "Last-Event-ID", description: "the id of the last event received (<seq>-<index>), or -1 to replay the run's stretch from its start" };

interface Parts {
  feed: RunFeed;
  threads: AgentThreads;
  runs: AgentRuns;
  docs: ApiDocs;
}

/** The modes asked for; none (or an empty list, which useStream sends before its state is read) is `values`, as LangGraph takes it. */
const modesOf = (value: StreamMode | StreamMode[] | null | undefined): Set<StreamMode> => {
  const modes = value === null || value === undefined ? [] : [value].flat();
  return new Set(modes.length > 0 ? modes : ["values"]);
};

/** Where a run is, for the SDK: its record (Content-Location, which `onRunCreated` reads) and its stream (Location, where a dropped stream reconnects); relative to the client's apiUrl. */
function locate(reply: FastifyReply, started: StartedRun, stream: boolean): void {
  const base = `/threads/${encodeURIComponent(threadNameOfRun(started.record))}/runs/${started.record.id}`;
  reply.header("content-location", base);
  if (stream) reply.header("location", `${base}/stream`);
}

/** The protocol's runs: start (and stream or wait on) one, list, read, cancel, join, delete. */
export function registerRunRoutes(scope: FastifyInstance, { feed, threads, runs, docs }: Parts): void {
  const start = (request: FastifyRequest, threadName: string | null): Promise<StartedRun> => runs.create(request.principal, threadName, parseRequestPart(RunCreate, request.body ?? {}), originOf(request));
  const threadOf = (request: FastifyRequest): string => parseRequestPart(ThreadParams, request.params).thread_id;
  const stream = (request: FastifyRequest, reply: FastifyReply, started: StartedRun, begin: StreamStart, modes: Set<StreamMode>, cancelOnDisconnect: boolean) =>
    sendRunStream(reply, { feed, threads, principal: request.principal, record: started.record, start: begin, modes, cancelOnDisconnect, log: request.log });
  const wait = (request: FastifyRequest, reply: FastifyReply, started: StartedRun, cancelOnDisconnect: boolean) =>
    sendRunOutput(reply, { feed, threads, principal: request.principal, record: started.record, startAfter: started.startAfter, cancelOnDisconnect, log: request.log });

  const createDoc = (path: string, operationId: string, summary: string, ok: { description: string; schema?: z.ZodType; contentType?: string }, params?: z.ZodType) =>
    documentRoute(docs, {
      method: "post",
      path,
      operationId,
      summary,
      description:
        "A run with input is a task (input.task, or the last human message of input.messages; troupe's settings in context) queued like any other; a command answers the thread's waiting run (command.resume: approve, reject, edit or an answer) or stops it (command.goto: __end__). Stream modes: values, updates, messages-tuple, messages, custom, events; debug, tasks, checkpoints and tools are taken and send nothing.",
      ...(params ? { params } : {}),
      body: RunCreate,
      ok: { status: 200, ...ok },
      errors: params ? [404, 409, 422] : [404, 422],
    });

  createDoc("/threads/{thread_id}/runs", "createRun", "Agent Protocol: start a run on a thread (or answer its waiting run); it runs in the background", { description: "the run", schema: RunView }, ThreadParams);
  scope.post("/threads/:thread_id/runs", async (request, reply) => {
    const started = await start(request, threadOf(request));
    locate(reply, started, false);
    return runView(started.record, (await feed.tasks.troupe.store.agentProtocol.runs([started.record.id])).get(started.record.id));
  });
  createDoc("/threads/{thread_id}/runs/stream", "streamRun", "Agent Protocol: start a run on a thread (or answer its waiting run) and stream it until it rests", { description: "an event stream", contentType: "text/event-stream" }, ThreadParams);
  scope.post("/threads/:thread_id/runs/stream", async (request, reply) => {
    const body = parseRequestPart(RunCreate, request.body ?? {});
    const started = await runs.create(request.principal, threadOf(request), body, originOf(request));
    locate(reply, started, true);
    return stream(request, reply, started, { startAfter: started.startAfter }, modesOf(body.stream_mode), body.on_disconnect === "cancel");
  });
  createDoc("/threads/{thread_id}/runs/wait", "waitRun", "Agent Protocol: start a run on a thread (or answer its waiting run) and answer with the thread's values once it rests", { description: "the values (__interrupt__ while it waits, __error__ when it failed)", schema: z.record(z.string(), z.unknown()) }, ThreadParams);
  scope.post("/threads/:thread_id/runs/wait", async (request, reply) => {
    const body = parseRequestPart(RunCreate, request.body ?? {});
    const started = await runs.create(request.principal, threadOf(request), body, originOf(request));
    locate(reply, started, false);
    return wait(request, reply, started, body.on_disconnect === "cancel");
  });

  createDoc("/runs", "createStatelessRun", "Agent Protocol: start a run on a new thread of its own", { description: "the run", schema: RunView });
  scope.post("/runs", async (request, reply) => {
    const started = await start(request, null);
    locate(reply, started, false);
    return runView(started.record, (await feed.tasks.troupe.store.agentProtocol.runs([started.record.id])).get(started.record.id));
  });
  createDoc("/runs/stream", "streamStatelessRun", "Agent Protocol: start a run on a new thread of its own and stream it", { description: "an event stream", contentType: "text/event-stream" });
  scope.post("/runs/stream", async (request, reply) => {
    const body = parseRequestPart(RunCreate, request.body ?? {});
    const started = await runs.create(request.principal, null, body, originOf(request));
    locate(reply, started, true);
    return stream(request, reply, started, { startAfter: 0 }, modesOf(body.stream_mode), body.on_disconnect === "cancel");
  });
  createDoc("/runs/wait", "waitStatelessRun", "Agent Protocol: start a run on a new thread of its own and answer with its values once it rests", { description: "the values", schema: z.record(z.string(), z.unknown()) });
  scope.post("/runs/wait", async (request, reply) => {
    const body = parseRequestPart(RunCreate, request.body ?? {});
    const started = await runs.create(request.principal, null, body, originOf(request));
    locate(reply, started, false);
    return wait(request, reply, started, body.on_disconnect === "cancel");
  });

  documentRoute(docs, {
    method: "get",
    path: "/threads/{thread_id}/runs",
    operationId: "listRuns",
    summary: "Agent Protocol: a thread's runs, newest first",
    params: ThreadParams,
    query: RunListQuery,
    ok: { status: 200, description: "the runs", schema: z.array(RunView) },
    errors: [404],
  });
  scope.get("/threads/:thread_id/runs", async (request) => {
    const query = parseRequestPart(RunListQuery, request.query);
    return runs.list(request.principal, threadOf(request), { ...(query.limit ? { limit: query.limit } : {}), ...(query.offset ? { offset: query.offset } : {}), ...(query.status ? { status: query.status } : {}) });
  });

  documentRoute(docs, { method: "get", path: "/threads/{thread_id}/runs/{run_id}", operationId: "getRun", summary: "Agent Protocol: a run and its status", params: RunParams, ok: { status: 200, description: "the run", schema: RunView }, errors: [404] });
  scope.get("/threads/:thread_id/runs/:run_id", async (request) => {
    const { thread_id, run_id } = parseRequestPart(RunParams, request.params);
    const [view] = await runs.views([await runs.runOf(request.principal, thread_id, run_id)]);
    return view;
  });

  documentRoute(docs, {
    method: "post",
    path: "/threads/{thread_id}/runs/{run_id}/cancel",
    operationId: "cancelRun",
    summary: "Agent Protocol: cancel a queued, running or waiting run (wait=1: answer once it stopped); action rollback is refused",
    params: RunParams,
    query: CancelQuery,
    ok: { status: 202, description: "cancelling (204 with wait=1: cancelled)" },
    errors: [404, 409, 422],
  });
  scope.post("/threads/:thread_id/runs/:run_id/cancel", async (request, reply) => {
    const { thread_id, run_id } = parseRequestPart(RunParams, request.params);
    const query = parseRequestPart(CancelQuery, request.query);
    await runs.cancel(request.principal, thread_id, run_id, query.action ?? "interrupt");
    return reply.code(query.wait ? 204 : 202).send();
  });

  documentRoute(docs, {
    method: "get",
    path: "/threads/{thread_id}/runs/{run_id}/join",
    operationId: "joinRun",
    summary: "Agent Protocol: wait for a run to rest, and answer with the thread's values",
    params: RunParams,
    query: JoinQuery,
    ok: { status: 200, description: "the values (__interrupt__ while it waits, __error__ when it failed)", schema: z.record(z.string(), z.unknown()) },
    errors: [404],
  });
  scope.get("/threads/:thread_id/runs/:run_id/join", async (request, reply) => {
    const { thread_id, run_id } = parseRequestPart(RunParams, request.params);
    const query = parseRequestPart(JoinQuery, request.query);
    const record = await runs.runOf(request.principal, thread_id, run_id);
    return wait(request, reply, { record, startAfter: await lastEventSeq(feed, record.id) }, query.cancel_on_disconnect ?? false);
  });

  const joinStream = async (request: FastifyRequest, reply: FastifyReply, threadName: string | null, runId: string): Promise<FastifyReply> => {
    const query = parseRequestPart(JoinStreamQuery, request.query);
    const record = await runs.runOf(request.principal, threadName, runId);
    const header = request.headers["last-event-id"];
    const begin = await joinStart(feed, record.id, Array.isArray(header) ? header[0] : header);
    return stream(request, reply, { record, startAfter: begin.startAfter }, begin, modesOf(query.stream_mode), query.cancel_on_disconnect ?? false);
  };
  const joinDoc = { query: JoinStreamQuery, headers: [LAST_EVENT_ID], ok: { status: 200, description: "an event stream", contentType: "text/event-stream" }, errors: [404] };
  documentRoute(docs, {
    method: "get",
    path: "/threads/{thread_id}/runs/{run_id}/stream",
    operationId: "joinRunStream",
    summary: `Agent Protocol: a run's stream — what comes from now on, or, with Last-Event-ID, from a place in it (modes: ${STREAM_MODES.join(", ")})`,
    params: RunParams,
    ...joinDoc,
  });
  scope.get("/threads/:thread_id/runs/:run_id/stream", async (request, reply) => {
    const { thread_id, run_id } = parseRequestPart(RunParams, request.params);
    return joinStream(request, reply, thread_id, run_id);
  });
  documentRoute(docs, { method: "get", path: "/runs/{run_id}/stream", operationId: "joinStatelessRunStream", summary: "Agent Protocol: a run's stream, by the run's id alone", params: StatelessRunParams, ...joinDoc });
  scope.get("/runs/:run_id/stream", async (request, reply) => joinStream(request, reply, null, parseRequestPart(StatelessRunParams, request.params).run_id));

  documentRoute(docs, {
    method: "delete",
    path: "/threads/{thread_id}/runs/{run_id}",
    operationId: "deleteRun",
    summary: "Agent Protocol: delete a finished run with its checkpoints, events and results",
    params: RunParams,
    ok: { status: 204, description: "deleted" },
    errors: [404, 409],
  });
  scope.delete("/threads/:thread_id/runs/:run_id", async (request, reply) => {
    const { thread_id, run_id } = parseRequestPart(RunParams, request.params);
    await runs.remove(request.principal, thread_id, run_id);
    return reply.code(204).send();
  });
}
