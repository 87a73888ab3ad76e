import type { FastifyInstance } from "fastify";
import type { StoredEvent } from "../../core/events.js";
import type { RouteContext } from "../route-context.js";
import { EventsQuery, TaskParams } from "../schemas.js";
import { EventFanOut } from "../event-fan-out.js";
import { resumeAfter } from "../sse.js";
import { parseRequestPart } from "../validation.js";

const TERMINAL = new Set(["completed", "failed", "cancelled"]);

/**
 * GET /tasks/:id/events: the run's events as Server-Sent Events. Stored events after
 * Last-Event-ID (or ?after=) are replayed first, then live ones follow in order; the stream ends
 * after the run ends for good (an interrupted run keeps it open for the resume).
 */
export function registerEventRoutes(api: FastifyInstance, { troupe, tasks, hub, docs }: RouteContext): void {
  docs.add({
    method: "get",
    path: "/api/v1/tasks/{id}/events", operationId: "streamTaskEvents", errors: ["task_not_found", "last_event_id_invalid"],
    summary: "The task's events as Server-Sent Events, resumable with Last-Event-ID",
    description:
      "Each event has id (its seq), event (its type: run-start, plan-ready, subtask-start, subtask-end, tool-call, critic-verdict, approval-request, answer-token, answer, run-end, …) and data (the event as JSON). 204 when the task has ended and nothing is left to send.",
    tags: ["tasks"],
    params: TaskParams,
    query: EventsQuery,
    headers: [{ name: "Last-Event-ID", description: "the seq of the last event received; the stream continues after it" }],
    responses: { 200: { description: "an event stream", contentType: "text/event-stream" }, 204: { description: "the task has ended and every event was sent" } },
  });
  // One fan-out for every run's watchers: each run watched has one subscription and one reader of the store.
  const { events } = troupe.store;
  const streams = new EventFanOut<StoredEvent>({
    list: (runId, afterSeq, limit) => events.list(runId, afterSeq, limit),
    subscribe: (runId, listener) => hub.subscribe(runId, listener),
    // Postgres: a worker in another process drives the run; its events arrive through the store.
    ...(events.follow ? { follow: (listener: (runId: string) => void) => events.follow?.call(events, listener) ?? (() => {}) } : {}),
    // Postgres: the runs notified together are read together.
    ...(events.listMany ? { listMany: (after: ReadonlyMap<string, number>, limit: number) => events.listMany?.call(events, after, limit) ?? Promise.resolve(new Map()) } : {}),
    isLast: (event) => event.type === "run-end" && TERMINAL.has(event.status),
    ended: async (runId) => {
      const now = await troupe.store.runs.get(runId);
      // A drive that wrote the run's end status appends its run-end after that write's sync: not over until it has.
      return now !== undefined && TERMINAL.has(now.status) && !tasks.holdsDrive(runId);
    },
  });
  api.get("/tasks/:id/events", async (request, reply) => {
    const { id } = parseRequestPart(TaskParams, request.params);
    const query = parseRequestPart(EventsQuery, request.query);
    await tasks.record(request.principal, id);
    return streams.send(reply, id, resumeAfter(request, query.after));
  });
}
