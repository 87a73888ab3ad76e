import { ServerResponse } from "node:http";
import { Readable } from "node:stream";
import type { FastifyReply } from "fastify";
import { formatEvent } from "./sse.js";

/** A stream further behind than this is closed; the client reconnects with Last-Event-ID and reads the rest from the store. */
const MAX_BUFFERED_BYTES = 1024 * 1024;
const HEARTBEAT_MS = 15_000;
const PAGE = 1_000;
/** Events a channel keeps formatted, for subscribers joining just behind it. */
const RECENT = 256;
const CRLF = Buffer.from("\r\n");

/**
 * Bytes every subscriber gets alike: the SSE text, and the same text as one chunk of a chunked
 * HTTP/1.1 response (its length in hex, CRLF, the text, CRLF — what `ServerResponse.write` would
 * send for it), framed once, the first time a subscriber's socket takes it.
 */
class Chunk {
  #framed: Buffer | undefined;
  constructor(readonly bytes: Buffer) {}
  get framed(): Buffer {
    this.#framed ??= Buffer.concat([Buffer.from(`${this.bytes.length.toString(16)}\r\n`, "latin1"), this.bytes, CRLF]);
    return this.#framed;
  }
}

const PING = new Chunk(Buffer.from(": ping\n\n"));

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
  /**
   * Stored events of several streams, each after its own seq, at most `limit` of each, in one read:
   * where it is given, the streams notified in one turn of the event loop are read together.
   */
  listMany?(after: ReadonlyMap<string, number>, limit: number): Promise<Map<string, Event[]>>;
  /** The event after which nothing more comes (a run's or an eval's end). */
  isLast(event: Event): boolean;
  /** Whether the stream has ended for good (nothing is running that could add to it). */
  ended(key: string): Promise<boolean>;
}

/** An event as the fan-out hands it on: its SSE text encoded once, the same bytes for every subscriber. */
interface Entry {
  seq: number;
  chunk: Chunk;
  last: boolean;
}

function entryOf<Event extends { seq: number; type: string }>(event: Event, source: StreamSource<Event>): Entry {
  return { seq: event.seq, chunk: new Chunk(Buffer.from(formatEvent(event))), last: source.isLast(event) };
}

/**
 * One SSE response. Its bytes go straight to the HTTP response; the `body` Fastify pipes into that
 * response carries no data, only the end, so Fastify sets the headers, runs its hooks and ends the
 * response as for any stream. What is written before Fastify has piped it (the replay of the
 * store) waits in a list. Once the response has sent its headers and holds nothing back, an
 * event's pre-framed chunk (shared by every subscriber) goes to the socket in one write, the
 * bytes `ServerResponse.write` would send in four; otherwise (HTTP/1.0, HEAD, a response still
 * waiting for its socket, a response whose `write` something wrapped) through `ServerResponse.write`.
 */
class Subscriber {
  readonly body = new Readable({ read: () => {} });
  lastSeq: number;
  /** Live events that arrived while it replayed the store, sent once it has. */
  waiting: Entry[] | undefined = [];
  closed = false;
  lastWasFinal = false;
  #response: ServerResponse | undefined;
  /** Whether chunks may go straight to the response's socket (an HTTP/1.1 chunked response with a body). */
  #direct = false;
  #early: Array<string | Buffer> | undefined = [];
  #earlyBytes = 0;
  readonly #onClose: () => void;

  constructor(after: number, onClose: () => void) {
    this.lastSeq = after;
    this.#onClose = onClose;
  }

  /** The response Fastify piped `body` into (its headers set): what waited is written, and from now on every write goes straight to it. */
  attach(response: ServerResponse): void {
    this.#response = response;
    // Through the response: the first write sends its headers with it.
    for (const chunk of this.#early ?? []) response.write(chunk);
    this.#early = undefined;
    // Not where something wraps the response's own write (an injected request's, which keeps what is written; instrumentation's).
    this.#direct = response instanceof ServerResponse && response.write === ServerResponse.prototype.write && response.chunkedEncoding && response.req.method !== "HEAD";
    if (this.closed) this.body.push(null);
  }

  /** Bytes written and not yet taken by the client (the socket's own buffer included). */
  get buffered(): number {
    return this.#response ? this.#response.writableLength : this.#earlyBytes;
  }

  write(chunk: string | Chunk): void {
    const response = this.#response;
    if (!response) {
      const bytes = typeof chunk === "string" ? chunk : chunk.bytes;
      this.#early?.push(bytes);
      this.#earlyBytes += typeof bytes === "string" ? Buffer.byteLength(bytes) : bytes.length;
      return;
    }
    const socket = response.socket;
    // Straight to the socket only while the response is its current one and has nothing of its own pending (its headers sent).
    if (this.#direct && typeof chunk !== "string" && chunk.bytes.length > 0 && socket && response.writableLength === socket.writableLength && !response.writableEnded) {
      if (socket.writable && !socket.destroyed) socket.write(chunk.framed);
      return;
    }
    response.write(typeof chunk === "string" ? chunk : chunk.bytes);
  }

  /** A live event: written, or kept while the subscriber still reads the store. */
  send(entry: Entry): void {
    if (this.closed || entry.seq <= this.lastSeq) return;
    if (this.waiting) this.waiting.push(entry);
    else this.deliver(entry);
  }

  /** Writes an event (in order: one at or before the last written is dropped). */
  deliver(entry: Entry): void;
  /** Writes events that follow one another and its last event, in one write. */
  deliver(entries: Entry[], chunk: Chunk): void;
  deliver(entries: Entry | Entry[], chunk?: Chunk): void {
    const first = Array.isArray(entries) ? entries[0] : entries;
    const last = Array.isArray(entries) ? entries.at(-1) : entries;
    if (this.closed || first === undefined || last === undefined || first.seq <= this.lastSeq) return;
    this.lastSeq = last.seq;
    this.write(chunk ?? first.chunk);
    this.lastWasFinal = last.last;
    if (last.last || this.buffered > MAX_BUFFERED_BYTES) this.close();
  }

  /** Ends the stream after what was written (Fastify ends the response when `body` ends). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.waiting = undefined;
    if (this.#response) this.body.push(null);
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
  readonly #recent: Entry[] = [];
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
    this.#broadcast([event]);
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
            this.#broadcast(page);
          }
        } catch {
          // the next notification reads again
        }
      } while (this.#again && this.subscribers.size > 0);
    })().finally(() => (this.#reading = undefined));
  }

  /** Events read from the store for this stream (by the fan-out's read of several streams), handed on like its own reads. */
  receive(events: Event[]): void {
    this.#broadcast(events);
  }

  /**
   * Hands events on, in order, each encoded once: a subscriber that is live and just behind them
   * gets them all in one write (a page read after a notification is one write per subscriber, not
   * one per event); one still replaying keeps them.
   */
  #broadcast(events: Event[]): void {
    const entries: Entry[] = [];
    for (const event of events) {
      if (this.head !== undefined && event.seq <= this.head) continue;
      this.head = event.seq;
      const entry = entryOf(event, this.source);
      entries.push(entry);
      this.#recent.push(entry);
    }
    if (this.#recent.length > RECENT) this.#recent.splice(0, this.#recent.length - RECENT);
    const first = entries[0];
    if (first === undefined) return;
    // Nothing follows a stream's last event: events after one (there should be none) go one by one, and are dropped.
    const lastAt = entries.findIndex((entry) => entry.last);
    const whole = lastAt >= 0 && lastAt < entries.length - 1 ? undefined : entries.length === 1 ? first.chunk : new Chunk(Buffer.concat(entries.map((entry) => entry.chunk.bytes)));
    for (const subscriber of this.subscribers) {
      if (whole && subscriber.waiting === undefined && subscriber.lastSeq === first.seq - 1) subscriber.deliver(entries, whole);
      else for (const entry of entries) subscriber.send(entry);
    }
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
      for (const event of missed) subscriber.deliver(entryOf(event, this.source));
    }
    const end = firstKept();
    for (const entry of this.#recent) if (entry.seq < end) subscriber.deliver(entry);
    const kept = subscriber.waiting ?? [];
    subscriber.waiting = undefined;
    for (const entry of kept) subscriber.deliver(entry);
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
  /** Streams notified and not read yet (read together, where the source reads several at once). */
  readonly #notified = new Set<Channel<Event>>();
  #readingNotified: Promise<void> | undefined;

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
    // Fastify pipes the body into the response once its headers are set: from then on, events go straight to it.
    // (Only its own body: a hook that replaced the payload — compression — would need the bytes to go through it.)
    const attach = (source: unknown): void => {
      if (source !== subscriber.body) return;
      reply.raw.off("pipe", attach);
      subscriber.attach(reply.raw);
    };
    reply.raw.on("pipe", attach);
    subscriber.write("retry: 2000\n\n");
    for (let page = first; page.length > 0 && !subscriber.closed; page = page.length < PAGE ? [] : await source.list(key, subscriber.lastSeq, PAGE)) {
      for (const event of page) subscriber.deliver(entryOf(event, source));
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
      .send(subscriber.body);
  }

  #channel(key: string): Channel<Event> {
    let channel = this.#channels.get(key);
    if (channel) return channel;
    channel = new Channel(key, this.#source);
    this.#channels.set(key, channel);
    if (this.#source.follow && !this.#unfollow) {
      this.#unfollow = this.#source.follow((stream) => {
        if (stream === "") for (const each of this.#channels.values()) this.#notify(each);
        else {
          const notified = this.#channels.get(stream);
          if (notified) this.#notify(notified);
        }
      });
    }
    this.#heartbeat ??= setInterval(() => this.#ping(), HEARTBEAT_MS);
    this.#heartbeat.unref();
    return channel;
  }

  /** Another process stored events of a stream: read, with every other stream notified in the same turn where the source can. */
  #notify(channel: Channel<Event>): void {
    if (!this.#source.listMany || channel.head === undefined) {
      channel.catchUp();
      return;
    }
    this.#notified.add(channel);
    if (this.#readingNotified) return;
    this.#readingNotified = this.#readNotified().finally(() => (this.#readingNotified = undefined));
  }

  /** One read for every stream notified (one statement for a hundred runs' events, not a hundred), again while more are notified meanwhile. */
  async #readNotified(): Promise<void> {
    const listMany = this.#source.listMany?.bind(this.#source);
    if (!listMany) return;
    // The notifications of this turn come together.
    await new Promise((resolve) => setImmediate(resolve));
    while (this.#notified.size > 0) {
      const channels = [...this.#notified].filter((channel) => channel.subscribers.size > 0 && this.#channels.get(channel.key) === channel);
      this.#notified.clear();
      const after = new Map(channels.map((channel) => [channel.key, channel.head ?? 0]));
      let found: Map<string, Event[]>;
      try {
        found = await listMany(after, PAGE);
      } catch {
        // Each stream tries its own read (and the next notification reads again).
        for (const channel of channels) channel.catchUp();
        continue;
      }
      for (const channel of channels) {
        const events = found.get(channel.key) ?? [];
        channel.receive(events);
        // A full page: the stream reads the rest itself.
        if (events.length >= PAGE) channel.catchUp();
      }
    }
  }

  #ping(): void {
    for (const channel of this.#channels.values()) for (const subscriber of channel.subscribers) if (!subscriber.closed) subscriber.write(PING);
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
