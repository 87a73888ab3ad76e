import { PassThrough } from "node:stream";
import type { FastifyInstance } from "fastify";
import { InputError } from "../../core/errors.js";
import type { StoredEvent } from "../../core/events.js";
import type { RouteContext } from "../route-context.js";
import { EventsQuery, TaskParams } from "../schemas.js";
import { parseRequestPart } from "../validation.js";

const TERMINAL = new Set(["completed", "failed", "cancelled"]);
/** A stream further behind than this is closed; the client reconnects with Last-Event-ID and reads the rest from the store. */
const MAX_BUFFERED_BYTES = 1024 * 1024;
const HEARTBEAT_MS = 15_000;
const PAGE = 1_000;

/** One event in the SSE wire format; its id is the run's event seq. */
export function formatEvent(event: StoredEvent): string {
  return `id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

function lastEventId(header: string | string[] | undefined): number | undefined {
  if (header === undefined) return undefined;
  const text = (Array.isArray(header) ? header[0] : header)?.trim() ?? "";
  if (!/^\d{1,15}$/.test(text)) throw new InputError("last_event_id_invalid", "Last-Event-ID must be the seq of an event (a whole number)");
  return Number(text);
}

/**
 * GET /tasks/:id/events: the run's events as Server-Sent Events. Stored events after
 * Last-Event-ID (or ?after=) are replayed first, then live ones follow in order; the stream ends
 * after the run ends for good (an interrupted run keeps it open for the resume).
 */
export function registerEventRoutes(api: FastifyInstance, { troupe, tasks, hub, docs }: RouteContext): void {
  docs.add({
    method: "get",
    path: "/api/v1/tasks/{id}/events",
    summary: "The task's events as Server-Sent Events, resumable with Last-Event-ID",
    description:
      "Each event has id (its seq), event (its type: run-start, plan-ready, subtask-start, subtask-end, tool-call, critic-verdict, approval-request, answer-token, answer, run-end, …) and data (the event as JSON). 204 when the task has ended and nothing is left to send.",
    tags: ["tasks"],
    params: TaskParams,
    query: EventsQuery,
    headers: [{ name: "Last-Event-ID", description: "the seq of the last event received; the stream continues after it" }],
    responses: { 200: { description: "an event stream", contentType: "text/event-stream" }, 204: { description: "the task has ended and every event was sent" } },
  });
  api.get("/tasks/:id/events", async (request, reply) => {
    const { id } = parseRequestPart(TaskParams, request.params);
    const query = parseRequestPart(EventsQuery, request.query);
    const record = tasks.record(request.principal, id);
    const after = lastEventId(request.headers["last-event-id"]) ?? query.after ?? 0;
    const done = (): boolean => {
      const now = troupe.store.runs.get(id);
      return now !== undefined && TERMINAL.has(now.status) && !tasks.isActive(id);
    };
    const first = troupe.store.events.list(id, after, PAGE);
    if (first.length === 0 && TERMINAL.has(record.status) && done()) return reply.code(204).send();

    const stream = new PassThrough();
    let lastSeq = after;
    let closed = false;
    let replaying = true;
    const buffered: StoredEvent[] = [];
    const close = (): void => {
      if (closed) return;
      closed = true;
      unsubscribe();
      clearInterval(heartbeat);
      stream.end();
    };
    const send = (event: StoredEvent): void => {
      if (closed || event.seq <= lastSeq) return;
      lastSeq = event.seq;
      stream.write(formatEvent(event));
      if (event.type === "run-end" && TERMINAL.has(event.status)) close();
      else if (stream.writableLength > MAX_BUFFERED_BYTES) close();
    };
    // Subscribe before reading the store, so nothing falls between the replay and the live events.
    const unsubscribe = hub.subscribe(id, (event) => (replaying ? buffered.push(event) : send(event)));
    const heartbeat = setInterval(() => {
      if (!closed) stream.write(": ping\n\n");
    }, HEARTBEAT_MS);
    heartbeat.unref();
    reply.raw.once("close", close);

    stream.write("retry: 2000\n\n");
    for (let page = first; page.length > 0 && !closed; page = page.length < PAGE ? [] : troupe.store.events.list(id, lastSeq, PAGE)) {
      for (const event of page) send(event);
    }
    replaying = false;
    for (const event of buffered.splice(0)) send(event);
    if (done()) close();

    return reply
      .header("content-type", "text/event-stream; charset=utf-8")
      .header("cache-control", "no-cache, no-transform")
      .header("x-accel-buffering", "no")
      .send(stream);
  });
}
