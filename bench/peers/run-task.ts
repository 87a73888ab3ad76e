import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { errorMessage } from "../../src/core/errors.js";
import { type Framework, workspaceOf } from "./frameworks.js";
import { type ModelCallRecord, type ModelLatency, Meter } from "./meter.js";
import type { Group, PeerTask } from "./tasks.js";
import type { ToolLatencies } from "./world.js";

/** One task through one framework. */
export interface TaskRun {
  framework: string;
  task: string;
  group: Group;
  /** From the start of the run to its final answer, in milliseconds (setup not counted). */
  makespanMs: number;
  modelCalls: number;
  promptTokens: number;
  completionTokens: number;
  /** Whether the answer (and the files) are right. */
  correct: boolean;
  /** Why not, when not. */
  problem?: string;
  answer: string;
  /** Calls and prompt tokens by the role the oracle played (planner, worker, critic, synthesizer; supervisor, specialist…). */
  byRole: Record<string, { calls: number; promptTokens: number; completionTokens: number }>;
}

export interface RunOptions {
  latencies: ToolLatencies;
  modelLatency: ModelLatency;
}

function byRole(calls: readonly ModelCallRecord[]): TaskRun["byRole"] {
  const roles: TaskRun["byRole"] = {};
  for (const call of calls) {
    const entry = (roles[call.role] ??= { calls: 0, promptTokens: 0, completionTokens: 0 });
    entry.calls += 1;
    entry.promptTokens += call.promptTokens;
    entry.completionTokens += call.completionTokens;
  }
  return roles;
}

/** Runs a task through a framework in a folder of its own and checks the answer; a failure is a wrong answer with its reason, never a thrown error. */
export async function runTask(framework: Framework, task: PeerTask, options: RunOptions): Promise<TaskRun> {
  const directory = await mkdtemp(path.join(tmpdir(), "troupe-peers-"));
  const meter = new Meter(options.modelLatency);
  const run = { task, meter, latencies: options.latencies, directory };
  let answer = "";
  let problem: string | undefined;
  let makespanMs = 0;
  try {
    await mkdir(workspaceOf(run), { recursive: true });
    const prepared = await framework.prepare(run);
    try {
      const started = performance.now();
      try {
        answer = await prepared.start();
      } finally {
        makespanMs = performance.now() - started;
      }
    } finally {
      await prepared.close();
    }
    problem = await task.check(answer, workspaceOf(run));
  } catch (error) {
    problem = `failed: ${errorMessage(error)}`;
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
  return {
    framework: framework.name,
    task: task.id,
    group: task.group,
    makespanMs,
    modelCalls: meter.calls.length,
    promptTokens: meter.promptTokens,
    completionTokens: meter.completionTokens,
    correct: problem === undefined,
    ...(problem !== undefined ? { problem } : {}),
    answer,
    byRole: byRole(meter.calls),
  };
}
