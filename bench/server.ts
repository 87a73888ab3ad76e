import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { open } from "node:fs/promises";
import { Agent, request } from "node:http";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import type { PlannedSubtask } from "../src/core/plan.js";
import { subtask } from "../src/testing/script.js";
import { scriptFor } from "./scripts.js";
import { percentile, withTempDir, SCRIPTED_PROVIDER_MODULE } from "./support.js";

/** Seed 001's bar for the submit call (the run itself excluded). */
export const SUBMIT_P95_TARGET_MS = 200;

/** Issue 25's targets for the API path: the submit p95 while runs execute, and completed runs per second on a zero-latency model. */
const API_PATH_TARGETS = { maxP95Ms: 20, minRunsPerSecond: 100 } as const;

const CLI = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../src/cli/main.js");

/** The open-loop phase: this many submissions at this rate while the flood's runs execute. */
const PACED = { count: 200, perSecond: 50 } as const;

/** A two-step plan: a lookup, then a step that uses it. */
const PLAN: PlannedSubtask[] = [subtask("s1", "research", "Look the figure up"), subtask("s2", "execute", "Use the figure", { dependsOn: ["s1"] })];

export interface ServerBenchOptions {
  submissions: number;
  connections: number;
  inFlight: number;
  /** The CLI to serve with (default this build's): another checkout's, to compare builds side by side. */
  cli?: string;
  /** The scripted provider module of that build (TROUPE_PROVIDER_MODULES). */
  providerModule?: string;
}

export interface LatencyFigures {
  count: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
}

export interface ServerBenchReport {
  submissions: number;
  connections: number;
  /** POST /execute round trips on loopback, measured by the client, while the accepted runs execute (zero-latency model). */
  submitMs: LatencyFigures;
  /** The same submissions to a server whose runs all wait on a slow model call: the HTTP path alone. */
  submitIdleMs: LatencyFigures;
  /**
   * Submissions sent at a fixed rate (open loop: each at its scheduled time, whether or not the ones
   * before it were answered) while the flood's runs execute, timed from the scheduled moment: the
   * latency one client sees from a server busy with runs but not saturated with submissions. The
   * flood's figures above are bound by its 100 clients in a closed loop (Little's law: 100
   * requests always in flight ÷ the submissions the server answers per second).
   */
  submitPacedMs: LatencyFigures & { perSecond: number };
  /**
   * fdatasync of a 4 KB append to a file beside the server's data directory, one every 20 ms while
   * the open loop runs: what the disk itself takes to sync at that moment. Every accepted submission
   * waits for one or two syncs of the database's WAL (its 202 promises the run is on disk), so this
   * is the floor under the submit latency that no change to the server can go below.
   */
  diskSyncMs: LatencyFigures;
  /** Every submission was answered 202 (both phases). */
  accepted: number;
  /** Runs completed per second: completed runs / (last finish − first start), from the runs' own timestamps. */
  completedPerSecond: number;
  /**
   * The server process's CPU time (user + system, /proc/<pid>/stat) from the first submission of
   * the zero-latency phase until its runs are done, per run: the work a run costs, which a machine
   * busy with other work does not stretch as it stretches wall times.
   */
  cpuPerRunMs: number;
  /**
   * The server's event-loop delay (prom-client's monitorEventLoopDelay figures on /metrics, ms)
   * while the zero-latency phase's submissions arrive: how long a request could wait behind run
   * work on the one event loop.
   */
  loopDelayMs: { p99: number; max: number };
  completedRuns: number;
  /** Resident memory of the server process (/proc/<pid>/status VmRSS). */
  memory: { idleMb: number; inFlightMb: number; perRunKb: number; heapUsedMb: number; runsInFlight: number };
  target: { maxP95Ms: number; met: boolean; p95OfBar: number };
  /** Issue 25's targets (the API path). */
  apiPath: { maxP95Ms: number; p95Met: boolean; minRunsPerSecond: number; runsMet: boolean };
}

interface Server {
  child: ChildProcess;
  port: number;
  stop(): Promise<void>;
}

export async function startServer(directory: string, env: Record<string, string>, cli = CLI): Promise<Server> {
  const child = spawn(process.execPath, [cli, "serve", "--port", "0"], {
    cwd: directory,
    env: { ...process.env, TROUPE_RATE_LIMIT: "0", TROUPE_LOG_LEVEL: "error", TROUPE_SHUTDOWN_GRACE_MS: "0", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  const deadline = Date.now() + 30_000;
  for (;;) {
    const match = /listening on http:\/\/[^:]+:(\d+) /.exec(stderr);
    if (match) {
      return {
        child,
        port: Number(match[1]),
        stop: async () => {
          child.kill("SIGTERM");
          await exited;
        },
      };
    }
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the server did not start: ${stderr}`);
    await sleep(20);
  }
}

export function send(agent: Agent, port: number, method: string, pathName: string, body?: unknown): Promise<{ status: number; json: () => unknown }> {
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const call = request(
      { host: "127.0.0.1", port, method, path: pathName, agent, headers: payload ? { "content-type": "application/json", "content-length": payload.length } : {} },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () => {
          const text = Buffer.concat(chunks).toString();
          resolve({ status: response.statusCode ?? 0, json: () => JSON.parse(text) as unknown });
        });
      },
    );
    call.on("error", reject);
    call.end(payload);
  });
}

export async function metric(agent: Agent, port: number, name: string): Promise<number> {
  return (await metrics(agent, port, [name]))[0] as number;
}

/** Several figures of one /metrics scrape (a scrape resets the event-loop delay histogram). */
export async function metrics(agent: Agent, port: number, names: string[]): Promise<number[]> {
  const response = await new Promise<string>((resolve, reject) => {
    request({ host: "127.0.0.1", port, path: "/metrics", agent }, (reply) => {
      let text = "";
      reply.on("data", (chunk: Buffer) => (text += chunk.toString()));
      reply.on("end", () => resolve(text));
    })
      .on("error", reject)
      .end();
  });
  return names.map((name) => {
    const line = response.split("\n").find((candidate) => candidate.startsWith(`${name} `));
    return line ? Number(line.split(" ")[1]) : Number.NaN;
  });
}

/** CPU time (ms, user + system) a process has used so far. */
function cpuMs(pid: number): number {
  const fields = (readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1] ?? "").split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

function residentMb(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match ? Number(match[1]) / 1024 : Number.NaN;
}

/**
 * All tasks, through the list endpoint's pages: by cursor, or by offset on a build from before
 * cursors (--compare with an older checkout), whose first page has no `next_cursor`.
 */
async function allTasks(agent: Agent, port: number): Promise<Array<{ status: string; started_at: string | null; finished_at: string | null }>> {
  const items: Array<{ status: string; started_at: string | null; finished_at: string | null }> = [];
  for (let next: string | null = ""; next !== null; ) {
    const response = await send(agent, port, "GET", `/api/v1/tasks?limit=100${next}`);
    const page = response.json() as { data: { items: typeof items; next_cursor?: string | null; next_offset?: number | null } };
    if (response.status !== 200) throw new Error(`listing the tasks failed: ${response.status} ${JSON.stringify(page)}`);
    items.push(...page.data.items);
    const { next_cursor: cursor, next_offset: offset } = page.data;
    next = typeof cursor === "string" ? `&cursor=${encodeURIComponent(cursor)}` : typeof offset === "number" && cursor === undefined ? `&offset=${offset}` : null;
  }
  return items;
}

function figures(latencies: number[]): LatencyFigures {
  const sorted = [...latencies].sort((a, b) => a - b);
  return { count: sorted.length, p50: percentile(sorted, 0.5), p95: percentile(sorted, 0.95), p99: percentile(sorted, 0.99), max: sorted.at(-1) ?? Number.NaN };
}

/** Sends `count` POST /execute over `connections` keep-alive connections; returns each round trip (ms) and how many were accepted. */
async function submitAll(agent: Agent, port: number, count: number, connections: number, label: string, onStart: () => void | Promise<void> = () => {}): Promise<{ latencies: number[]; accepted: number }> {
  // Warm-up: open the connections and run the request path (parsing, validation, error answer)
  // a few hundred times, so neither a cold connection nor cold JIT code is what is measured.
  await Promise.all(Array.from({ length: connections }, () => send(agent, port, "GET", "/health")));
  for (let round = 0; round < 3; round += 1) {
    await Promise.all(Array.from({ length: connections }, () => send(agent, port, "POST", "/api/v1/execute", { task: "" })));
  }
  const latencies: number[] = [];
  let accepted = 0;
  let next = 0;
  await onStart();
  const worker = async (): Promise<void> => {
    while (next < count) {
      const index = next++;
      const started = performance.now();
      const response = await send(agent, port, "POST", "/api/v1/execute", { task: `${label} figure ${index}, then use it` });
      latencies.push(performance.now() - started);
      if (response.status === 202) accepted += 1;
    }
  };
  await Promise.all(Array.from({ length: connections }, worker));
  return { latencies, accepted };
}

/**
 * Times an fdatasync of a 4 KB append to a file in \`directory\`, one every \`everyMs\`, until
 * \`stop\` is called; \`stop\` resolves with each sync's time (ms).
 */
function sampleDiskSyncs(directory: string, everyMs: number): { stop: () => Promise<number[]> } {
  const latencies: number[] = [];
  const block = Buffer.alloc(4096, 1);
  let stopping = false;
  const sampling = (async () => {
    const file = await open(path.join(directory, "disk-sync-probe"), "a");
    try {
      while (!stopping) {
        await file.write(block);
        const started = performance.now();
        await file.datasync();
        latencies.push(performance.now() - started);
        await sleep(everyMs);
      }
    } finally {
      await file.close();
    }
  })();
  return {
    stop: async () => {
      stopping = true;
      await sampling;
      return latencies;
    },
  };
}

/**
 * Sends \`count\` POST /execute at \`perSecond\`, each at its scheduled moment whatever the answers
 * before it (open loop), over connections of its own; each latency is from the scheduled moment to
 * the answer, so a stalled server is charged for the wait of every request due meanwhile.
 */
async function submitPaced(port: number, count: number, perSecond: number, label: string): Promise<{ latencies: number[]; accepted: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 20 });
  try {
    await Promise.all(Array.from({ length: 20 }, () => send(agent, port, "GET", "/health")));
    const latencies: number[] = [];
    let accepted = 0;
    const start = performance.now() + 10;
    const calls: Array<Promise<void>> = [];
    for (let index = 0; index < count; index += 1) {
      const due = start + (index * 1000) / perSecond;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      calls.push(
        send(agent, port, "POST", "/api/v1/execute", { task: `${label} figure ${index}, then use it` }).then((response) => {
          latencies.push(performance.now() - due);
          if (response.status === 202) accepted += 1;
        }),
      );
    }
    await Promise.all(calls);
    return { latencies, accepted };
  } finally {
    agent.destroy();
  }
}

/**
 * Benchmark 4: the HTTP service in its own process (\`troupe serve\`) on loopback, driven by a
 * small keep-alive client. Submit latency of \`submissions\` POST /execute over \`connections\`
 * connections, twice: to a server whose runs all wait on a slow model call (the HTTP path and
 * the synced insert alone; memory is read there with \`inFlight\` runs in flight), and to a server
 * whose runs execute at once on a zero-latency scripted model (submissions compete with runs
 * for the one event loop); then completed runs per second.
 */
export async function measureServer(options: ServerBenchOptions): Promise<ServerBenchReport> {
  return withTempDir("troupe-bench-server-", async (directory) => {
    const agent = new Agent({ keepAlive: true, maxSockets: options.connections });
    try {
      // 1. Runs parked in a slow model call: the HTTP path alone, and memory with runs in flight.
      const slowScript = path.join(directory, "slow.json");
      writeFileSync(slowScript, JSON.stringify(scriptFor(PLAN, { runs: options.submissions, workerDelayMs: 120_000 })));
      const provider = options.providerModule ?? SCRIPTED_PROVIDER_MODULE;
      const slow = await startServer(directory, {
        TROUPE_PROVIDER: "scripted", TROUPE_PROVIDER_MODULES: provider,
        TROUPE_SCRIPT: slowScript,
        TROUPE_DATA_DIR: path.join(directory, "slow-data"),
        TROUPE_MAX_RUNNING: String(options.inFlight),
      }, options.cli);
      let idle: { latencies: number[]; accepted: number };
      let memory: ServerBenchReport["memory"];
      try {
        await send(agent, slow.port, "GET", "/health");
        const idleMb = residentMb(slow.child.pid as number);
        idle = await submitAll(agent, slow.port, options.submissions, options.connections, "park");
        const deadline = Date.now() + 120_000;
        let running = 0;
        while (Date.now() < deadline) {
          running = await metric(agent, slow.port, "agent_tasks_running");
          if (running >= options.inFlight) break;
          await sleep(100);
        }
        // Let every run reach its slow call (planner done, first worker waiting).
        await sleep(1_000);
        const inFlightMb = residentMb(slow.child.pid as number);
        const heapUsedMb = (await metric(agent, slow.port, "nodejs_heap_size_used_bytes")) / 1024 / 1024;
        memory = { idleMb, inFlightMb, perRunKb: ((inFlightMb - idleMb) * 1024) / Math.max(1, running), heapUsedMb, runsInFlight: running };
      } finally {
        await slow.stop();
      }

      // 2. Runs that execute at once: submissions compete with them; then runs per second.
      const script = path.join(directory, "script.json");
      writeFileSync(script, JSON.stringify(scriptFor(PLAN, { runs: options.submissions + PACED.count })));
      const fast = await startServer(directory, { TROUPE_PROVIDER: "scripted", TROUPE_PROVIDER_MODULES: provider, TROUPE_SCRIPT: script, TROUPE_DATA_DIR: path.join(directory, "fast-data") }, options.cli);
      let busy: { latencies: number[]; accepted: number };
      let paced: { latencies: number[]; accepted: number };
      let completedPerSecond = Number.NaN;
      let completedRuns = 0;
      let cpuPerRunMs = Number.NaN;
      let loopDelayMs = { p99: Number.NaN, max: Number.NaN };
      let diskSyncs: number[] = [];
      try {
        let cpuBefore = 0;
        const lag = ["nodejs_eventloop_lag_p99_seconds", "nodejs_eventloop_lag_max_seconds"];
        busy = await submitAll(agent, fast.port, options.submissions, options.connections, "look up", async () => {
          // A scrape resets the delay histogram: the next one covers the submissions alone.
          await metrics(agent, fast.port, lag);
          cpuBefore = cpuMs(fast.child.pid as number);
        });
        const [p99, max] = await metrics(agent, fast.port, lag);
        loopDelayMs = { p99: (p99 as number) * 1000, max: (max as number) * 1000 };
        // The flood's runs are still executing (most are queued behind the running ones).
        const disk = sampleDiskSyncs(directory, 20);
        try {
          paced = await submitPaced(fast.port, PACED.count, PACED.perSecond, "pace");
        } finally {
          diskSyncs = await disk.stop();
        }
        const deadline = Date.now() + 600_000;
        while ((await metric(agent, fast.port, "agent_tasks_running")) + (await metric(agent, fast.port, "agent_tasks_queued")) > 0 && Date.now() < deadline) await sleep(250);
        cpuPerRunMs = (cpuMs(fast.child.pid as number) - cpuBefore) / (options.submissions + PACED.count);
        const done = (await allTasks(agent, fast.port)).filter((task) => task.status === "completed" && task.started_at && task.finished_at);
        completedRuns = done.length;
        const first = Math.min(...done.map((task) => Date.parse(task.started_at as string)));
        const last = Math.max(...done.map((task) => Date.parse(task.finished_at as string)));
        completedPerSecond = done.length / ((last - first) / 1000);
      } finally {
        await fast.stop();
      }

      const submitMs = figures(busy.latencies);
      return {
        submissions: options.submissions,
        connections: options.connections,
        submitMs,
        submitIdleMs: figures(idle.latencies),
        submitPacedMs: { ...figures(paced.latencies), perSecond: PACED.perSecond },
        diskSyncMs: figures(diskSyncs),
        accepted: idle.accepted + busy.accepted + paced.accepted,
        completedPerSecond,
        cpuPerRunMs,
        loopDelayMs,
        completedRuns,
        memory,
        target: { maxP95Ms: SUBMIT_P95_TARGET_MS, met: submitMs.p95 < SUBMIT_P95_TARGET_MS, p95OfBar: submitMs.p95 / SUBMIT_P95_TARGET_MS },
        apiPath: { ...API_PATH_TARGETS, p95Met: submitMs.p95 < API_PATH_TARGETS.maxP95Ms, runsMet: completedPerSecond >= API_PATH_TARGETS.minRunsPerSecond },
      };
    } finally {
      agent.destroy();
    }
  });
}
