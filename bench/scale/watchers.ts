/**
 * Watchers: many SSE subscribers of one run, and of 100 runs, while the runs stream their answers
 * (a word every few tens of milliseconds: an `answer-token` event each). The runs are submitted
 * with `approve_plan` and wait at the approval while the subscribers connect (spread over a few
 * client processes, watcher-client.ts); then every run is approved, and each `answer-token` event
 * every subscriber receives is measured:
 *
 * - its delay: the arrival (the client's wall clock, sub-millisecond) minus the event's `at` (the
 *   server's `Date.now()` as it appended the event, whole milliseconds, so the delay reads up to
 *   1 ms long);
 * - its spread: the arrival minus the same event's earliest arrival at any subscriber (both on
 *   the sub-millisecond clock): the part of the delay that grows with the subscribers;
 * - the serving process's CPU time while the answers streamed (with the runs' own work; what
 *   grows with the subscribers is the writing);
 * - the serving process's resident memory, at most, with the subscribers connected.
 *
 * Beside each point, in the same run, its floor: the same bytes on the same schedule to the same
 * subscribers and client processes from a bare `node:http` server (bare-fan-out.ts), so the report
 * shows how much of a curve is the machine and how much is troupe.
 *
 * On SQLite one `troupe serve` drives the runs and serves the streams; on Postgres the streams are
 * served by an API-only process while a `troupe worker` drives the runs, so every event reaches
 * the streams through the store (NOTIFY and a read), as in a deployment.
 */
import { type ChildProcess, fork, spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { Agent } from "node:http";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import type { PlannedSubtask } from "../../src/core/plan.js";
import { answerStep, finalStep, planStep, reviewStep, subtask } from "../../src/testing/script.js";
import type { ScriptStep } from "../../src/testing/scripted-chat-model.js";
import { send, startServer } from "../server.js";
import type { BareMessage, BareStart } from "./bare-fan-out.js";
import type { ClientMessage, ClientOrder } from "./watcher-client.js";
import { percentile, SCRIPTED_PROVIDER_MODULE, withTempDir } from "../support.js";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CLI = path.resolve(HERE, "../../src/cli/main.js");
const CLIENT = path.resolve(HERE, "watcher-client.js");
const BARE = path.resolve(HERE, "bare-fan-out.js");
const PLAN: PlannedSubtask[] = [subtask("s1", "research", "Look the figure up"), subtask("s2", "execute", "Use the figure", { dependsOn: ["s1"] })];

export interface WatcherPoint {
  /** Runs streaming at once (the subscribers spread over them). */
  runs: number;
  subscribers: number;
  /** Client processes the subscribers were spread over. */
  clients: number;
  /** `answer-token` events received, over all subscribers. */
  events: number;
  delayP50Ms: number;
  delayP95Ms: number;
  /** An arrival minus the same event's earliest arrival at any subscriber, p95 (sub-millisecond clock). */
  spreadP95Ms: number;
  /** The serving process's CPU time (user + system) while the answers streamed (the runs' own work included). */
  cpuMs: number;
  /** The serving process's resident memory, at most, while the subscribers were connected. */
  rssMb: number;
  /** The same shape served by a bare `node:http` process (bare-fan-out.ts), measured right after: the machine's floor. */
  floor: Pick<WatcherPoint, "delayP50Ms" | "delayP95Ms" | "spreadP95Ms" | "cpuMs" | "rssMb">;
}

export interface WatchersOptions {
  backend: "sqlite" | "postgres";
  counts: number[];
  /** Client processes to spread the subscribers over (4 by default). */
  clients?: number;
  database: (name: string) => Promise<string>;
  drop: (name: string) => Promise<void>;
  log: (line: string) => void;
}

/** Each run's answer: this many words, `wordMs` apart (one run: 40 events/s; 100 runs: 10 events/s each, 1,000/s in all). */
const STREAM = { 1: { words: 120, wordMs: 25 }, 100: { words: 40, wordMs: 100 } } as const;

function scriptOf(runs: number): ScriptStep[] {
  const { words, wordMs } = STREAM[runs as 1 | 100];
  const answer = Array.from({ length: words }, (_, index) => `word${index}`).join(" ");
  const extra = { times: runs, usage: { input: 100, output: 20 } };
  return [
    planStep(PLAN, extra),
    finalStep("s1", "the figure is 42", extra),
    finalStep("s2", "used it", extra),
    reviewStep(0.9, {}, extra),
    answerStep(answer, { ...extra, pieceDelayMs: wordMs }),
  ];
}

function residentMb(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match ? Number(match[1]) / 1024 : Number.NaN;
}

/** The serving process's CPU time so far (user + system), in milliseconds. */
function cpuMs(pid: number): number {
  // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th, in clock ticks (100 a second on Linux).
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(")").at(-1)?.trim().split(" ") ?? [];
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

interface Client {
  connected: Promise<void>;
  done: Promise<number[]>;
  kill: () => void;
}

/** A client process with its share of the subscribers. */
function startClient(order: ClientOrder): Client {
  const child = fork(CLIENT, [], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  let connected!: () => void;
  let failed!: (error: Error) => void;
  let finished!: (arrivals: number[]) => void;
  const connectedPromise = new Promise<void>((resolve, reject) => {
    connected = resolve;
    failed = reject;
  });
  const done = new Promise<number[]>((resolve, reject) => {
    finished = resolve;
    // The channel closes after its last message was read (an exit can be seen before that).
    child.on("disconnect", () => reject(new Error("a watcher client stopped before its streams ended")));
  });
  connectedPromise.catch(() => undefined);
  done.catch(() => undefined);
  child.on("message", (message: ClientMessage) => {
    if (message.type === "connected") connected();
    else if (message.type === "failed") failed(new Error(message.error));
    else finished(message.arrivals);
  });
  child.on("disconnect", () => failed(new Error("a watcher client stopped before its subscribers connected")));
  child.send(order);
  return { connected: connectedPromise, done, kill: () => child.kill() };
}

async function startWorker(directory: string, env: Record<string, string>): Promise<{ child: ChildProcess; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, [CLI, "worker", "--concurrency", "100"], {
    cwd: directory,
    env: { ...process.env, TROUPE_LOG_LEVEL: "info", TROUPE_SHUTDOWN_GRACE_MS: "0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  const deadline = Date.now() + 60_000;
  while (!/taking runs from the queue/.test(output)) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the worker did not start: ${output.slice(-2000)}`);
    await sleep(50);
  }
  return {
    child,
    stop: async () => {
      child.kill("SIGTERM");
      await exited;
    },
  };
}

async function submit(agent: Agent, port: number, method: string, pathName: string, body: unknown, expected: number): Promise<unknown> {
  let response = await send(agent, port, method, pathName, body);
  // A loaded machine can trip the server's overload guard (event-loop delay): retry as a client told Retry-After would.
  for (let attempt = 0; response.status === 503 && attempt < 30; attempt += 1) {
    await sleep(1_000);
    response = await send(agent, port, method, pathName, body);
  }
  if (response.status !== expected) throw new Error(`scale/watchers: ${method} ${pathName} answered ${response.status}`);
  return response.json();
}

/** Waits until a run stands at its plan's approval. */
async function untilWaiting(agent: Agent, port: number, taskId: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const { data } = (await submit(agent, port, "GET", `/api/v1/tasks/${taskId}`, undefined, 200)) as { data: { status: string } };
    if (data.status === "interrupted") return;
    if (["completed", "failed", "cancelled"].includes(data.status) || Date.now() > deadline) throw new Error(`scale/watchers: run ${taskId} is ${data.status}, not waiting at its approval`);
    await sleep(50);
  }
}

/** Delays and spreads from the clients' arrivals (per arrival: the subscriber's run, seq, at, arrival). */
function figuresOf(arrivals: Array<{ run: number; seq: number; at: number; arrival: number }>): { delays: number[]; spreads: number[] } {
  const earliest = new Map<string, number>();
  for (const { run, seq, arrival } of arrivals) {
    const key = `${run}:${seq}`;
    earliest.set(key, Math.min(earliest.get(key) ?? Number.POSITIVE_INFINITY, arrival));
  }
  const delays = arrivals.map(({ at, arrival }) => arrival - at).sort((a, b) => a - b);
  const spreads = arrivals.map(({ run, seq, arrival }) => arrival - (earliest.get(`${run}:${seq}`) as number)).sort((a, b) => a - b);
  return { delays, spreads };
}

/** What the subscribers measured of one server: every figure of a point but its shape. */
type Measured = Pick<WatcherPoint, "clients" | "events" | "delayP50Ms" | "delayP95Ms" | "spreadP95Ms" | "cpuMs" | "rssMb">;

/**
 * Connects the subscribers (subscriber i watches `ids[i mod ids.length]`, spread over the client
 * processes), calls `start` once every one is connected, and measures what they receive until
 * every stream has ended, with the serving process's CPU time and resident memory meanwhile.
 */
async function measureStreams(server: { pid: number; port: number }, ids: string[], subscribers: number, clientCount: number, start: () => Promise<void>): Promise<Measured> {
  const runs = ids.length;
  const count = Math.min(clientCount, subscribers);
  // Subscriber i watches run i mod runs; client c has subscribers c, c + count, …
  const shares = Array.from({ length: count }, (_, client) => Array.from({ length: subscribers }, (_, index) => index).filter((index) => index % count === client));
  const clients: Client[] = [];
  try {
    clients.push(...shares.map((share) => startClient({ port: server.port, taskIds: share.map((index) => ids[index % runs] as string) })));
    await Promise.all(clients.map((client) => client.connected));
    let rssMb = residentMb(server.pid);
    const sampler = setInterval(() => {
      rssMb = Math.max(rssMb, residentMb(server.pid));
    }, 200);
    const cpuBefore = cpuMs(server.pid);
    let received: number[][];
    try {
      await start();
      received = await Promise.all(clients.map((client) => client.done));
    } finally {
      clearInterval(sampler);
    }
    const cpu = cpuMs(server.pid) - cpuBefore;
    const arrivals = received.flatMap((flat, client) => {
      const share = shares[client] as number[];
      const out: Array<{ run: number; seq: number; at: number; arrival: number }> = [];
      for (let offset = 0; offset < flat.length; offset += 4) {
        out.push({ run: (share[flat[offset] as number] as number) % runs, seq: flat[offset + 1] as number, at: flat[offset + 2] as number, arrival: flat[offset + 3] as number });
      }
      return out;
    });
    if (arrivals.length === 0) throw new Error(`scale/watchers: no answer-token event reached the ${subscribers} subscribers`);
    const { delays, spreads } = figuresOf(arrivals);
    return {
      clients: count,
      events: arrivals.length,
      delayP50Ms: percentile(delays, 0.5),
      delayP95Ms: percentile(delays, 0.95),
      spreadP95Ms: percentile(spreads, 0.95),
      cpuMs: cpu,
      rssMb,
    };
  } finally {
    for (const client of clients) client.kill();
  }
}

async function measureOne(options: WatchersOptions, runs: number, subscribers: number): Promise<Measured> {
  return withTempDir(`troupe-bench-scale-watch-${options.backend}-`, async (directory) => {
    const name = `scale_watch_${runs}_${subscribers}`;
    const url = options.backend === "postgres" ? await options.database(name) : undefined;
    const script = path.join(directory, "script.json");
    writeFileSync(script, JSON.stringify(scriptOf(runs)));
    const env = { TROUPE_PROVIDER: "scripted", TROUPE_PROVIDER_MODULES: SCRIPTED_PROVIDER_MODULE, TROUPE_SCRIPT: script, TROUPE_DATA_DIR: path.join(directory, "data"), ...(url ? { TROUPE_DATABASE_URL: url } : {}) };
    const server = await startServer(directory, { ...env, ...(url ? { TROUPE_WORKERS: "0" } : {}) });
    const worker = url ? await startWorker(directory, env) : undefined;
    const agent = new Agent({ keepAlive: true, maxSockets: 10 });
    try {
      // Every run waits at its plan's approval while the subscribers connect.
      const ids: string[] = [];
      for (let index = 0; index < runs; index += 1) {
        const body = (await submit(agent, server.port, "POST", "/api/v1/execute", { task: `Look the figure up (${index}), then use it`, approve_plan: true }, 202)) as { data: { task_id: string } };
        ids.push(body.data.task_id);
      }
      for (const id of ids) await untilWaiting(agent, server.port, id);
      return await measureStreams({ pid: server.child.pid as number, port: server.port }, ids, subscribers, options.clients ?? 4, async () => {
        for (const id of ids) await submit(agent, server.port, "POST", `/api/v1/tasks/${id}/resume`, { decision: "approve" }, 202);
      });
    } finally {
      agent.destroy();
      await worker?.stop();
      await server.stop();
      if (url) await options.drop(name);
    }
  });
}

/** The floor: the same bytes, schedule, subscribers and clients, served by a bare `node:http` process (bare-fan-out.ts). */
async function measureBare(options: WatchersOptions, runs: number, subscribers: number): Promise<Measured> {
  const child = fork(BARE, [], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.once("message", (message: BareMessage) => resolve(message.port));
      child.once("exit", () => reject(new Error("scale/watchers: the bare fan-out server stopped before listening")));
    });
    const ids = Array.from({ length: runs }, (_, index) => `bare-${index}`);
    const { words, wordMs } = STREAM[runs as 1 | 100];
    return await measureStreams({ pid: child.pid as number, port }, ids, subscribers, options.clients ?? 4, async () => {
      child.send({ type: "start", words, wordMs } satisfies BareStart);
    });
  } finally {
    child.kill();
    await exited;
  }
}

/** The curves of one backend: each subscriber count with one run, then with 100 runs. */
export async function measureWatchers(options: WatchersOptions): Promise<WatcherPoint[]> {
  const points: WatcherPoint[] = [];
  for (const runs of [1, 100]) {
    for (const subscribers of options.counts) {
      options.log(`  ${options.backend}: ${subscribers} subscriber(s) of ${runs === 1 ? "one run" : `${runs} runs`}…`);
      const troupe = await measureOne(options, runs, subscribers);
      // Beside it, in the same run: the bare floor for the same shape.
      const floor = await measureBare(options, runs, subscribers);
      points.push({ runs, subscribers, ...troupe, floor: { delayP50Ms: floor.delayP50Ms, delayP95Ms: floor.delayP95Ms, spreadP95Ms: floor.spreadP95Ms, cpuMs: floor.cpuMs, rssMb: floor.rssMb } });
    }
  }
  return points;
}
