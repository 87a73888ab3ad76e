/**
 * Watchers: many SSE subscribers of one run, and of 100 runs, while the runs stream their answers
 * (a word every few tens of milliseconds: an `answer-token` event each). For every event a
 * subscriber receives after all of them connected, the delay from its write (the event's `at`,
 * stamped by the server as it appends it) to its arrival; and the server's resident memory with
 * the subscribers connected. On SQLite one `troupe serve` drives the runs and serves the streams;
 * on Postgres the streams are served by an API-only process while a `troupe worker` drives the
 * runs, so every event reaches the streams through the store (NOTIFY and a read), as in a
 * deployment.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { Agent, request } from "node:http";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import type { PlannedSubtask } from "../../src/core/plan.js";
import { answerStep, finalStep, planStep, reviewStep, subtask } from "../../src/testing/script.js";
import type { ScriptStep } from "../../src/testing/scripted-chat-model.js";
import { send, startServer } from "../server.js";
import { percentile, SCRIPTED_PROVIDER_MODULE, withTempDir } from "../support.js";

const CLI = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../src/cli/main.js");
const PLAN: PlannedSubtask[] = [subtask("s1", "research", "Look the figure up"), subtask("s2", "execute", "Use the figure", { dependsOn: ["s1"] })];

export interface WatcherPoint {
  /** Runs streaming at once (the subscribers spread over them). */
  runs: number;
  subscribers: number;
  /** Events received after every subscriber connected, over all subscribers. */
  events: number;
  delayP50Ms: number;
  delayP95Ms: number;
  /** The serving process's resident memory, at most, while the subscribers were connected. */
  rssMb: number;
}

export interface WatchersOptions {
  backend: "sqlite" | "postgres";
  counts: number[];
  database: (name: string) => Promise<string>;
  drop: (name: string) => Promise<void>;
  log: (line: string) => void;
}

/** Each run's answer: this many words, `wordMs` apart (one run: 40 events/s; 100 runs: 10 events/s each, 1,000/s in all). */
const STREAM = { 1: { words: 120, wordMs: 25 }, 100: { words: 40, wordMs: 100 } } as const;

function scriptOf(runs: number, plannerMs: number): ScriptStep[] {
  const { words, wordMs } = STREAM[runs as 1 | 100];
  const answer = Array.from({ length: words }, (_, index) => `word${index}`).join(" ");
  const extra = { times: runs, usage: { input: 100, output: 20 } };
  return [
    planStep(PLAN, { ...extra, delayMs: plannerMs }),
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

interface Subscription {
  connected: Promise<void>;
  done: Promise<void>;
}

/**
 * One SSE subscriber: records, for each `answer-token` event, its arrival minus its `at`, once
 * `counting()` says every subscriber is connected. Reads the `at` with a pattern, not JSON.parse,
 * so the client's own work stays small beside the server's.
 */
function subscribe(agent: Agent, port: number, taskId: string, counting: () => boolean, delays: number[]): Subscription {
  let connected!: () => void;
  let failed!: (error: Error) => void;
  const connectedPromise = new Promise<void>((resolve, reject) => {
    connected = resolve;
    failed = reject;
  });
  const done = new Promise<void>((resolve) => {
    const call = request({ host: "127.0.0.1", port, path: `/api/v1/tasks/${taskId}/events`, agent, headers: { accept: "text/event-stream" } }, (response) => {
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
        const now = Date.now();
        pending += chunk;
        let end = pending.indexOf("\n\n");
        while (end >= 0) {
          const block = pending.slice(0, end);
          pending = pending.slice(end + 2);
          end = pending.indexOf("\n\n");
          if (!block.includes("event: answer-token") || !counting()) continue;
          const at = /"at":(\d+)/.exec(block);
          if (at) delays.push(now - Number(at[1]));
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
  // Awaited by the caller's Promise.all; once one subscriber fails, the others' failures must not
  // end the process as unhandled rejections.
  connectedPromise.catch(() => undefined);
  return { connected: connectedPromise, done };
}

/** Subscribers connect this many at a time: a thousand at once ended a loaded run on ECONNRESET (most likely the listen backlog). */
const CONNECT_BATCH = 100;

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

async function measureOne(options: WatchersOptions, runs: number, subscribers: number): Promise<WatcherPoint> {
  return withTempDir(`troupe-bench-scale-watch-${options.backend}-`, async (directory) => {
    const name = `scale_watch_${runs}_${subscribers}`;
    const url = options.backend === "postgres" ? await options.database(name) : undefined;
    const script = path.join(directory, "script.json");
    // Time for every subscriber to connect before the answer streams (they connect in parallel).
    writeFileSync(script, JSON.stringify(scriptOf(runs, 2_000 + subscribers * 8)));
    const env = { TROUPE_PROVIDER: "scripted", TROUPE_PROVIDER_MODULES: SCRIPTED_PROVIDER_MODULE, TROUPE_SCRIPT: script, TROUPE_DATA_DIR: path.join(directory, "data"), ...(url ? { TROUPE_DATABASE_URL: url } : {}) };
    const server = await startServer(directory, { ...env, ...(url ? { TROUPE_WORKERS: "0" } : {}) });
    const worker = url ? await startWorker(directory, env) : undefined;
    const agent = new Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY });
    const submit = new Agent({ keepAlive: true, maxSockets: 10 });
    try {
      const ids: string[] = [];
      for (let index = 0; index < runs; index += 1) {
        let response = await send(submit, server.port, "POST", "/api/v1/execute", { task: `Look the figure up (${index}), then use it` });
        // A loaded machine can trip the server's overload guard (event-loop delay): retry as a client told Retry-After would.
        for (let attempt = 0; response.status === 503 && attempt < 30; attempt += 1) {
          await sleep(1_000);
          response = await send(submit, server.port, "POST", "/api/v1/execute", { task: `Look the figure up (${index}), then use it` });
        }
        if (response.status !== 202) throw new Error(`scale/watchers: POST /execute answered ${response.status}`);
        ids.push((response.json() as { data: { task_id: string } }).data.task_id);
      }
      const delays: number[] = [];
      let counting = false;
      const streams: Subscription[] = [];
      for (let start = 0; start < subscribers; start += CONNECT_BATCH) {
        const batch = Array.from({ length: Math.min(CONNECT_BATCH, subscribers - start) }, (_, offset) => subscribe(agent, server.port, ids[(start + offset) % ids.length] as string, () => counting, delays));
        streams.push(...batch);
        await Promise.all(batch.map((stream) => stream.connected));
      }
      counting = true;
      let rssMb = residentMb(server.child.pid as number);
      const sampler = setInterval(() => {
        rssMb = Math.max(rssMb, residentMb(server.child.pid as number));
      }, 200);
      try {
        await Promise.all(streams.map((stream) => stream.done));
      } finally {
        clearInterval(sampler);
      }
      if (delays.length === 0) throw new Error(`scale/watchers: no event arrived after the ${subscribers} subscribers connected (the runs ended first)`);
      const sorted = delays.sort((a, b) => a - b);
      return { runs, subscribers, events: sorted.length, delayP50Ms: percentile(sorted, 0.5), delayP95Ms: percentile(sorted, 0.95), rssMb };
    } finally {
      agent.destroy();
      submit.destroy();
      await worker?.stop();
      await server.stop();
      if (url) await options.drop(name);
    }
  });
}

/** The curves of one backend: each subscriber count with one run, then with 100 runs. */
export async function measureWatchers(options: WatchersOptions): Promise<WatcherPoint[]> {
  const points: WatcherPoint[] = [];
  for (const runs of [1, 100]) {
    for (const subscribers of options.counts) {
      options.log(`  ${options.backend}: ${subscribers} subscriber(s) of ${runs === 1 ? "one run" : `${runs} runs`}…`);
      points.push(await measureOne(options, runs, subscribers));
    }
  }
  return points;
}
