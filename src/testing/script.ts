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

/** A worker on `subtaskId` answers (ending its loop). */
export function finalStep(subtaskId: string, content: string, extra: Extra = {}): ScriptStep {
  return { role: "worker", subtask: subtaskId, content, ...extra };
}
