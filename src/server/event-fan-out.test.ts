import { connect, type Socket } from "node:net";
import Fastify, { type FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { EventFanOut, type StreamSource } from "./event-fan-out.js";

interface Event {
  seq: number;
  type: string;
  text?: string;
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
  append(type: string, publish: boolean, text?: string): Event {
    const event = { seq: this.events.length + 1, type, ...(text === undefined ? {} : { text }) };
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
  app.addHook("onSend", async (_request, reply) => {
    reply.header("x-from-hook", "yes");
  });
  app.get<{ Querystring: { after?: string; key?: string } }>("/events", async (request, reply) => fanOut.send(reply, request.query.key ?? "run-1", Number(request.query.after ?? 0)));
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

const seqsOf = (text: string): number[] => [...text.matchAll(/^id: (\d+)$/gm)].map((match) => Number(match[1]));

/** Waits until a condition holds (a state of the fan-out or of a stream), looking again on each turn of the event loop. */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 1));
}

/**
 * A client on a bare socket: it sends the request and then reads nothing (`paused`), or reads the
 * response's HTTP chunks (the bytes of each write the server made), as they come.
 */
function rawWatch(url: string, paused: boolean): { socket: Socket; chunks: string[]; head: Promise<string>; last: () => number } {
  const { hostname, port, pathname, search } = new URL(url);
  const socket = connect(Number(port), hostname);
  const chunks: string[] = [];
  let last = 0;
  let buffer = Buffer.alloc(0);
  let headers: string | undefined;
  let gotHead!: (head: string) => void;
  const head = new Promise<string>((resolve) => (gotHead = resolve));
  socket.write(`GET ${pathname}${search} HTTP/1.1\r\nHost: ${hostname}\r\n\r\n`);
  socket.on("data", (data: Buffer) => {
    buffer = Buffer.concat([buffer, data]);
    if (headers === undefined) {
      const end = buffer.indexOf("\r\n\r\n");
      if (end < 0) return;
      headers = buffer.subarray(0, end).toString();
      buffer = buffer.subarray(end + 4);
      gotHead(headers);
      if (paused) socket.pause();
    }
    for (;;) {
      const line = buffer.indexOf("\r\n");
      if (line < 0) return;
      const size = Number.parseInt(buffer.subarray(0, line).toString(), 16);
      if (buffer.length < line + 2 + size + 2) return;
      if (size > 0) chunks.push(buffer.subarray(line + 2, line + 2 + size).toString());
      last = seqsOf(chunks.at(-1) ?? "").at(-1) ?? last;
      buffer = buffer.subarray(line + 2 + size + 2);
    }
  });
  socket.on("error", () => {});
  return { socket, chunks, head, last: () => last };
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

  it("closes a watcher that stops reading once more than a mebibyte waits for it, while the others get every event, in order", async () => {
    const log = new Log();
    const fanOut = new EventFanOut(sourceOf(log, false));
    const url = await serve(fanOut);
    log.append("step", true);
    const fast = [rawWatch(url, false), rawWatch(url, false)];
    const slow = rawWatch(url, true);
    await Promise.all([...fast, slow].map((client) => client.head));
    await until(() => fanOut.watchers("run-1") === 3);
    // Big events, each once the readers have the one before: the stalled client's socket buffers fill, then the server's.
    const big = "x".repeat(256 * 1024);
    while (fanOut.watchers("run-1") === 3) {
      const event = log.append("step", true, big);
      await until(() => fast.every((client) => client.last() === event.seq) || fanOut.watchers("run-1") < 3);
    }
    expect(fanOut.watchers("run-1")).toBe(2);
    // The others go on (each event a quarter of the limit: a burst of them would be over it for anyone).
    for (let index = 0; index < 5; index += 1) {
      const event = log.append("step", true, big);
      await until(() => fast.every((client) => client.last() === event.seq));
    }
    log.append("end", true);
    const last = log.events.length;
    await until(() => fanOut.watchers() === 0 && fast.every((client) => client.last() === last));
    for (const client of fast) {
      expect(seqsOf(client.chunks.join(""))).toEqual(range(1, last));
      client.socket.destroy();
    }
    slow.socket.destroy();
  });

  it("keeps writing to the others when a watcher disconnects while events are being written", async () => {
    const log = new Log();
    const fanOut = new EventFanOut(sourceOf(log, false));
    const url = await serve(fanOut);
    const staying = [watch(url), watch(url)];
    const leaving = rawWatch(url, false);
    await Promise.all([...staying.map((watcher) => watcher.connected), leaving.head]);
    await until(() => fanOut.watchers("run-1") === 3);
    log.append("step", true);
    await until(() => leaving.chunks.length > 1);
    // Gone at once, the server not yet told: the next events are written to a closed peer.
    leaving.socket.resetAndDestroy();
    for (let index = 0; index < 20; index += 1) {
      log.append("step", true, "y".repeat(10_000));
      await new Promise((resolve) => setImmediate(resolve));
    }
    await until(() => fanOut.watchers("run-1") === 2);
    log.append("end", true);
    const last = log.events.length;
    for (const watcher of staying) expect(await watcher.seqs).toEqual(range(1, last));
    expect(fanOut.watchers()).toBe(0);
    expect(log.live.size).toBe(0);
  });

  it("writes another process's page of events to each watcher in one write, in order with the live ones, and keeps the response's hooks", async () => {
    const log = new Log();
    const fanOut = new EventFanOut(sourceOf(log, true));
    const url = await serve(fanOut);
    log.append("step", true);
    const clients = [rawWatch(url, false), rawWatch(url, false), rawWatch(url, false)];
    const heads = await Promise.all(clients.map((client) => client.head));
    // Fastify's hooks still run for a stream (a header one sets is there).
    for (const head of heads) expect(head).toMatch(/^x-from-hook: yes$/im);
    await until(() => clients.every((client) => seqsOf(client.chunks.join("")).includes(1)));
    // A burst of live events in one turn, then ten events another process stored, read after one notification.
    for (let index = 0; index < 3; index += 1) log.append("step", true);
    for (let index = 0; index < 10; index += 1) log.append("step", false);
    for (const listener of log.notified) listener("run-1");
    await until(() => clients.every((client) => seqsOf(client.chunks.join("")).includes(14)));
    log.append("end", true);
    await until(() => fanOut.watchers() === 0);
    await until(() => clients.every((client) => seqsOf(client.chunks.join("")).includes(15)));
    for (const client of clients) {
      expect(seqsOf(client.chunks.join(""))).toEqual(range(1, 15));
      // The page (events 5 to 14) came as one HTTP chunk: one write per watcher, not one per event.
      expect(client.chunks.filter((chunk) => seqsOf(chunk).includes(5)).map(seqsOf)).toEqual([range(5, 14)]);
      client.socket.destroy();
    }
  });

  it("reads the streams notified in one turn with one read of them all, where the source reads several at once", async () => {
    // Twenty streams, each with its own log; another process stores to all of them and notifies each.
    const logs = new Map(Array.from({ length: 20 }, (_, index) => [`run-${index}`, new Log()]));
    const notified = new Set<(key: string) => void>();
    let manyReads = 0;
    const fanOut = new EventFanOut<Event>({
      list: (key, after, limit) => (logs.get(key) as Log).list(key, after, limit),
      subscribe: (key, listener) => (logs.get(key) as Log).subscribe(key, listener),
      follow: (listener) => {
        notified.add(listener);
        return () => notified.delete(listener);
      },
      listMany: async (after, limit) => {
        manyReads += 1;
        const found = new Map<string, Event[]>();
        for (const [key, seq] of after) found.set(key, await (logs.get(key) as Log).list(key, seq, limit));
        return found;
      },
      isLast: (event) => event.type === "end",
      ended: async () => false,
    });
    const url = await serve(fanOut);
    for (const log of logs.values()) log.append("step", false);
    const watchers = [...logs.keys()].flatMap((key) => [rawWatch(`${url}?key=${key}`, false), rawWatch(`${url}?key=${key}`, false)]);
    await Promise.all(watchers.map((watcher) => watcher.head));
    await until(() => watchers.every((watcher) => watcher.last() === 1));
    const listsBefore = [...logs.values()].reduce((sum, log) => sum + log.lists, 0);
    for (let round = 0; round < 3; round += 1) {
      for (const log of logs.values()) log.append(round === 2 ? "end" : "step", false);
      for (const [key] of logs) for (const listener of notified) listener(key);
      await until(() => watchers.every((watcher) => watcher.last() === round + 2));
    }
    await until(() => fanOut.watchers() === 0);
    for (const watcher of watchers) {
      expect(seqsOf(watcher.chunks.join(""))).toEqual(range(1, 4));
      watcher.socket.destroy();
    }
    // Three rounds of twenty notifications: three reads of all the streams, none of one stream alone.
    expect(manyReads).toBe(3);
    expect([...logs.values()].reduce((sum, log) => sum + log.lists, 0) - listsBefore).toBe(3 * logs.size);
  });

  it("writes each live event to a watcher's socket in one write of the same chunked bytes, the connection usable after the stream, and HTTP/1.0 and HEAD as before", async () => {
    const log = new Log();
    const fanOut = new EventFanOut(sourceOf(log, false));
    const app = Fastify();
    apps.push(app);
    /** Per connection: the socket writes that carried an event's `id:` line. */
    const writes = new Map<number, string[]>();
    app.addHook("onRequest", async (request) => {
      const socket = request.raw.socket;
      const port = socket.remotePort as number;
      if (writes.has(port)) return;
      writes.set(port, []);
      const write = socket.write.bind(socket) as (chunk: unknown, ...rest: unknown[]) => boolean;
      socket.write = ((chunk: unknown, ...rest: unknown[]) => {
        const text = typeof chunk === "string" ? chunk : Buffer.isBuffer(chunk) ? chunk.toString() : "";
        if (/id: \d+/.test(text)) writes.get(port)?.push(text);
        return write(chunk, ...rest);
      }) as typeof socket.write;
    });
    app.get("/events", async (_request, reply) => fanOut.send(reply, "run-1", 0));
    const url = `${await app.listen({ host: "127.0.0.1", port: 0 })}/events`;
    const { hostname, port } = new URL(url);

    /** One request on a socket, read to the end of its response (a chunked body to its last chunk, else to the close). */
    const exchange = (socket: Socket, request: string, untilBody: (raw: string) => boolean): Promise<string> =>
      new Promise((resolve) => {
        let raw = "";
        const onData = (data: Buffer): void => {
          raw += data.toString();
          if (untilBody(raw)) {
            socket.off("data", onData);
            resolve(raw);
          }
        };
        socket.on("data", onData);
        socket.once("close", () => resolve(raw));
        socket.write(request);
      });
    const socket = connect(Number(port), hostname);
    await new Promise((resolve) => socket.once("connect", resolve));
    let seen = "";
    const onSeen = (data: Buffer): void => {
      seen += data.toString();
    };
    socket.on("data", onSeen);
    const body = exchange(socket, `GET /events HTTP/1.1\r\nHost: ${hostname}\r\n\r\n`, (raw) => raw.endsWith("\r\n0\r\n\r\n"));
    // Live from here: the stream's headers and its retry line have come.
    await until(() => seen.includes("retry: 2000"));
    socket.off("data", onSeen);
    for (let index = 0; index < 5; index += 1) {
      log.append("step", true, `word ${index}`);
      await new Promise((resolve) => setImmediate(resolve));
    }
    log.append("end", true);
    const raw = await body;
    // A chunked body whose chunks are: the retry line, then each event on its own.
    const chunks: string[] = [];
    let rest = raw.slice(raw.indexOf("\r\n\r\n") + 4);
    for (;;) {
      const line = rest.indexOf("\r\n");
      const size = Number.parseInt(rest.slice(0, line), 16);
      if (size === 0) break;
      chunks.push(rest.slice(line + 2, line + 2 + size));
      expect(rest.slice(line + 2 + size, line + 4 + size)).toBe("\r\n");
      rest = rest.slice(line + 4 + size);
    }
    expect(raw).toMatch(/^transfer-encoding: chunked$/im);
    expect(chunks).toEqual(["retry: 2000\n\n", ...log.events.map((event) => `id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`)]);
    // Each event left in one socket write: its chunk's size line, text and CRLF together.
    const written = writes.get(socket.localPort as number) ?? [];
    expect(written).toHaveLength(log.events.length);
    for (const [index, event] of log.events.entries()) expect(written[index]).toMatch(new RegExp(`^[0-9a-f]+\r\nid: ${event.seq}\n[^]*\n\n\r\n$`));
    // The same connection serves the next request (the stream ended where its framing said).
    const again = await exchange(socket, `GET /events HTTP/1.1\r\nHost: ${hostname}\r\n\r\n`, (text) => text.endsWith("\r\n0\r\n\r\n"));
    expect(again).toMatch(/^HTTP\/1\.1 200/);
    expect(again).toContain(`id: ${log.events.length}\n`);
    socket.destroy();

    // HTTP/1.0: no chunked framing, the body runs to the close; HEAD: the headers and no body.
    const old = connect(Number(port), hostname);
    const oldRaw = await exchange(old, `GET /events HTTP/1.0\r\nHost: ${hostname}\r\n\r\n`, () => false);
    expect(oldRaw).not.toMatch(/transfer-encoding/i);
    expect(oldRaw.slice(oldRaw.indexOf("\r\n\r\n") + 4)).toBe(`retry: 2000\n\n${log.events.map((event) => `id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`).join("")}`);
    const head = connect(Number(port), hostname);
    const headRaw = await exchange(head, `HEAD /events HTTP/1.1\r\nHost: ${hostname}\r\nConnection: close\r\n\r\n`, () => false);
    expect(headRaw).toMatch(/^HTTP\/1\.1 200/);
    expect(headRaw.slice(headRaw.indexOf("\r\n\r\n") + 4)).toBe("");
  });
});
