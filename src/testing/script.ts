import type { PlannedSubtask } from "../core/plan.js";
import { STRUCTURED_OUTPUT } from "../core/prompt-protocol.js";
import type { CriticOutput } from "../core/review.js";
import type { ScriptStep } from "./scripted-chat-model.js";

type Extra = Omit<ScriptStep, "role" | "subtask" | "content" | "toolCalls">;

/** A subtask with defaults for the fields a test does not care about. */
export function subtask(id: string, agent: string, label: string, fields: Partial<PlannedSubtask> = {}): PlannedSubtask {
  return { id, agent, label, dependsOn: [], args: {}, ...fields };
}

/** The planner submits these subtasks. */
export function planStep(subtasks: PlannedSubtask[], extra: Extra = {}): ScriptStep {
  return { role: "planner", toolCalls: [{ name: STRUCTURED_OUTPUT.plan, args: { subtasks } }], ...extra };
}

/** The planner asks a person a question. */
export function questionStep(question: string, extra: Extra = {}): ScriptStep {
  return { role: "planner", toolCalls: [{ name: STRUCTURED_OUTPUT.plan, args: { subtasks: [], question } }], ...extra };
}

/** The critic's verdict; a number gives every dimension that score. */
export function reviewStep(scores: number | CriticOutput["scores"], fields: Partial<Omit<CriticOutput, "scores">> = {}, extra: Extra = {}): ScriptStep {
  const all = typeof scores === "number" ? { accuracy: scores, completeness: scores, relevance: scores, logic: scores } : scores;
  return { role: "critic", toolCalls: [{ name: STRUCTURED_OUTPUT.review, args: { scores: all, issues: [], redo: [], replan: false, ...fields } }], ...extra };
}

/** The synthesizer's answer. */
export function answerStep(text: string, extra: Extra = {}): ScriptStep {
  return { role: "synthesizer", content: text, ...extra };
}

/** A worker on `subtaskId` calls a tool. */
export function toolStep(subtaskId: string, name: string, args: Record<string, unknown>, extra: Extra = {}): ScriptStep {
  return { role: "worker", subtask: subtaskId, toolCalls: [{ name, args }], ...extra };
}

/** What a worker submits to end its subtask (`submit_result`'s arguments). */
export interface ScriptedOutcome {
  status: "done" | "failed" | "unable";
  result?: string;
  from?: string;
  path?: string;
  reason?: string;
}

/** A worker on `subtaskId` ends its subtask with this outcome (through `submit_result`, as workers do). */
export function outcomeStep(subtaskId: string, outcome: ScriptedOutcome, extra: Extra = {}): ScriptStep {
  const args = { status: outcome.status, result: outcome.result ?? null, from: outcome.from ?? null, path: outcome.path ?? null, reason: outcome.reason ?? null };
  return { role: "worker", subtask: subtaskId, toolCalls: [{ name: STRUCTURED_OUTPUT.result, args }], ...extra };
}

/**
 * A worker on `subtaskId` ends its subtask: done with `text` as its result, or — when `text`
 * starts with `FAILED:` or `UNABLE:` — failed or unable with the rest as the reason.
 */
export function finalStep(subtaskId: string, text: string, extra: Extra = {}): ScriptStep {
  const declared = /^(FAILED|UNABLE):\s*([\s\S]*)$/.exec(text);
  if (declared) return outcomeStep(subtaskId, { status: declared[1] === "FAILED" ? "failed" : "unable", reason: declared[2] || "gave up" }, extra);
  return outcomeStep(subtaskId, { status: "done", result: text }, extra);
}
