import { PassThrough } from "node:stream";
import type { FastifyReply, FastifyRequest } from "fastify";
import { InputError } from "../core/errors.js";

/** A stream further behind than this is closed; the client reconnects with Last-Event-ID and reads the rest from the store. */
const MAX_BUFFERED_BYTES = 1024 * 1024;
const HEARTBEAT_MS = 15_000;
const PAGE = 1_000;

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

export interface EventSource<Event extends { seq: number; type: string }> {
  /** Stored events after a seq, in order, at most `limit`. */
  list(afterSeq: number, limit: number): Promise<Event[]>;
  /** Live events as this server produces them; returns the unsubscribe. */
  subscribe(listener: (event: Event) => void): () => void;
  /**
   * Other processes' events (Postgres): called with the stream's id when some were stored, so the
   * stream reads the store after the last event it sent; returns the unsubscribe.
   */
  follow?(listener: () => void): () => void;
  /** The event after which nothing more comes (a run's or an eval's end). */
  isLast(event: Event): boolean;
  /** Whether the stream has ended for good (nothing is running that could add to it). */
  ended(): Promise<boolean>;
}

/**
 * Answers with a stream's events as Server-Sent Events: the stored ones after `after` first,
 * then live ones in order, without a gap or a repeat between the two; the stream closes after
 * the last event (or once it has ended), and 204 when it has ended with nothing left to send.
 */
export async function sendEventStream<Event extends { seq: number; type: string }>(reply: FastifyReply, after: number, source: EventSource<Event>): Promise<FastifyReply> {
  const first = await source.list(after, PAGE);
  if (first.length === 0 && (await source.ended())) return reply.code(204).send();

  const stream = new PassThrough();
  let lastSeq = after;
  let lastWasFinal = false;
  let closed = false;
  let replaying = true;
  const buffered: Event[] = [];
  const close = (): void => {
    if (closed) return;
    closed = true;
    unsubscribe();
    unfollow();
    clearInterval(heartbeat);
    stream.end();
  };
  const send = (event: Event): void => {
    if (closed || event.seq <= lastSeq) return;
    lastSeq = event.seq;
    stream.write(formatEvent(event));
    lastWasFinal = source.isLast(event);
    if (lastWasFinal) close();
    else if (stream.writableLength > MAX_BUFFERED_BYTES) close();
  };
  // Subscribe before reading the store, so nothing falls between the replay and the live events.
  const unsubscribe = source.subscribe((event) => (replaying ? buffered.push(event) : send(event)));
  // Events stored by another process: read from the store after the last one sent, one read at a time.
  let reading: Promise<void> | undefined;
  let again = false;
  const catchUp = (): void => {
    if (closed) return;
    if (reading) {
      again = true;
      return;
    }
    reading = (async () => {
      do {
        again = false;
        try {
          for (let page = await source.list(lastSeq, PAGE); page.length > 0 && !closed; page = page.length < PAGE ? [] : await source.list(lastSeq, PAGE)) {
            for (const event of page) send(event);
          }
        } catch {
          // the next notification reads again
        }
      } while (again && !closed);
    })().finally(() => (reading = undefined));
  };
  const unfollow = source.follow ? source.follow(() => (replaying ? (again = true) : catchUp())) : () => {};
  const heartbeat = setInterval(() => {
    if (!closed) stream.write(": ping\n\n");
  }, HEARTBEAT_MS);
  heartbeat.unref();
  reply.raw.once("close", close);

  stream.write("retry: 2000\n\n");
  for (let page = first; page.length > 0 && !closed; page = page.length < PAGE ? [] : await source.list(lastSeq, PAGE)) {
    for (const event of page) send(event);
  }
  replaying = false;
  for (const event of buffered.splice(0)) send(event);
  // What another process stored while the replay went on.
  if (source.follow) catchUp();
  if (await source.ended()) {
    // Ended in another process, whose last event may be a moment behind its record: it closes the
    // stream when it arrives (through the notification), or the stream closes in two seconds.
    if (source.follow && !lastWasFinal) setTimeout(close, 2_000).unref();
    else close();
  }

  return reply
    .header("content-type", "text/event-stream; charset=utf-8")
    .header("cache-control", "no-cache, no-transform")
    .header("x-accel-buffering", "no")
    .send(stream);
}

/** The seq to continue after: Last-Event-ID, else `?after=`, else the start. */
export function resumeAfter(request: FastifyRequest, after: number | undefined): number {
  return lastEventId(request.headers["last-event-id"]) ?? after ?? 0;
}
