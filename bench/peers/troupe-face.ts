import type { BaseMessage } from "@langchain/core/messages";
import { HANDLE_KEY, parseSections, SECTIONS, STRUCTURED_OUTPUT } from "../../src/core/prompt-protocol.js";
import type { ToolSpec } from "../../src/core/tool-spec.js";
import { type PlanStyle, writeCompactPlan, writePlan } from "./plan-writer.js";
import { parseResult } from "./solution.js";
import { type PeerTask, taskOfText } from "./tasks.js";

/**
 * The oracle in troupe's roles, reading troupe's prompts as a model would: the planner's task
 * (it answers with the solution's subtasks, in the plan schema it was sent), a worker's subtask
 * and arguments (it calls the step's tool with arguments made from the values it was shown, then
 * submits the tool output by its handle), the critic's outcomes (it passes the work when every
 * subtask is done) and the synthesizer's outcomes (it answers from the results shown there).
 */

/** What the oracle answers: text, or tool calls. */
export interface OracleReply {
  text: string;
  toolCalls: Array<{ name: string; args: Record<string, unknown> }>;
}

function textOf(message: BaseMessage | undefined): string {
  if (!message) return "";
  return typeof message.content === "string" ? message.content : message.text;
}

function parseJson<T>(text: string | undefined): T | undefined {
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as T;
  } catch {
    return undefined;
  }
}

/** The request: the last human message made of sections. */
function requestSections(messages: readonly BaseMessage[]): { sections: Map<string, string>; index: number } {
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index] as BaseMessage;
    if (message.getType() !== "human") continue;
    const sections = parseSections(textOf(message));
    if (sections.size > 0) return { sections, index };
  }
  return { sections: new Map(), index: -1 };
}

function taskFrom(sections: Map<string, string>): PeerTask {
  const task = taskOfText(sections.get(SECTIONS.task) ?? "");
  if (!task) throw new Error(`the oracle does not know the task ${JSON.stringify((sections.get(SECTIONS.task) ?? "").slice(0, 120))}`);
  return task;
}

function structured(name: string, tools: readonly ToolSpec[], value: Record<string, unknown>): OracleReply {
  if (!tools.some((tool) => tool.function.name === name)) return { text: JSON.stringify(value), toolCalls: [] };
  return { text: "", toolCalls: [{ name, args: value }] };
}

/** The compact wire's format line in the planner's system prompt: a step a line. */
const COMPACT_FORMAT = "s1 = tool(name: value, …)";

export function plannerReply(messages: readonly BaseMessage[], tools: readonly ToolSpec[], style: PlanStyle): OracleReply {
  const task = taskFrom(requestSections(messages).sections);
  const parameters = tools.find((tool) => tool.function.name === STRUCTURED_OUTPUT.plan)?.function.parameters as Record<string, unknown> | undefined;
  // The wire the planner asked for: the plan function's JSON when it bound one, the compact lines when its prompt gives them.
  if (!parameters && textOf(messages.find((message) => message.getType() === "system")).includes(COMPACT_FORMAT)) return { text: writeCompactPlan(task, style), toolCalls: [] };
  return structured(STRUCTURED_OUTPUT.plan, tools, writePlan(task, parameters, style));
}

/**
 * A worker: the step's tool call from the arguments it was shown, then its output submitted by
 * handle — or, when its subtask message says its result is the answer (`## Answer`, the fast
 * route), the answer in words made from the tool output it was shown, as the synthesizer would.
 */
export function workerReply(messages: readonly BaseMessage[]): OracleReply {
  const { sections, index } = requestSections(messages);
  const task = taskFrom(sections);
  const id = /^(\S+)/.exec(sections.get(SECTIONS.subtask) ?? "")?.[1];
  const step = task.steps.find((candidate) => candidate.id === id);
  if (!step) throw new Error(`the oracle has no step ${id} in task ${task.id}`);
  const replies = messages.slice(index + 1).filter((message) => message.getType() === "tool");
  const last = replies.at(-1);
  if (last) {
    const body = parseJson<{ ok?: boolean; value?: unknown; error?: { message?: string }; [HANDLE_KEY]?: string }>(textOf(last));
    if (body?.ok && sections.has(SECTIONS.answer) && body.value !== undefined && id !== undefined) {
      const answer = answerFrom(task, { [id]: body.value });
      if (answer !== undefined) return { text: "", toolCalls: [{ name: STRUCTURED_OUTPUT.result, args: { status: "done", result: answer, from: null, path: null, reason: null } }] };
    }
    if (body?.ok && typeof body[HANDLE_KEY] === "string") return { text: "", toolCalls: [{ name: STRUCTURED_OUTPUT.result, args: { status: "done", result: null, from: body[HANDLE_KEY], path: null, reason: null } }] };
    return { text: "", toolCalls: [{ name: STRUCTURED_OUTPUT.result, args: { status: "failed", result: null, from: null, path: null, reason: body?.error?.message ?? `the tool answered ${textOf(last).slice(0, 200)}` } }] };
  }
  const inputs = parseJson<Record<string, unknown>>(sections.get(SECTIONS.arguments)) ?? {};
  return { text: "", toolCalls: [{ name: step.tool, args: step.call(inputs) }] };
}

interface OutcomeLine {
  id: string;
  status: string;
  summary?: string;
  extract?: string;
  items?: { total: number; listed: Array<{ index: number; status: string; output?: string }> };
}

function outcomesOf(messages: readonly BaseMessage[]): OutcomeLine[] {
  return parseJson<OutcomeLine[]>(requestSections(messages).sections.get(SECTIONS.outcomes)) ?? [];
}

export function criticReply(messages: readonly BaseMessage[], tools: readonly ToolSpec[]): OracleReply {
  const outcomes = outcomesOf(messages);
  const failed = outcomes.filter((outcome) => outcome.status !== "done");
  const score = failed.length === 0 ? 1 : Math.max(0, 1 - failed.length / Math.max(1, outcomes.length));
  return structured(STRUCTURED_OUTPUT.review, tools, {
    scores: { accuracy: score, completeness: score, relevance: 1, logic: 1 },
    issues: failed.map((outcome) => `${outcome.id} is ${outcome.status}`),
    redo: failed.filter((outcome) => outcome.status === "failed").map((outcome) => outcome.id),
    replan: false,
  });
}

/** The synthesizer: the answer from the results the outcomes show (a mapped subtask's from its listed items). */
export function synthesizerReply(messages: readonly BaseMessage[]): OracleReply {
  const task = taskFrom(requestSections(messages).sections);
  const results: Record<string, unknown> = {};
  for (const outcome of outcomesOf(messages)) {
    if (outcome.status !== "done") continue;
    if (outcome.items) {
      const listed = [...outcome.items.listed].sort((a, b) => a.index - b.index);
      if (listed.length === outcome.items.total) results[outcome.id] = listed.map((item) => (item.output === undefined ? undefined : parseResult(item.output)));
      continue;
    }
    const shown = outcome.extract ?? outcome.summary;
    if (shown !== undefined) results[outcome.id] = parseResult(shown);
  }
  return { text: answerFrom(task, results) ?? `The outcomes do not show what the answer needs (${Object.keys(results).join(", ") || "no results"}).`, toolCalls: [] };
}

/** The task's answer from the results seen, or undefined when they do not hold what it needs. */
function answerFrom(task: PeerTask, results: Record<string, unknown>): string | undefined {
  try {
    return task.answer(results);
  } catch {
    return undefined;
  }
}
