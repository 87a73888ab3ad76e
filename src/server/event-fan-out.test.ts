import Fastify, { type FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { EventFanOut, type StreamSource } from "./event-fan-out.js";

interface Event {
  seq: number;
  type: string;
}

/** A stream source over an in-memory log, counting what the fan-out asks of it. */
class Log {
  readonly events: Event[] = [];
  readonly live = new Set<(event: Event) => void>();
  readonly notified = new Set<(key: string) => void>();
  lists = 0;
  subscriptions = 0;
  ended = false;

  async list(_key: string, afterSeq: number, limit: number): Promise<Event[]> {
    this.lists += 1;
    return this.events.filter((event) => event.seq > afterSeq).slice(0, limit);
  }

  subscribe(_key: string, listener: (event: Event) => void): () => void {
    this.subscriptions += 1;
    this.live.add(listener);
    return () => this.live.delete(listener);
  }

  isLast(event: Event): boolean {
    return event.type === "end";
  }

  async isEnded(): Promise<boolean> {
    return this.ended;
  }

  /** Stores the next event; `publish` hands it to this process's live listeners too. */
  append(type: string, publish: boolean): Event {
    const event = { seq: this.events.length + 1, type };
    this.events.push(event);
    if (publish) for (const listener of this.live) listener(event);
    return event;
  }
}

function sourceOf(log: Log, follow: boolean): StreamSource<Event> {
  return {
    list: (key, after, limit) => log.list(key, after, limit),
    subscribe: (key, listener) => log.subscribe(key, listener),
    ...(follow
      ? {
          follow: (listener: (key: string) => void) => {
            log.notified.add(listener);
            return () => log.notified.delete(listener);
          },
        }
      : {}),
    isLast: (event) => log.isLast(event),
    ended: () => log.isEnded(),
  };
}

const apps: FastifyInstance[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});

async function serve(fanOut: EventFanOut<Event>): Promise<string> {
  const app = Fastify();
  apps.push(app);
  app.get<{ Querystring: { after?: string } }>("/events", async (request, reply) => fanOut.send(reply, "run-1", Number(request.query.after ?? 0)));
  return `${await app.listen({ host: "127.0.0.1", port: 0 })}/events`;
}

/** Reads a stream to its end; resolves with the seqs received, once `connected` says it has its first byte. */
function watch(url: string): { connected: Promise<void>; seqs: Promise<number[]> } {
  let connected!: () => void;
  const ready = new Promise<void>((resolve) => (connected = resolve));
  const seqs = (async () => {
    const response = await fetch(url);
    const reader = (response.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
      connected();
    }
    return [...text.matchAll(/^id: (\d+)$/gm)].map((match) => Number(match[1]));
  })();
  return { connected: ready, seqs };
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, index) => from + index);

describe("EventFanOut: every watcher of a stream shares one subscription and one reader", () => {
  it("gives each of many watchers, joining at different points while events flow, every event after its own Last-Event-ID once and in order, through one live subscription", async () => {
    const log = new Log();
    const fanOut = new EventFanOut(sourceOf(log, false));
    const url = await serve(fanOut);
    for (let index = 0; index < 5; index += 1) log.append("step", true);
    const watchers: Array<{ after: number; seqs: Promise<number[]> }> = [];
    for (let round = 0; round < 6; round += 1) {
      // Five more watchers, each after a different event already stored, then a burst of live events.
      for (let index = 0; index < 5; index += 1) {
        const after = (round * 7 + index * 3) % (log.events.length + 1);
        const stream = watch(`${url}?after=${after}`);
        watchers.push({ after, seqs: stream.seqs });
        await stream.connected;
      }
      for (let index = 0; index < 4; index += 1) log.append("step", true);
    }
    expect(fanOut.watchers("run-1")).toBe(30);
    expect(log.live.size).toBe(1);
    log.append("end", true);
    const last = log.events.length;
    for (const watcher of watchers) expect(await watcher.seqs).toEqual(range(watcher.after + 1, last));
    expect(fanOut.watchers("run-1")).toBe(0);
    expect(log.live.size).toBe(0);
    expect(log.subscriptions).toBe(1);
  });

  it("reads another process's events once per notification for all watchers, not once per watcher", async () => {
    const log = new Log();
    const fanOut = new EventFanOut(sourceOf(log, true));
    const url = await serve(fanOut);
    log.append("step", false);
    const watchers = Array.from({ length: 40 }, () => watch(url));
    await Promise.all(watchers.map((watcher) => watcher.connected));
    const beforeNotifications = log.lists;
    // Ten notifications of events another process stored (none published here).
    for (let index = 0; index < 10; index += 1) {
      log.append(index === 9 ? "end" : "step", false);
      for (const listener of log.notified) listener("run-1");
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    for (const watcher of watchers) expect(await watcher.seqs).toEqual(range(1, 11));
    // One read per notification (and at most one more after a read that found a page), whatever the number of watchers.
    expect(log.lists - beforeNotifications).toBeLessThanOrEqual(20);
    expect(log.notified.size).toBe(0);
  });

  it("answers 204 for a stream that has ended with nothing left after Last-Event-ID, and replays the rest of an ended one", async () => {
    const log = new Log();
    const fanOut = new EventFanOut(sourceOf(log, false));
    const url = await serve(fanOut);
    for (let index = 0; index < 3; index += 1) log.append("step", true);
    log.append("end", true);
    log.ended = true;
    expect((await fetch(`${url}?after=4`)).status).toBe(204);
    expect(await watch(`${url}?after=1`).seqs).toEqual([2, 3, 4]);
    expect(fanOut.watchers()).toBe(0);
  });
});
