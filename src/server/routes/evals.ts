import type { FastifyInstance } from "fastify";
import type { StoredEvalEvent } from "../../eval/events.js";
import { ok, envelopeOf } from "../envelope.js";
import type { RouteContext } from "../route-context.js";
import { EvalAccepted, EvalBody, EvalList, EvalListQuery, EvalView, EventsQuery, TaskParams } from "../schemas.js";
import { EventFanOut } from "../event-fan-out.js";
import { resumeAfter } from "../sse.js";
import { parseRequestPart } from "../validation.js";

const FINISHED = new Set(["completed", "failed", "cancelled"]);

/** POST /evals, GET /evals, GET /evals/:id, GET /evals/:id/events, POST /evals/:id/cancel. */
export function registerEvalRoutes(api: FastifyInstance, { evals, evalHub, troupe, docs }: RouteContext): void {
  docs.add({
    method: "post",
    path: "/api/v1/evals", operationId: "startEval", errors: ["suite_invalid", "suite_empty", "suite_too_large"],
    summary: "Run a suite of cases, as `troupe eval` does; it runs in the background",
    description:
      "Answers 202 once the eval is stored. Each case runs in its own workspace as a task of the caller's (GET /tasks/{run_id} opens it); progress streams from GET /evals/{id}/events. A bad case is a 400 naming its line (or index) and key.",
    tags: ["evals"],
    body: EvalBody,
    responses: { 202: { description: "accepted", schema: envelopeOf(EvalAccepted) } },
  });
  api.post("/evals", async (request, reply) => {
    const body = parseRequestPart(EvalBody, request.body);
    const record = await evals.submit(request.principal, body);
    reply.code(202).header("location", `/api/v1/evals/${record.id}`);
    return ok({ eval_id: record.id, name: record.name, status: record.status, total: record.total }, "accepted: the eval runs in the background");
  });

  docs.add({
    method: "get",
    path: "/api/v1/evals", operationId: "listEvals",
    summary: "The caller's evals, newest first",
    tags: ["evals"],
    query: EvalListQuery,
    responses: { 200: { description: "a page of evals", schema: envelopeOf(EvalList) } },
  });
  api.get("/evals", async (request) => {
    const query = parseRequestPart(EvalListQuery, request.query);
    const { items, total } = await evals.list(request.principal, query);
    const next = query.offset + items.length;
    return ok({ items, total, limit: query.limit, offset: query.offset, next_offset: next < total ? next : null });
  });

  docs.add({
    method: "get",
    path: "/api/v1/evals/{id}", operationId: "getEval", errors: ["eval_not_found"],
    summary: "An eval: its status, pass rate, each case's verdict with its run, and the results once finished",
    tags: ["evals"],
    params: TaskParams,
    responses: { 200: { description: "the eval", schema: envelopeOf(EvalView) } },
  });
  api.get("/evals/:id", async (request) => {
    const { id } = parseRequestPart(TaskParams, request.params);
    return ok(await evals.view(request.principal, id));
  });

  docs.add({
    method: "get",
    path: "/api/v1/evals/{id}/events", operationId: "streamEvalEvents", errors: ["eval_not_found", "last_event_id_invalid"],
    summary: "The eval's progress as Server-Sent Events, resumable with Last-Event-ID",
    description: "Events: eval-start, case-start (with the case's run_id), case-end (its verdict, and the tally so far), eval-end. 204 when the eval has ended and nothing is left to send.",
    tags: ["evals"],
    params: TaskParams,
    query: EventsQuery,
    headers: [{ name: "Last-Event-ID", description: "the seq of the last event received; the stream continues after it" }],
    responses: { 200: { description: "an event stream", contentType: "text/event-stream" }, 204: { description: "the eval has ended and every event was sent" } },
  });
  const { events } = troupe.store;
  const streams = new EventFanOut<StoredEvalEvent>({
    list: (evalId, afterSeq, limit) => evals.events(evalId, afterSeq, limit),
    subscribe: (evalId, listener) => evalHub.subscribe(evalId, listener),
    ...(events.follow ? { follow: (listener: (evalId: string) => void) => events.follow?.call(events, listener) ?? (() => {}) } : {}),
    isLast: (event) => event.type === "eval-end",
    ended: async (evalId) => FINISHED.has((await troupe.store.evals.get(evalId))?.status ?? "") && !evals.isActive(evalId),
  });
  api.get("/evals/:id/events", async (request, reply) => {
    const { id } = parseRequestPart(TaskParams, request.params);
    const query = parseRequestPart(EventsQuery, request.query);
    await evals.record(request.principal, id);
    return streams.send(reply, id, resumeAfter(request, query.after));
  });

  docs.add({
    method: "post",
    path: "/api/v1/evals/{id}/cancel", operationId: "cancelEval", errors: ["eval_not_found", "eval_finished"],
    summary: "Cancel a queued or running eval (its running cases' runs are cancelled)",
    tags: ["evals"],
    params: TaskParams,
    responses: { 200: { description: "the eval as it stands after the cancel", schema: envelopeOf(EvalAccepted) } },
  });
  api.post("/evals/:id/cancel", async (request) => {
    const { id } = parseRequestPart(TaskParams, request.params);
    const record = await evals.cancel(request.principal, id);
    return ok({ eval_id: record.id, name: record.name, status: record.status, total: record.total }, "cancelled");
  });
}
