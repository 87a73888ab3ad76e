import path from "node:path";
import type { PlannedSubtask } from "../src/core/plan.js";
import type { RunResult } from "../src/core/run.js";
import { Troupe } from "../src/runtime/engine.js";
import { modelSetOf } from "../src/testing/model-set.js";
import { answerStep, finalStep, planStep, reviewStep, subtask } from "../src/testing/script.js";
import { ScriptedChatModel, type ScriptStep } from "../src/testing/scripted-chat-model.js";

/** Token usage every scripted reply reports, so no run pays for tokenizer counting. */
export const SCRIPTED_USAGE = { input: 100, output: 20 } as const;

/**
 * Eight subtasks in three waves: s1–s5 are independent, s6 and s7 each wait for two of them,
 * s8 waits for s5, s6 and s7. Every orchestration path (fan-out, join, re-dispatch) is used.
 */
export const LAYERED_PLAN: PlannedSubtask[] = [
  subtask("s1", "research", "Collect the first figure"),
  subtask("s2", "research", "Collect the second figure"),
  subtask("s3", "research", "Collect the third figure"),
  subtask("s4", "research", "Collect the fourth figure"),
  subtask("s5", "research", "Collect the fifth figure"),
  subtask("s6", "execute", "Combine the first and second figures", { dependsOn: ["s1", "s2"] }),
  subtask("s7", "execute", "Combine the third and fourth figures", { dependsOn: ["s3", "s4"] }),
  subtask("s8", "execute", "Combine everything", { dependsOn: ["s5", "s6", "s7"] }),
];

/** Sixteen independent subtasks: one wave, as wide as it gets. */
export const WIDE_PLAN: PlannedSubtask[] = Array.from({ length: 16 }, (_, index) => subtask(`s${index + 1}`, "research", `Collect figure ${index + 1}`));

/** Model calls one run of a plan makes: the planner, one per worker, the critic and the synthesizer. */
export function modelCallsFor(plan: PlannedSubtask[]): number {
  return plan.length + 3;
}

export interface ScriptOptions {
  /** How many runs the script serves: each step answers this many calls. */
  runs: number;
  /** Leave usage out so troupe counts tokens itself (gpt-tokenizer), as it does for providers that do not report usage. */
  withoutUsage?: boolean;
  /** Latency of each worker reply; the planner, critic and synthesizer always answer at once. */
  workerDelayMs?: number;
}

/** The scripted replies for `runs` runs of a plan whose workers answer at once and whose review passes. */
export function scriptFor(plan: PlannedSubtask[], options: ScriptOptions): ScriptStep[] {
  const extra = { times: options.runs, ...(options.withoutUsage ? {} : { usage: { ...SCRIPTED_USAGE } }) };
  return [
    planStep(plan, extra),
    ...plan.map((item) => finalStep(item.id, `result of ${item.id}`, { ...extra, delayMs: options.workerDelayMs ?? 0 })),
    reviewStep(0.9, {}, extra),
    answerStep("All the figures are combined.", extra),
  ];
}

/**
 * A troupe instance on the real product path (SQLite store, sync durability) with one scripted
 * model for every role. The model does not stream: the raw LangGraph graph it is compared with
 * invokes its model, so both do the same model work.
 */
export async function createScriptedTroupe(directory: string, steps: ScriptStep[]): Promise<{ troupe: Troupe; model: ScriptedChatModel }> {
  const model = new ScriptedChatModel({ steps, streaming: false });
  const troupe = await Troupe.create({
    models: modelSetOf(model),
    dataDir: path.join(directory, "data"),
    workspace: path.join(directory, "workspace"),
  });
  return { troupe, model };
}

/** Fails loudly when a run did not go as scripted: its figures would measure something else. */
export function expectCompleted(result: RunResult, model: ScriptedChatModel, label: string): void {
  if (result.status !== "completed") throw new Error(`${label}: the run ended ${result.status} (${result.error ?? result.stopReason ?? "no reason"})`);
  if (model.unexpected.length > 0) throw new Error(`${label}: the scripted model got ${model.unexpected.length} unexpected call(s)`);
}
