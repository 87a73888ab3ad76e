import { randomBytes } from "node:crypto";
import type { EventId, EventStore, StreamId } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

/** How much one session keeps for replay: the oldest events go first when either bound is passed. */
export interface EventStoreLimits {
  maxEvents: number;
  maxBytes: number;
}

export const DEFAULT_EVENT_STORE_LIMITS: EventStoreLimits = { maxEvents: 2_000, maxBytes: 1024 * 1024 };

interface StoredEvent {
  id: EventId;
  seq: number;
  streamId: StreamId;
  message: JSONRPCMessage;
  bytes: number;
}

/**
 * The SDK's `EventStore` for one Streamable HTTP session: what the server sent on each SSE stream
 * (a call's stream, or the session's GET stream), numbered, so a client that lost its connection
 * reconnects with `Last-Event-ID` and gets what came after it. In memory and bounded — the session
 * itself lives in this process's memory, so a reconnect that reaches another process (or this one
 * after a restart) finds no session to resume whatever the store. Eviction goes oldest first, so an
 * id still known always has everything after it on its stream; a message too large to keep makes
 * every earlier id of its stream unknown, so a replay is refused rather than served with a hole.
 * Ids are `<session tag>.<number>`, the tag random per session: another session's id (or a
 * forged one) is simply unknown here.
 */
export class SessionEventStore implements EventStore {
  readonly #limits: EventStoreLimits;
  /** Every kept event, oldest first (a Map keeps insertion order). */
  readonly #events = new Map<EventId, StoredEvent>();
  /** Each stream's kept events, oldest first. */
  readonly #streams = new Map<StreamId, StoredEvent[]>();
  readonly #tag = randomBytes(6).toString("hex");
  #bytes = 0;
  #next = 1;

  constructor(limits: Partial<EventStoreLimits> = {}) {
    this.#limits = { ...DEFAULT_EVENT_STORE_LIMITS, ...limits };
  }

  /** Events kept now, and their bytes (for tests and metrics). */
  get size(): { events: number; bytes: number } {
    return { events: this.#events.size, bytes: this.#bytes };
  }

  has(eventId: EventId): boolean {
    return this.#events.has(eventId);
  }

  async storeEvent(streamId: StreamId, message: JSONRPCMessage): Promise<EventId> {
    const seq = this.#next++;
    const id = `${this.#tag}.${seq}`;
    const bytes = Buffer.byteLength(JSON.stringify(message), "utf8");
    if (bytes > this.#limits.maxBytes) {
      this.#forgetStream(streamId);
      return id;
    }
    const event: StoredEvent = { id, seq, streamId, message, bytes };
    this.#events.set(id, event);
    const stream = this.#streams.get(streamId);
    if (stream) stream.push(event);
    else this.#streams.set(streamId, [event]);
    this.#bytes += bytes;
    while (this.#events.size > this.#limits.maxEvents || this.#bytes > this.#limits.maxBytes) this.#evictOldest();
    return id;
  }

  async getStreamIdForEventId(eventId: EventId): Promise<StreamId | undefined> {
    return this.#events.get(eventId)?.streamId;
  }

  async replayEventsAfter(lastEventId: EventId, { send }: { send: (eventId: EventId, message: JSONRPCMessage) => Promise<void> }): Promise<StreamId> {
    const last = this.#events.get(lastEventId);
    if (!last) throw new Error(`event ${lastEventId.slice(0, 64)} is not kept in this session`);
    // A copy: what is sent while replaying may store (and evict) more.
    const after = (this.#streams.get(last.streamId) ?? []).filter((event) => event.seq > last.seq);
    for (const event of after) {
      // The priming event (an empty message) only carries an id: there is nothing to send again.
      if (Object.keys(event.message).length > 0) await send(event.id, event.message);
    }
    return last.streamId;
  }

  #evictOldest(): void {
    const oldest = this.#events.values().next().value;
    if (!oldest) return;
    this.#events.delete(oldest.id);
    this.#bytes -= oldest.bytes;
    const stream = this.#streams.get(oldest.streamId);
    // The oldest of all is the oldest of its stream.
    stream?.shift();
    if (stream?.length === 0) this.#streams.delete(oldest.streamId);
  }

  #forgetStream(streamId: StreamId): void {
    for (const event of this.#streams.get(streamId) ?? []) {
      this.#events.delete(event.id);
      this.#bytes -= event.bytes;
    }
    this.#streams.delete(streamId);
  }
}
