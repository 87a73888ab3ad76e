/**
 * Busy-thread strategies when the run in the way is driven by ANOTHER process: on Postgres an
 * API-only `troupe serve` takes the new task and the `troupe worker` driving the old run is told
 * by a `supersede` control message; on SQLite the holder (`troupe serve`, or a `troupe run`) reads
 * the `superseded_by` flag that a `troupe run` in another process sets. (The new task comes from a
 * CLI process there: an API thread belongs to its key, a CLI run to no key, so the server does not
 * take a task on a thread a CLI run holds, while the CLI, the operator, may use any thread.)
 */
import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Troupe } from "../src/runtime/engine.js";
import { finalStep, planStep, reviewStep, subtask } from "../src/testing/script.js";
import { cleanEnv, CLI, readScriptLog, type ScriptLogLine, tempDir, writeScript } from "./helpers.js";
import { freshDatabase } from "./postgres.js";
import { call, serveApi, startWorker, stopAll, submit, until } from "./scale-out-helpers.js";

/** CLI processes a test left running (it failed midway). */
const cliProcesses: Array<() => void> = [];
afterEach(async () => {
  for (const kill of cliProcesses.splice(0)) kill();
  await stopAll();
});

type Steps = Parameters<typeof writeScript>[2];

// Each plan has one worker subtask: the critic reviews it and its result is the answer (the fast route, no synthesizer).

/** interrupt: a long run whose slow first step is under way when the urgent task comes. */
const interruptSteps = (slowMs: number): Steps => [
  planStep([subtask("s1", "execute", "Slow first step"), subtask("s2", "execute", "Never reached", { dependsOn: ["s1"] })], { contains: "long task" }),
  finalStep("s1", "slow one", { contains: "Slow first step", delayMs: slowMs }),
  planStep([subtask("s1", "execute", "Quick")], { contains: "urgent task" }),
  finalStep("s1", "quick", { contains: "Quick" }),
  reviewStep(0.9, {}, { contains: "urgent task" }),
];

/** rollback: a base run, then a mistaken one (stuck in a long step) that the corrected task discards. */
const rollbackSteps = (stuckMs: number): Steps => [
  planStep([subtask("s1", "execute", "Base")], { contains: "base task" }),
  finalStep("s1", "base", { contains: "Base" }),
  reviewStep(0.9, {}, { contains: "base task" }),
  planStep([subtask("s1", "execute", "Wrong turn")], { contains: "mistaken task" }),
  finalStep("s1", "wrong", { contains: "Wrong turn", delayMs: stuckMs }),
  planStep([subtask("s1", "execute", "Right turn")], { contains: "corrected task" }),
  finalStep("s1", "right", { contains: "Right turn" }),
  reviewStep(0.9, {}, { contains: "corrected task" }),
];

async function deployment(steps: Steps, env: Record<string, string>) {
  const directory = tempDir("troupe-busy-");
  const workspace = path.join(directory, "workspace");
  mkdirSync(workspace);
  const log = path.join(directory, "calls.jsonl");
  return { directory, log, env: { TROUPE_PROVIDER: "scripted", TROUPE_SCRIPT: writeScript(directory, "script.json", steps), TROUPE_SCRIPT_LOG: log, TROUPE_WORKSPACE: workspace, ...env } };
}

/** `troupe run --json` in its own process, left running; resolves with its exit and its JSON result. */
function cliRun(directory: string, env: Record<string, string>, args: string[]) {
  const child = spawn(process.execPath, [CLI, "run", "--json", ...args], { cwd: directory, env: { ...cleanEnv(), TROUPE_LOG_LEVEL: "warn", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<{ code: number | null; result: Record<string, unknown> | undefined; stderr: string }>((resolve) =>
    child.on("close", (code) => {
      let result: Record<string, unknown> | undefined;
      try {
        result = JSON.parse(stdout) as Record<string, unknown>;
      } catch {
        result = undefined;
      }
      resolve({ code, result, stderr });
    }),
  );
  const kill = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  };
  cliProcesses.push(kill);
  return { pid: child.pid as number, exited };
}

const task = (api: string, id: string) => call<{ status: string; error?: string; result?: { answer: string } }>(`${api}/api/v1/tasks/${id}`);
const settled = (api: string, id: string, statuses: string[]) =>
  until(async () => {
    const { data } = (await task(api, id)).body;
    return statuses.includes(data.status) ? data : undefined;
  }, `${id} to be ${statuses.join(" or ")}`);
const logged = (log: string, match: (line: ScriptLogLine) => boolean, what: string) => until(() => (readScriptLog(log).some(match) ? true : undefined), what);
/** Whether two lines of the call log are the same call's (its number in its process). */
const sameCall = (line: ScriptLogLine, other: ScriptLogLine) => line.pid === other.pid && (line as { index?: number }).index === (other as { index?: number }).index;

/** The runs a thread's checkpoints belong to. */
const historyOwners = async (api: string, threadId: string): Promise<Set<string | null>> => {
  const history = await call<{ checkpoints: Array<{ task_id: string | null }> }>(`${api}/api/v1/threads/${threadId}/history`);
  if (history.status !== 200) throw new Error(`history of ${threadId}: ${history.status} ${JSON.stringify(history.body)}`);
  return new Set(history.body.data.checkpoints.map((entry) => entry.task_id));
};

describe("busy threads across processes", () => {
  it("Postgres: interrupt and rollback reach the worker process driving the run in the way (a supersede control message)", async () => {
    const { directory, log, env } = await deployment([...interruptSteps(3_000), ...rollbackSteps(60_000)], { TROUPE_DATABASE_URL: await freshDatabase("busy_pg") });
    const api = await serveApi(directory, env);
    const worker = await startWorker(directory, env, 3);

    // interrupt: the urgent task reaches the API process; the long run is on the worker, inside its slow step.
    const long = await submit(api.url, { task: "the long task", thread_id: "pg-interrupt" });
    await logged(log, (line) => line.pid === worker.pid && line.role === "execute" && line.subtask === "s1" && line.phase === "start", "the slow step to start on the worker");
    const urgent = await submit(api.url, { task: "the urgent task", thread_id: "pg-interrupt", on_busy: "interrupt" });
    const stopped = await settled(api.url, long, ["cancelled", "completed", "failed"]);
    expect(stopped).toMatchObject({ status: "cancelled", error: expect.stringContaining(`make way for run ${urgent}`) });
    expect(await settled(api.url, urgent, ["completed", "failed", "cancelled"])).toMatchObject({ status: "completed", result: { answer: "quick" } });
    // The slow step was let finish (a superstep boundary), and the step after it never started.
    const workerCalls = readScriptLog(log).filter((line) => line.role === "execute");
    expect(workerCalls.filter((line) => line.subtask === "s1" && line.phase === "end").length).toBeGreaterThanOrEqual(1);
    expect(workerCalls.filter((line) => line.subtask === "s2")).toEqual([]);

    // rollback: the mistaken run is stuck in a long step on the worker; the corrected task discards it.
    const base = await submit(api.url, { task: "the base task", thread_id: "pg-rollback" });
    await settled(api.url, base, ["completed"]);
    const callsBefore = readScriptLog(log).length;
    const mistaken = await submit(api.url, { task: "the mistaken task", thread_id: "pg-rollback" });
    const stuck = await until(() => readScriptLog(log).slice(callsBefore).find((line) => line.role === "execute" && line.phase === "start"), "the mistaken run's step to start");
    const corrected = await submit(api.url, { task: "the corrected task", thread_id: "pg-rollback", on_busy: "rollback" });
    // Stopped at once (its step takes a minute), then discarded.
    expect(await settled(api.url, corrected, ["completed", "failed", "cancelled"])).toMatchObject({ status: "completed", result: { answer: "right" } });
    expect((await task(api.url, mistaken)).status).toBe(404);
    // Its minute-long model call was cut short: it started and never ended.
    expect(readScriptLog(log).filter((line) => sameCall(line, stuck) && line.phase === "end")).toEqual([]);
    expect(await historyOwners(api.url, "pg-rollback")).toEqual(new Set([base, corrected]));
  });

  it("SQLite: interrupt and rollback reach the process holding the thread (`troupe serve`, or `troupe run`) from a `troupe run` in another process (the superseded_by flag the holder polls)", async () => {
    const { directory, log, env } = await deployment([], {});
    const data = { ...env, TROUPE_DATA_DIR: path.join(directory, "data") };
    // The slow step must still be going when `troupe run` (a process that takes seconds to start on a loaded machine) sets the flag.
    const [longSteps, urgentSteps] = [interruptSteps(15_000).slice(0, 2), interruptSteps(15_000).slice(2)];
    const [base, mistaken, corrected] = [rollbackSteps(60_000).slice(0, 3), rollbackSteps(60_000).slice(3, 5), rollbackSteps(60_000).slice(5)];
    const serveEnv = { ...data, TROUPE_SCRIPT: writeScript(directory, "serve.json", longSteps) };
    // Each CLI process reads its own copy: a planner that sees an earlier run in its thread's history must meet its own step first.
    const cliEnv = { ...data, TROUPE_SCRIPT: writeScript(directory, "cli.json", [...corrected, ...mistaken, ...urgentSteps, ...base]) };
    const serve = await serveApi(directory, serveEnv, []);

    // interrupt: the server drives the long run, inside its slow first step, when `troupe run` brings the urgent task.
    // (An API thread's runs are its key's; the CLI acts as the operator and may use any thread.)
    const long = await submit(serve.url, { task: "the long task", thread_id: "sq-interrupt" });
    await logged(log, (line) => line.pid === serve.pid && line.role === "execute" && line.subtask === "s1" && line.phase === "start", "the server's slow step to start");
    const urgent = await cliRun(directory, cliEnv, ["the urgent task", "--thread", "sq-interrupt", "--on-busy", "interrupt"]).exited;
    expect(urgent.result).toMatchObject({ status: "completed", answer: "quick" });
    const stopped = await settled(serve.url, long, ["cancelled", "completed", "failed"]);
    expect(stopped).toMatchObject({ status: "cancelled", error: expect.stringContaining(`make way for run ${urgent.result?.runId as string}`) });
    const serverCalls = readScriptLog(log).filter((line) => line.pid === serve.pid && line.role === "execute");
    expect(serverCalls.filter((line) => line.subtask === "s1" && line.phase === "end")).toHaveLength(1);
    expect(serverCalls.filter((line) => line.subtask === "s2")).toEqual([]);

    // rollback: a base run, then `troupe run` stuck in a minute-long step, and another `troupe run` that discards it.
    const baseRun = await cliRun(directory, cliEnv, ["the base task", "--thread", "sq-rollback"]).exited;
    expect(baseRun.result).toMatchObject({ status: "completed" });
    const holder = cliRun(directory, cliEnv, ["the mistaken task", "--thread", "sq-rollback"]);
    const stuck = await until(() => readScriptLog(log).find((line) => line.pid === holder.pid && line.role === "execute" && line.phase === "start"), "the holder's step to start");
    const correctedRun = await cliRun(directory, cliEnv, ["the corrected task", "--thread", "sq-rollback", "--on-busy", "rollback"]).exited;
    expect(correctedRun.result).toMatchObject({ status: "completed", answer: "right" });
    const held = await holder.exited;
    expect(held.result).toMatchObject({ status: "cancelled" });
    // Its minute-long model call was cut short: it started and never ended.
    expect(readScriptLog(log).filter((line) => sameCall(line, stuck) && line.phase === "end")).toEqual([]);
    await serve.stop();
    const troupe = await Troupe.create({ provider: "offline", dataDir: data.TROUPE_DATA_DIR, workspace: env.TROUPE_WORKSPACE });
    try {
      expect(await troupe.store.runs.get(held.result?.runId as string)).toBeUndefined();
      expect(await troupe.store.events.list(held.result?.runId as string, 0, 100)).toEqual([]);
      expect(new Set((await troupe.history("sq-rollback")).map((entry) => entry.runId))).toEqual(new Set([baseRun.result?.runId, correctedRun.result?.runId]));
      expect((await troupe.store.runs.list({ threadId: "sq-rollback", limit: 10 })).map((run) => run.id).sort()).toEqual([baseRun.result?.runId, correctedRun.result?.runId].sort());
    } finally {
      await troupe.shutdown();
    }
  });
});
