/**
 * The watchers benchmark's floor (bench only, no troupe in it): a bare `node:http` server, forked
 * by watchers.ts, that streams the same SSE bytes on the same schedule to the same subscribers as
 * troupe's runs do — `retry`, then a run's `answer-token` events (each stamped `at` with
 * `Date.now()` as it is written, as the store stamps an append), then a `run-end` and the end of
 * the response. Each event is framed once (the chunked transfer framing and the SSE text in one
 * Buffer) and written straight to every subscriber's socket: the least a Node process can do per
 * subscriber per event. Read by the same client processes with the same stamps, it says how much
 * of a curve is the machine and how much is troupe.
 */
import { createServer, type ServerResponse } from "node:http";
import type { Socket } from "node:net";

/** What the parent sends once every subscriber is connected: each run's `words` events, `wordMs` apart. */
export interface BareStart {
  type: "start";
  words: number;
  wordMs: number;
}

/** What the server sends: its port once listening. */
export interface BareMessage {
  type: "listening";
  port: number;
}

const CRLF = Buffer.from("\r\n");

/** An SSE event as one chunk of a chunked response: its length in hex, the text, CRLF. */
function framed(text: string): Buffer {
  const body = Buffer.from(text);
  return Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, CRLF]);
}

const runs = new Map<string, Set<ServerResponse>>();

const server = createServer((request, response) => {
  const match = /^\/api\/v1\/tasks\/([^/]+)\/events$/.exec(request.url ?? "");
  if (request.method !== "GET" || !match) {
    response.writeHead(404).end();
    return;
  }
  const run = match[1] as string;
  const subscribers = runs.get(run) ?? new Set<ServerResponse>();
  runs.set(run, subscribers);
  response.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache, no-transform", "x-accel-buffering": "no" });
  // Through the response: it sends the headers with it and from then on the socket is the stream's.
  response.write("retry: 2000\n\n");
  subscribers.add(response);
  response.once("close", () => subscribers.delete(response));
});

function broadcast(subscribers: Set<ServerResponse>, bytes: Buffer): void {
  for (const response of subscribers) {
    const socket = response.socket as Socket | null;
    if (socket && !socket.destroyed) socket.write(bytes);
  }
}

function stream(run: string, offset: number, start: BareStart): void {
  let seq = 10;
  let word = 0;
  const subscribers = runs.get(run) ?? new Set<ServerResponse>();
  const tick = (): void => {
    seq += 1;
    if (word < start.words) {
      const event = { type: "answer-token", text: `word${word} `, seq, at: Date.now(), runId: run };
      broadcast(subscribers, framed(`id: ${seq}\nevent: answer-token\ndata: ${JSON.stringify(event)}\n\n`));
      word += 1;
      setTimeout(tick, start.wordMs);
      return;
    }
    const end = { type: "run-end", status: "completed", seq, at: Date.now(), runId: run };
    broadcast(subscribers, framed(`id: ${seq}\nevent: run-end\ndata: ${JSON.stringify(end)}\n\n`));
    for (const response of subscribers) response.end();
  };
  setTimeout(tick, offset);
}

server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  process.send?.({ type: "listening", port: typeof address === "object" && address ? address.port : 0 } satisfies BareMessage);
});

process.on("message", (message: BareStart) => {
  if (message.type !== "start") return;
  // The runs start spread over one word's interval, as troupe's runs are approved one after another.
  [...runs.keys()].forEach((run, index) => stream(run, (index * message.wordMs) / runs.size, message));
});
process.on("disconnect", () => process.exit(0));
