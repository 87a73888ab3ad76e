import { PassThrough } from "node:stream";
import type { FastifyReply } from "fastify";
import { formatEvent } from "./sse.js";

/** A stream further behind than this is closed; the client reconnects with Last-Event-ID and reads the rest from the store. */
const MAX_BUFFERED_BYTES = 1024 * 1024;
const HEARTBEAT_MS = 15_000;
const PAGE = 1_000;
/** Events a channel keeps formatted, for subscribers joining just behind it. */
const RECENT = 256;

/** Where a kind of stream (a run's events, an eval's) comes from, by its key (the run's or eval's id). */
export interface StreamSource<Event extends { seq: number; type: string }> {
  /** Stored events of a stream after a seq, in order, at most `limit`. */
  list(key: string, afterSeq: number, limit: number): Promise<Event[]>;
  /** Live events of a stream as this server produces them; returns the unsubscribe. */
  subscribe(key: string, listener: (event: Event) => void): () => void;
  /**
   * Other processes' events (Postgres): called with a stream's key when some were stored (an empty
   * key: any stream may have missed some); returns the unsubscribe.
   */
  follow?(listener: (key: string) => void): () => void;
  /** The event after which nothing more comes (a run's or an eval's end). */
  isLast(event: Event): boolean;
  /** Whether the stream has ended for good (nothing is running that could add to it). */
  ended(key: string): Promise<boolean>;
}

/** One SSE response. */
class Subscriber {
  readonly stream = new PassThrough();
  lastSeq: number;
  /** Live events that arrived while it replayed the store, sent once it has. */
  waiting: Array<{ seq: number; text: string; last: boolean }> | undefined = [];
  closed = false;
  lastWasFinal = false;
  readonly #onClose: () => void;

  constructor(after: number, onClose: () => void) {
    this.lastSeq = after;
    this.#onClose = onClose;
  }

  /** A live event: written, or kept while the subscriber still reads the store. */
  send(seq: number, text: string, last: boolean): void {
    if (this.closed || seq <= this.lastSeq) return;
    if (this.waiting) this.waiting.push({ seq, text, last });
    else this.deliver(seq, text, last);
  }

  /** Writes an event (in order: one at or before the last written is dropped). */
  deliver(seq: number, text: string, last: boolean): void {
    if (this.closed || seq <= this.lastSeq) return;
    this.lastSeq = seq;
    this.stream.write(text);
    this.lastWasFinal = last;
    if (last || this.stream.writableLength > MAX_BUFFERED_BYTES) this.close();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.waiting = undefined;
    this.stream.end();
    this.#onClose();
  }
}

/**
 * The watchers of one stream: one live subscription and one reader of the store for all of them,
 * each event formatted once and written to every subscriber.
 */
class Channel<Event extends { seq: number; type: string }> {
  readonly subscribers = new Set<Subscriber>();
  /** The last seq handed to the subscribers (undefined until the first of them has read the store). */
  head: number | undefined;
  readonly #recent: Array<{ seq: number; text: string; last: boolean }> = [];
  #reading: Promise<void> | undefined;
  #again = false;
  readonly #unsubscribe: () => void;

  constructor(
    readonly key: string,
    readonly source: StreamSource<Event>,
  ) {
    this.#unsubscribe = source.subscribe(key, (event) => this.live(event));
  }

  /** An event this server produced: handed on, or read from the store with what comes before it when some are missing. */
  live(event: Event): void {
    if (this.head !== undefined && event.seq > this.head + 1) {
      this.catchUp();
      return;
    }
    this.#broadcast(event);
  }

  /** Reads the store after the last event handed on, one read at a time for the whole channel. */
  catchUp(): void {
    if (this.head === undefined) {
      // No subscriber has read the store yet: the first one does, and looks again after.
      this.#again = true;
      return;
    }
    if (this.#reading) {
      this.#again = true;
      return;
    }
    this.#reading = (async () => {
      do {
        this.#again = false;
        try {
          for (let page = await this.source.list(this.key, this.head ?? 0, PAGE); page.length > 0 && this.subscribers.size > 0; page = page.length < PAGE ? [] : await this.source.list(this.key, this.head ?? 0, PAGE)) {
            for (const event of page) this.#broadcast(event);
          }
        } catch {
          // the next notification reads again
        }
      } while (this.#again && this.subscribers.size > 0);
    })().finally(() => (this.#reading = undefined));
  }

  #broadcast(event: Event): void {
    if (this.head !== undefined && event.seq <= this.head) return;
    this.head = event.seq;
    const entry = { seq: event.seq, text: formatEvent(event), last: this.source.isLast(event) };
    this.#recent.push(entry);
    if (this.#recent.length > RECENT) this.#recent.shift();
    for (const subscriber of this.subscribers) subscriber.send(entry.seq, entry.text, entry.last);
  }

  /**
   * A subscriber that has read the store up to its `lastSeq` goes live: what came between its
   * replay and the first live event it kept is written first (from the channel's recent events, or
   * read from the store), then what it kept, then whatever comes.
   */
  async join(subscriber: Subscriber): Promise<void> {
    if (this.head === undefined) {
      // The first to have read the store: the channel goes on from there.
      this.head = subscriber.lastSeq;
      if (this.#again) this.catchUp();
    }
    const firstKept = (): number => subscriber.waiting?.[0]?.seq ?? (this.head ?? 0) + 1;
    const oldest = this.#recent[0]?.seq;
    if (firstKept() > subscriber.lastSeq + 1 && (oldest === undefined || oldest > subscriber.lastSeq + 1)) {
      // Still keeping live events meanwhile, so this read and them stay in order.
      const missed = await this.source.list(this.key, subscriber.lastSeq, firstKept() - subscriber.lastSeq - 1);
      for (const event of missed) subscriber.deliver(event.seq, formatEvent(event), this.source.isLast(event));
    }
    const end = firstKept();
    for (const entry of this.#recent) if (entry.seq < end) subscriber.deliver(entry.seq, entry.text, entry.last);
    const kept = subscriber.waiting ?? [];
    subscriber.waiting = undefined;
    for (const entry of kept) subscriber.deliver(entry.seq, entry.text, entry.last);
  }

  close(): void {
    this.#unsubscribe();
  }
}

/**
 * Server-Sent Events for one kind of stream, shared by every watcher: a stream's subscribers get
 * one live subscription, one reader of the store (Postgres: one read per notification, not one per
 * subscriber) and each event formatted once, so a thousand people watching one run cost the
 * server a thousand writes per event and nothing more. Each subscriber first reads the stored
 * events after its Last-Event-ID itself, then joins the live stream without a gap or a repeat.
 */
export class EventFanOut<Event extends { seq: number; type: string }> {
  readonly #source: StreamSource<Event>;
  readonly #channels = new Map<string, Channel<Event>>();
  #unfollow: (() => void) | undefined;
  #heartbeat: NodeJS.Timeout | undefined;

  constructor(source: StreamSource<Event>) {
    this.#source = source;
  }

  /** Subscribers watching a stream (or every stream). */
  watchers(key?: string): number {
    if (key !== undefined) return this.#channels.get(key)?.subscribers.size ?? 0;
    let total = 0;
    for (const channel of this.#channels.values()) total += channel.subscribers.size;
    return total;
  }

  /**
   * Answers with a stream's events: the stored ones after `after` first, then live ones in order,
   * without a gap or a repeat between the two; the stream closes after the last event (or once it
   * has ended), and 204 when it has ended with nothing left to send.
   */
  async send(reply: FastifyReply, key: string, after: number): Promise<FastifyReply> {
    const source = this.#source;
    const first = await source.list(key, after, PAGE);
    if (first.length === 0 && (await source.ended(key))) return reply.code(204).send();

    const channel = this.#channel(key);
    const subscriber: Subscriber = new Subscriber(after, () => this.#leave(channel, subscriber));
    // In the channel before the store is read, so nothing falls between the replay and the live events.
    channel.subscribers.add(subscriber);
    reply.raw.once("close", () => subscriber.close());
    subscriber.stream.write("retry: 2000\n\n");
    for (let page = first; page.length > 0 && !subscriber.closed; page = page.length < PAGE ? [] : await source.list(key, subscriber.lastSeq, PAGE)) {
      for (const event of page) subscriber.deliver(event.seq, formatEvent(event), source.isLast(event));
    }
    if (!subscriber.closed) await channel.join(subscriber);
    // What another process stored while the replay went on.
    if (source.follow && !subscriber.closed) channel.catchUp();
    if (!subscriber.closed && (await source.ended(key))) {
      // Ended in another process, whose last event may be a moment behind its record: it closes the
      // stream when it arrives (through the notification), or the stream closes in two seconds.
      if (source.follow && !subscriber.lastWasFinal) setTimeout(() => subscriber.close(), 2_000).unref();
      else subscriber.close();
    }
    return reply
      .header("content-type", "text/event-stream; charset=utf-8")
      .header("cache-control", "no-cache, no-transform")
      .header("x-accel-buffering", "no")
      .send(subscriber.stream);
  }

  #channel(key: string): Channel<Event> {
    let channel = this.#channels.get(key);
    if (channel) return channel;
    channel = new Channel(key, this.#source);
    this.#channels.set(key, channel);
    if (this.#source.follow && !this.#unfollow) {
      this.#unfollow = this.#source.follow((stream) => {
        if (stream === "") for (const each of this.#channels.values()) each.catchUp();
        else this.#channels.get(stream)?.catchUp();
      });
    }
    this.#heartbeat ??= setInterval(() => this.#ping(), HEARTBEAT_MS);
    this.#heartbeat.unref();
    return channel;
  }

  #ping(): void {
    for (const channel of this.#channels.values()) for (const subscriber of channel.subscribers) if (!subscriber.closed) subscriber.stream.write(": ping\n\n");
  }

  #leave(channel: Channel<Event>, subscriber: Subscriber): void {
    channel.subscribers.delete(subscriber);
    if (channel.subscribers.size > 0 || this.#channels.get(channel.key) !== channel) return;
    channel.close();
    this.#channels.delete(channel.key);
    if (this.#channels.size > 0) return;
    this.#unfollow?.();
    this.#unfollow = undefined;
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
  }
}
