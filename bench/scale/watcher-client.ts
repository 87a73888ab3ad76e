/**
 * One of the watchers benchmark's client processes (forked by watchers.ts): it opens its share of
 * the SSE subscribers, says when all of them are connected, and for each `answer-token` event each
 * of them receives records the arrival on the machine's wall clock with sub-millisecond precision
 * (`performance.timeOrigin + performance.now()`, the same clock in every process) beside the
 * event's run, seq and `at` (the server's millisecond stamp of its append). It sends its records
 * to the parent when every stream has ended. Spreading the subscribers over a few processes keeps
 * one process's handling of a thousand sockets out of the server's figure.
 */
import { Agent, request } from "node:http";
import { performance } from "node:perf_hooks";

/** What the parent sends: where to connect, and the run each subscriber watches. */
export interface ClientOrder {
  port: number;
  taskIds: string[];
}

/** What a client sends back. */
export type ClientMessage =
  | { type: "connected" }
  | { type: "failed"; error: string }
  /** Per arrival, flat: the subscriber's index in the order, the event's seq, its `at` (ms), the arrival (ms, fractional). */
  | { type: "done"; arrivals: number[] };

/** Subscribers connect this many at a time: a thousand at once ended a loaded run on ECONNRESET (most likely the listen backlog). */
const CONNECT_BATCH = 50;

function post(message: ClientMessage): void {
  process.send?.(message);
}

function subscribe(agent: Agent, order: ClientOrder, subscriber: number, arrivals: number[]): { connected: Promise<void>; done: Promise<void> } {
  const taskId = order.taskIds[subscriber] as string;
  let connected!: () => void;
  let failed!: (error: Error) => void;
  const connectedPromise = new Promise<void>((resolve, reject) => {
    connected = resolve;
    failed = reject;
  });
  connectedPromise.catch(() => undefined);
  const done = new Promise<void>((resolve) => {
    const call = request({ host: "127.0.0.1", port: order.port, path: `/api/v1/tasks/${taskId}/events`, agent, headers: { accept: "text/event-stream" } }, (response) => {
      if (response.statusCode !== 200) {
        failed(new Error(`GET /tasks/${taskId}/events answered ${response.statusCode}`));
        response.resume();
        resolve();
        return;
      }
      connected();
      let pending = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        // Stamped before any parsing: what follows is the client's own work.
        const now = performance.timeOrigin + performance.now();
        pending += chunk;
        let end = pending.indexOf("\n\n");
        while (end >= 0) {
          const block = pending.slice(0, end);
          pending = pending.slice(end + 2);
          end = pending.indexOf("\n\n");
          if (!block.includes("event: answer-token")) continue;
          const seq = /^id: (\d+)$/m.exec(block);
          const at = /"at":(\d+)/.exec(block);
          if (seq && at) arrivals.push(subscriber, Number(seq[1]), Number(at[1]), now);
        }
      });
      response.on("end", () => resolve());
      response.on("error", () => resolve());
    });
    call.on("error", (error) => {
      failed(error);
      resolve();
    });
    call.end();
  });
  return { connected: connectedPromise, done };
}

async function run(order: ClientOrder): Promise<void> {
  const agent = new Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY });
  const arrivals: number[] = [];
  const streams: Array<{ connected: Promise<void>; done: Promise<void> }> = [];
  try {
    for (let start = 0; start < order.taskIds.length; start += CONNECT_BATCH) {
      const batch = order.taskIds.slice(start, start + CONNECT_BATCH).map((_, offset) => subscribe(agent, order, start + offset, arrivals));
      streams.push(...batch);
      await Promise.all(batch.map((stream) => stream.connected));
    }
  } catch (error) {
    agent.destroy();
    throw error;
  }
  post({ type: "connected" });
  await Promise.all(streams.map((stream) => stream.done));
  agent.destroy();
  // Disconnects once the message is on its way: the parent reads every message before it sees the channel close.
  process.send?.({ type: "done", arrivals } satisfies ClientMessage, () => process.disconnect());
}

process.once("message", (order: ClientOrder) => {
  void run(order).catch((error: unknown) => {
    post({ type: "failed", error: error instanceof Error ? error.message : String(error) });
    process.disconnect();
  });
});
