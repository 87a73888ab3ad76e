import type { FastifyRequest } from "fastify";
import { InputError } from "../core/errors.js";

/** One event in the SSE wire format; its id is the event's seq. */
export function formatEvent(event: { seq: number; type: string }): string {
  return `id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
}

/** The seq a reconnecting client last received (Last-Event-ID), or undefined. */
export function lastEventId(header: string | string[] | undefined): number | undefined {
  if (header === undefined) return undefined;
  const text = (Array.isArray(header) ? header[0] : header)?.trim() ?? "";
  if (!/^\d{1,15}$/.test(text)) throw new InputError("last_event_id_invalid", "Last-Event-ID must be the seq of an event (a whole number)");
  return Number(text);
}

/** The seq to continue after: Last-Event-ID, else `?after=`, else the start. */
export function resumeAfter(request: FastifyRequest, after: number | undefined): number {
  return lastEventId(request.headers["last-event-id"]) ?? after ?? 0;
}
