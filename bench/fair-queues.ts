/**
 * Fair queues: alice floods `troupe serve` with evals (and tasks), then bob submits one small
 * eval (and one task); how long bob waits for his to start, and to finish. Issue 21 measured a
 * one-case eval waiting 124.5 s behind another key's 400 cases on main, whose queues were first
 * in, first out.
 */
import { Agent } from "node:http";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { call } from "./api-client.js";
import { api, type Proc, worker } from "./scale-out.js";
import { startServer } from "./server.js";
import { formatNumber as number, withTempDir } from "./support.js";

const ALICE = "key-alice-123";
const BOB = "key-bob-456";

export interface FairQueuesReport {
  flood: { evals: number; casesEach: number; tasks: number; maxRunning: number };
  /** Bob's one-case eval: accepted → its case started, and → finished; and how many of alice's cases had finished by then. */
  evalWaitMs: number;
  evalDoneMs: number;
  aliceCasesDoneBeforeBob: number;
  /** Bob's task: accepted → running, and → finished, with alice's tasks queued before it. */
  taskWaitMs: number;
  taskDoneMs: number;
  aliceTasksDoneBeforeBob: number;
  /** For comparison: main, first in first out (issue 21). */
  mainEvalWaitMs: number;
  /** The same task flood on Postgres: an API process and worker processes taking from pg-boss. */
  postgres?: TaskFlood & { workers: number; concurrency: number };
}

interface TaskFlood {
  taskWaitMs: number;
  taskDoneMs: number;
  aliceTasksDoneBeforeBob: number;
}

/** Alice queues `tasks` tasks, then bob submits one: how long until bob's runs and ends, and how many of alice's ended first. */
async function floodTasks(agent: Agent, port: number, tasks: number): Promise<TaskFlood> {
  const aliceTasks: string[] = [];
  for (let index = 0; index < tasks; index += 1) {
    aliceTasks.push(((await call(agent, port, ALICE, "POST", "/api/v1/execute", { task: `compute ${index} + 1 and save it to t${index}.txt` })).data as { task_id: string }).task_id);
  }
  const taskSubmitted = performance.now();
  const bobTask = ((await call(agent, port, BOB, "POST", "/api/v1/execute", { task: "compute 6 * 7" })).data as { task_id: string }).task_id;
  let taskWaitMs = Number.NaN;
  let taskDoneMs: number;
  const deadline = Date.now() + 300_000;
  for (;;) {
    const view = (await call(agent, port, BOB, "GET", `/api/v1/tasks/${bobTask}`)).data as { status: string };
    if (Number.isNaN(taskWaitMs) && view.status !== "queued") taskWaitMs = performance.now() - taskSubmitted;
    if (["completed", "failed", "cancelled"].includes(view.status) || Date.now() > deadline) {
      taskDoneMs = performance.now() - taskSubmitted;
      break;
    }
    await sleep(25);
  }
  let aliceTasksDoneBeforeBob = 0;
  for (const id of aliceTasks) {
    const view = (await call(agent, port, ALICE, "GET", `/api/v1/tasks/${id}`)).data as { status: string };
    if (view.status === "completed" || view.status === "failed") aliceTasksDoneBeforeBob += 1;
    else if (view.status === "queued") await call(agent, port, ALICE, "POST", `/api/v1/tasks/${id}/cancel`);
  }
  return { taskWaitMs, taskDoneMs, aliceTasksDoneBeforeBob };
}

/** The task flood through an API-only process and `workers` worker processes on Postgres. */
async function floodTasksOnPostgres(directory: string, databaseUrl: string, tasks: number, workers: number, concurrency: number): Promise<FairQueuesReport["postgres"]> {
  const env = { TROUPE_DATABASE_URL: databaseUrl, TROUPE_PROVIDER: "offline", TROUPE_API_KEYS: `alice:${ALICE},bob:${BOB}`, TROUPE_DATA_DIR: path.join(directory, "pg-data") };
  const processes: Proc[] = [];
  const agent = new Agent({ keepAlive: true, maxSockets: 16 });
  try {
    const front = await api(directory, env);
    processes.push(front);
    for (let index = 0; index < workers; index += 1) processes.push(await worker(directory, env, concurrency));
    return { ...(await floodTasks(agent, front.port as number, tasks)), workers, concurrency };
  } finally {
    agent.destroy();
    for (const proc of processes.reverse()) await proc.stop();
  }
}

export async function measureFairQueues(options: {
  evals: number;
  casesEach: number;
  tasks: number;
  maxRunning: number;
  /** A fresh Postgres database for the same task flood through worker processes (two, each running half of `maxRunning`). */
  postgres?: () => Promise<string>;
}): Promise<FairQueuesReport> {
  return withTempDir("troupe-bench-fair-", async (directory) => {
    const server = await startServer(directory, {
      TROUPE_DATA_DIR: path.join(directory, "data"),
      TROUPE_PROVIDER: "offline",
      TROUPE_API_KEYS: `alice:${ALICE},bob:${BOB}`,
      TROUPE_MAX_RUNNING: String(options.maxRunning),
    });
    const agent = new Agent({ keepAlive: true, maxSockets: 16 });
    const port = server.port;
    const suite = (count: number, prefix: string): string => Array.from({ length: count }, (_, index) => JSON.stringify({ id: `${prefix}${index}`, task: `compute ${index} * 7 and save it to r${index}.txt` })).join("\n");
    const aliceCasesDone = async (ids: string[]): Promise<number> => {
      let done = 0;
      for (const id of ids) {
        const view = (await call(agent, port, ALICE, "GET", `/api/v1/evals/${id}`)).data as { passed: number; failed: number };
        done += view.passed + view.failed;
      }
      return done;
    };
    try {
      // Evals: alice's flood, then bob's one case.
      const aliceEvals: string[] = [];
      for (let index = 0; index < options.evals; index += 1) {
        aliceEvals.push(((await call(agent, port, ALICE, "POST", "/api/v1/evals", { suite: suite(options.casesEach, `a${index}-`), concurrency: 2 })).data as { eval_id: string }).eval_id);
      }
      const submitted = performance.now();
      const bobEval = ((await call(agent, port, BOB, "POST", "/api/v1/evals", { suite: suite(1, "b"), concurrency: 1 })).data as { eval_id: string }).eval_id;
      let evalWaitMs = Number.NaN;
      let evalDoneMs = Number.NaN;
      for (;;) {
        const view = (await call(agent, port, BOB, "GET", `/api/v1/evals/${bobEval}`)).data as { status: string; cases: Array<{ run_id: string | null }> };
        if (Number.isNaN(evalWaitMs) && view.cases[0]?.run_id) evalWaitMs = performance.now() - submitted;
        if (["completed", "failed", "cancelled"].includes(view.status)) {
          evalDoneMs = performance.now() - submitted;
          break;
        }
        await sleep(25);
      }
      const aliceCasesDoneBeforeBob = await aliceCasesDone(aliceEvals);
      for (const id of aliceEvals) await call(agent, port, ALICE, "POST", `/api/v1/evals/${id}/cancel`);

      // Tasks: alice queues more than the server runs at once, then bob submits one.
      const tasks = await floodTasks(agent, port, options.tasks);
      await server.stop();
      const postgres = options.postgres ? await floodTasksOnPostgres(directory, await options.postgres(), options.tasks, 2, Math.max(1, Math.floor(options.maxRunning / 2))) : undefined;
      return {
        flood: { evals: options.evals, casesEach: options.casesEach, tasks: options.tasks, maxRunning: options.maxRunning },
        evalWaitMs,
        evalDoneMs,
        aliceCasesDoneBeforeBob,
        ...tasks,
        mainEvalWaitMs: 124_500,
        ...(postgres ? { postgres } : {}),
      };
    } finally {
      agent.destroy();
      await server.stop();
    }
  });
}

export function fairQueuesSection(report: FairQueuesReport): string {
  const { flood } = report;
  return [
    `21. Fair queues: alice submits ${flood.evals} evals of ${flood.casesEach} cases (${flood.evals * flood.casesEach} in all), then bob one eval of one case; then alice ${flood.tasks} tasks`,
    `    on a server running ${flood.maxRunning} at once, then bob one task (troupe serve, offline model).`,
    `    bob's eval: its case started ${number(report.evalWaitMs)} ms after he submitted it, finished at ${number(report.evalDoneMs)} ms (alice's cases done by then: ${report.aliceCasesDoneBeforeBob} of ${flood.evals * flood.casesEach})`,
    `    bob's task: running ${number(report.taskWaitMs)} ms after he submitted it, finished at ${number(report.taskDoneMs)} ms (alice's tasks done by then: ${report.aliceTasksDoneBeforeBob} of ${flood.tasks})`,
    ...(report.postgres
      ? [
          `    on Postgres (an API process, ${report.postgres.workers} worker processes running ${report.postgres.concurrency} each, pg-boss): bob's task running ${number(report.postgres.taskWaitMs)} ms after he submitted it,`,
          `    finished at ${number(report.postgres.taskDoneMs)} ms (alice's tasks done by then: ${report.postgres.aliceTasksDoneBeforeBob} of ${flood.tasks}); in pg-boss's own order (before issue 21) it ran after 7.3 s, behind all 40`,
        ]
      : []),
    `    on main (first in, first out) a one-case eval waited ${number(report.mainEvalWaitMs / 1000)} s behind another key's 400 cases (issue 21)`,
  ].join("\n");
}
