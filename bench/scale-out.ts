import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { Agent } from "node:http";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import type { PlannedSubtask } from "../src/core/plan.js";
import { answerStep, finalStep, planStep, reviewStep, subtask } from "../src/testing/script.js";
import { percentile, withTempDir, SCRIPTED_PROVIDER_MODULE } from "./support.js";
import { send } from "./server.js";

const CLI = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../src/cli/main.js");

export interface ScaleOutOptions {
  /** A fresh database of this name on the benchmark's cluster. */
  database: (name: string) => Promise<string>;
  /** Latency of every model call (ms). */
  latencyMs: number;
  /** Runs each worker drives at once. */
  concurrency: number;
  /** Runs submitted per worker, per measurement. */
  runsPerWorker: number;
  workerCounts: number[];
  /** Submissions for the POST /execute latency. */
  submissions: number;
  connections: number;
  log?: (line: string) => void;
}

export interface ScaleOutReport {
  latencyMs: number;
  concurrency: number;
  modelCallsPerRun: number;
  /** Completed runs per second by number of workers, and the speedup over one. */
  throughput: Array<{ workers: number; runs: number; perSecond: number; speedup: number; ideal: number }>;
  /** From a worker's SIGKILL to another worker starting the run's interrupted call again, by lease. */
  takeover: Array<{ leaseSeconds: number; ms: number }>;
  /** POST /execute round trips through an API-only process (serve --workers 0), two workers taking the runs meanwhile. */
  submitMs: { count: number; p50: number; p95: number; p99: number; max: number; accepted: number };
  targets: { twoWorkers: number; fourWorkers: number; met: boolean };
}

/** A plan of two subtasks, one after the other: five model calls per run (planner, two workers, critic, synthesizer). */
const PLAN: PlannedSubtask[] = [subtask("s1", "research", "Look the figure up"), subtask("s2", "research", "Check it", { dependsOn: ["s1"] })];

function script(runs: number, latencyMs: number): unknown[] {
  const extra = { times: runs, delayMs: latencyMs, usage: { input: 100, output: 20 } };
  return [planStep(PLAN, extra), finalStep("s1", "42", extra), finalStep("s2", "42 holds", extra), reviewStep(0.9, {}, extra), answerStep("It is 42.", extra)];
}

export interface Proc {
  child: ChildProcess;
  port?: number;
  stop(): Promise<void>;
}

async function start(args: string[], cwd: string, env: Record<string, string>, ready: RegExp): Promise<Proc> {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd,
    env: { ...process.env, TROUPE_RATE_LIMIT: "0", TROUPE_LOG_LEVEL: "error", TROUPE_SHUTDOWN_GRACE_MS: "0", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  const deadline = Date.now() + 60_000;
  for (;;) {
    const match = ready.exec(stderr);
    if (match) {
      return {
        child,
        ...(match[1] ? { port: Number(match[1]) } : {}),
        stop: async () => {
          if (child.exitCode !== null || child.signalCode !== null) return;
          child.kill("SIGTERM");
          const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
          await exited;
          clearTimeout(timer);
        },
      };
    }
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`troupe ${args[0]} did not start: ${stderr}`);
    }
    await sleep(20);
  }
}

/** An API-only `troupe serve` process (no runs driven). */
export const api = (cwd: string, env: Record<string, string>) => start(["serve", "--port", "0", "--workers", "0"], cwd, env, /listening on http:\/\/[^:]+:(\d+) /);
/** A `troupe worker` process driving at most `concurrency` runs. */
export const worker = (cwd: string, env: Record<string, string>, concurrency: number) =>
  start(["worker", "--concurrency", String(concurrency)], cwd, env, /troupe worker: \S+ taking runs/);

interface TaskRow {
  status: string;
  started_at: string | null;
  finished_at: string | null;
}

async function allTasks(agent: Agent, port: number): Promise<TaskRow[]> {
  const items: TaskRow[] = [];
  for (let offset = 0; ; offset += 100) {
    const response = await send(agent, port, "GET", `/api/v1/tasks?limit=100&offset=${offset}`);
    const page = response.json() as { data: { items: TaskRow[]; next_offset: number | null } };
    items.push(...page.data.items);
    if (page.data.next_offset === null) return items;
  }
}

/**
 * Benchmark 18, scale-out on Postgres: completed runs per second with 1, 2 and 4 worker processes
 * (each at the same concurrency cap, every model call `latencyMs`), behind one API-only process;
 * the takeover time after a worker's SIGKILL (default lease and the shortest); POST /execute
 * latency through the API-only process while two workers take the runs.
 */
export async function measureScaleOut(options: ScaleOutOptions): Promise<ScaleOutReport> {
  const log = options.log ?? (() => {});
  return withTempDir("troupe-bench-scale-", async (directory) => {
    const agent = new Agent({ keepAlive: true, maxSockets: options.connections });
    const stopping: Proc[] = [];
    try {
      const modelCallsPerRun = PLAN.length + 3;
      const throughput: ScaleOutReport["throughput"] = [];
      for (const workers of options.workerCounts) {
        const runs = options.runsPerWorker * workers;
        const cwd = path.join(directory, `w${workers}`);
        mkdirSync(cwd, { recursive: true });
        const scriptFile = path.join(cwd, "script.json");
        writeFileSync(scriptFile, JSON.stringify(script(runs, options.latencyMs)));
        const env = { TROUPE_DATABASE_URL: await options.database(`scale_w${workers}`), TROUPE_PROVIDER: "scripted", TROUPE_PROVIDER_MODULES: SCRIPTED_PROVIDER_MODULE, TROUPE_SCRIPT: scriptFile, TROUPE_DATA_DIR: path.join(cwd, "data") };
        const front = await api(cwd, env);
        stopping.push(front);
        const pool: Proc[] = [];
        for (let index = 0; index < workers; index += 1) pool.push(await worker(cwd, env, options.concurrency));
        stopping.push(...pool);
        // Submitted at once, over many connections (the API process group-commits them), so the workers never wait for work.
        let next = 0;
        await Promise.all(
          Array.from({ length: options.connections }, async () => {
            while (next < runs) {
              const index = next++;
              const response = await send(agent, front.port as number, "POST", "/api/v1/execute", { task: `look the figure up, run ${index}` });
              if (response.status !== 202) throw new Error(`submit failed: ${response.status}`);
            }
          }),
        );
        const deadline = Date.now() + 600_000;
        let tasks: TaskRow[] = [];
        for (;;) {
          tasks = await allTasks(agent, front.port as number);
          if (tasks.every((task) => ["completed", "failed", "cancelled"].includes(task.status)) || Date.now() > deadline) break;
          await sleep(250);
        }
        const done = tasks.filter((task) => task.status === "completed" && task.started_at && task.finished_at);
        const first = Math.min(...done.map((task) => Date.parse(task.started_at as string)));
        const last = Math.max(...done.map((task) => Date.parse(task.finished_at as string)));
        const perSecond = done.length / ((last - first) / 1000);
        const ideal = (workers * options.concurrency * 1000) / (modelCallsPerRun * options.latencyMs);
        throughput.push({ workers, runs: done.length, perSecond, speedup: 0, ideal });
        log(`  ${workers} worker(s): ${done.length}/${runs} runs completed, ${perSecond.toFixed(2)} runs/s`);
        for (const proc of stopping.splice(0).reverse()) await proc.stop();
      }
      const base = throughput[0]?.perSecond ?? Number.NaN;
      for (const row of throughput) row.speedup = row.perSecond / base;

      // Takeover: one run whose worker call takes a minute; its worker is killed inside it.
      const takeover: ScaleOutReport["takeover"] = [];
      for (const leaseSeconds of [30, 15]) {
        const cwd = path.join(directory, `takeover-${leaseSeconds}`);
        mkdirSync(cwd, { recursive: true });
        const scriptFile = path.join(cwd, "script.json");
        const callLog = path.join(cwd, "calls.jsonl");
        writeFileSync(scriptFile, JSON.stringify([planStep([PLAN[0] as PlannedSubtask], { times: 2 }), finalStep("s1", "42", { delayMs: 60_000, times: 2 })]));
        const env = {
          TROUPE_DATABASE_URL: await options.database(`takeover_${leaseSeconds}`),
          TROUPE_PROVIDER: "scripted", TROUPE_PROVIDER_MODULES: SCRIPTED_PROVIDER_MODULE,
          TROUPE_SCRIPT: scriptFile,
          TROUPE_SCRIPT_LOG: callLog,
          TROUPE_DATA_DIR: path.join(cwd, "data"),
          TROUPE_LEASE_SECONDS: String(leaseSeconds),
        };
        const front = await api(cwd, env);
        stopping.push(front);
        const first = await worker(cwd, env, 1);
        const second = await worker(cwd, env, 1);
        stopping.push(first, second);
        await send(agent, front.port as number, "POST", "/api/v1/execute", { task: "take a long time" });
        const starts = (): Array<{ pid: number; at: number }> => {
          try {
            return readFileSync(callLog, "utf8")
              .split("\n")
              .filter(Boolean)
              .map((line) => JSON.parse(line) as { phase: string; subtask?: string; pid: number; at: number })
              .filter((line) => line.phase === "start" && line.subtask === "s1");
          } catch {
            return [];
          }
        };
        const deadline = Date.now() + 60_000;
        while (starts().length === 0 && Date.now() < deadline) await sleep(50);
        const holder = starts()[0]?.pid;
        const victim = [first, second].find((proc) => proc.child.pid === holder);
        if (!victim) throw new Error("takeover: no worker took the run");
        victim.child.kill("SIGKILL");
        const killed = Date.now();
        while (starts().length < 2 && Date.now() - killed < 120_000) await sleep(50);
        const restarted = starts()[1];
        takeover.push({ leaseSeconds, ms: restarted ? restarted.at - killed : Number.NaN });
        log(`  takeover with a ${leaseSeconds} s lease: ${restarted ? `${((restarted.at - killed) / 1000).toFixed(1)} s` : "none"}`);
        for (const proc of stopping.splice(0).reverse()) await proc.stop();
      }

      // POST /execute through an API-only process, two workers taking the runs.
      const cwd = path.join(directory, "submit");
      mkdirSync(cwd, { recursive: true });
      const scriptFile = path.join(cwd, "script.json");
      writeFileSync(scriptFile, JSON.stringify(script(options.submissions + 500, options.latencyMs)));
      const env = { TROUPE_DATABASE_URL: await options.database("submit"), TROUPE_PROVIDER: "scripted", TROUPE_PROVIDER_MODULES: SCRIPTED_PROVIDER_MODULE, TROUPE_SCRIPT: scriptFile, TROUPE_DATA_DIR: path.join(cwd, "data") };
      const front = await api(cwd, env);
      stopping.push(front);
      stopping.push(await worker(cwd, env, options.concurrency), await worker(cwd, env, options.concurrency));
      const port = front.port as number;
      await Promise.all(Array.from({ length: options.connections }, () => send(agent, port, "GET", "/health")));
      for (let round = 0; round < 3; round += 1) await Promise.all(Array.from({ length: options.connections }, () => send(agent, port, "POST", "/api/v1/execute", { task: "" })));
      const latencies: number[] = [];
      let accepted = 0;
      let next = 0;
      await Promise.all(
        Array.from({ length: options.connections }, async () => {
          while (next < options.submissions) {
            const index = next++;
            const started = performance.now();
            const response = await send(agent, port, "POST", "/api/v1/execute", { task: `look the figure up, submission ${index}` });
            latencies.push(performance.now() - started);
            if (response.status === 202) accepted += 1;
          }
        }),
      );
      const sorted = [...latencies].sort((a, b) => a - b);
      const submitMs = { count: sorted.length, p50: percentile(sorted, 0.5), p95: percentile(sorted, 0.95), p99: percentile(sorted, 0.99), max: sorted.at(-1) ?? Number.NaN, accepted };
      log(`  POST /execute through the API-only process: p95 ${submitMs.p95.toFixed(1)} ms`);
      for (const proc of stopping.splice(0).reverse()) await proc.stop();

      const two = throughput.find((row) => row.workers === 2)?.speedup ?? Number.NaN;
      const four = throughput.find((row) => row.workers === 4)?.speedup ?? Number.NaN;
      return {
        latencyMs: options.latencyMs,
        concurrency: options.concurrency,
        modelCallsPerRun,
        throughput,
        takeover,
        submitMs,
        targets: { twoWorkers: 1.8, fourWorkers: 3.2, met: two >= 1.8 && four >= 3.2 },
      };
    } finally {
      for (const proc of stopping.reverse()) await proc.stop().catch(() => {});
      agent.destroy();
    }
  });
}
