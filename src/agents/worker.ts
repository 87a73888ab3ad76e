import type { BaseLanguageModelInput } from "@langchain/core/language_models/base";
import { type AIMessage, type BaseMessage, HumanMessage, SystemMessage, ToolMessage } from "@langchain/core/messages";
import type { Runnable } from "@langchain/core/runnables";
import { isBudgetExhausted } from "../core/budget.js";
import { LIMITS } from "../core/limits.js";
import type { PlannedSubtask } from "../core/plan.js";
import { FAILED_PREFIX, roleLine, SECTIONS, section } from "../core/prompt-protocol.js";
import { stableStringify, truncate } from "../core/text.js";
import type { ToolContext, ToolOutcome } from "../tools/define-tool.js";
import type { ToolRegistry } from "../tools/registry.js";
import type { ModelCandidate, ModelRoute } from "../providers/registry.js";
import type { AgentDefinition } from "./define-agent.js";
import { type CallOptions, callModel, modelFailure } from "./model-call.js";
import { fitToBudget, HANDLE_KEY, isValueHandle, type PreparedValue, prepareValue, promptValue, scaled } from "./prompt-budget.js";

/** What a worker knows of a subtask it depends on. */
export interface DependencyView {
  id: string;
  label: string;
  summary: string;
}

export interface WorkerInput {
  agent: AgentDefinition;
  model: ModelRoute;
  tools: ToolRegistry;
  task: string;
  subtask: PlannedSubtask;
  args: Record<string, unknown>;
  dependencies: DependencyView[];
  feedback: string[];
  toolContext: ToolContext;
  maxSteps: number;
  /** Prompt tokens one model call may use; the conversation is trimmed to fit. */
  promptBudget?: number;
  /** For one item of a mapped subtask: which item, and the argument it is. */
  item?: { index: number; total: number; argument: string };
  /** Told about each tool call as it finishes. */
  onToolCall?: (call: WorkerToolCall) => void;
}

/** One tool call made by a worker, for the trace. */
export interface WorkerToolCall {
  tool: string;
  args: unknown;
  outcome: ToolOutcome;
  durationMs: number;
}

export interface WorkerOutcome {
  status: "done" | "failed";
  value?: unknown;
  summary: string;
  error?: string;
  toolCalls: WorkerToolCall[];
  steps: number;
}

/** How much of a tool result goes back into the conversation (at full detail; older replies get less). */
const TOOL_RESULT_CHARS = 8_000;
const OLDER_TOOL_RESULT_CHARS = 2_000;
/** Arguments whose JSON is longer than this (at full detail) are shown as a handle with a preview. */
const ARG_INLINE_CHARS = 4_000;
const ARG_PREVIEW_CHARS = 1_500;

function workerPrompt(agent: AgentDefinition, tools: string[], maxSteps: number): string {
  return [
    roleLine(`${agent.name} worker`),
    agent.instructions,
    `Your tools: ${tools.length > 0 ? tools.join(", ") : "none"}. You have at most ${maxSteps} steps.`,
    `When you are done, answer without calling a tool. If you cannot complete the subtask, answer "${FAILED_PREFIX} <reason>".`,
    "Answer with the result only; do not describe your private reasoning.",
  ].join("\n");
}

interface PreparedInput {
  input: WorkerInput;
  args: Array<[string, PreparedValue]>;
}

function subtaskMessage({ input, args }: PreparedInput, detail: number): string {
  const parts = [
    section(SECTIONS.task, truncate(input.task, scaled(LIMITS.taskMaxChars, detail, 300))),
    section(SECTIONS.subtask, `${input.subtask.id} (${input.subtask.agent}): ${input.subtask.label}`),
  ];
  if (input.item) {
    parts.push(section(SECTIONS.mapItem, `item ${input.item.index + 1} of ${input.item.total}: the argument "${input.item.argument}" is this item`));
  }
  const shown: Record<string, unknown> = {};
  const inline = scaled(ARG_INLINE_CHARS, detail, 200);
  const previewChars = Math.round(ARG_PREVIEW_CHARS * detail);
  for (const [name, prepared] of args) shown[name] = promptValue(prepared, `args.${name}`, inline, previewChars);
  parts.push(section(SECTIONS.arguments, JSON.stringify(shown, null, 2)));
  if (Object.values(shown).some(isValueHandle)) {
    parts.push(
      section(
        SECTIONS.handles,
        `Arguments shown as {"${HANDLE_KEY}": …} are too large for this prompt: you see their size, shape and a preview. To give one to a tool, pass {"${HANDLE_KEY}": "<its key>"} as that tool argument; the full value is put in its place.`,
      ),
    );
  }
  if (input.dependencies.length > 0) {
    const count = scaled(50, detail, 5);
    const summaryChars = scaled(LIMITS.previewChars, detail, 80);
    const lines = input.dependencies.slice(0, count).map((dependency) => `- ${dependency.id} (${truncate(dependency.label, 120)}): ${truncate(dependency.summary, summaryChars)}`);
    if (input.dependencies.length > count) lines.push(`- … and ${input.dependencies.length - count} more`);
    parts.push(section(SECTIONS.dependencies, lines.join("\n")));
  }
  if (input.feedback.length > 0) {
    const lineChars = scaled(500, detail, 100);
    parts.push(section(SECTIONS.feedback, input.feedback.slice(0, 10).map((line) => `- ${truncate(line, lineChars)}`).join("\n")));
  }
  return parts.join("\n\n");
}

/** A tool result kept for the conversation, with its JSON measured once (it is rendered at every step). */
interface ToolResult {
  id: string;
  name: string;
  outcome: ToolOutcome;
  handle: string;
  text: string;
  valueText?: string;
}

/**
 * The tool outcome as the model reads it: JSON, cut to `max` characters. A cut value keeps its
 * summary and a preview, and a handle the model can pass on to another tool for the full value.
 */
function toolReply(result: ToolResult, max: number): string {
  const { outcome, text } = result;
  if (text.length <= max) return text;
  if (!outcome.ok) return truncate(text, max);
  result.valueText ??= typeof outcome.value === "string" ? outcome.value : (JSON.stringify(outcome.value) ?? "null");
  const summary = truncate(outcome.summary, Math.max(100, Math.floor(max / 4)));
  return JSON.stringify({ ok: true, summary, value: truncate(result.valueText, Math.max(50, max - summary.length - 120)), truncated: true, [HANDLE_KEY]: result.handle });
}

/** One step of the conversation after the subtask message: the model's reply and the tool results it got. */
interface Turn {
  response: AIMessage;
  results: ToolResult[];
}

function conversation(system: SystemMessage, prepared: PreparedInput, turns: Turn[], detail: number): BaseMessage[] {
  const messages: BaseMessage[] = [system, new HumanMessage(subtaskMessage(prepared, detail))];
  turns.forEach((turn, index) => {
    messages.push(turn.response);
    const latest = index === turns.length - 1;
    const max = latest ? scaled(TOOL_RESULT_CHARS, detail, 300) : scaled(OLDER_TOOL_RESULT_CHARS, detail, 200);
    for (const result of turn.results) messages.push(new ToolMessage({ tool_call_id: result.id, name: result.name, content: toolReply(result, max) }));
  });
  return messages;
}

/**
 * A tool call's arguments with every handle the model passed back (`{"$stash": key}`) replaced by
 * the full value; a value for a parameter the tool takes as a string is given as text.
 */
function substituteHandles(tools: ToolRegistry, name: string, args: Record<string, unknown>, handles: Map<string, unknown>): { args: Record<string, unknown> } | { error: string } {
  if (!Object.values(args).some(isValueHandle)) return { args };
  const properties = ((tools.has(name) ? tools.spec(name).function.parameters : {}) as { properties?: Record<string, { type?: unknown }> }).properties ?? {};
  const resolved: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(args)) {
    if (!isValueHandle(value)) {
      resolved[key] = value;
      continue;
    }
    const handle = value[HANDLE_KEY];
    if (!handles.has(handle)) return { error: `"${handle}" is not a handle of this subtask; known: ${[...handles.keys()].join(", ") || "none"}` };
    const full = handles.get(handle);
    const wantsText = properties[key]?.type === "string";
    resolved[key] = wantsText && typeof full !== "string" ? (typeof full === "object" && full !== null ? JSON.stringify(full, null, 2) : String(full)) : full;
  }
  return { args: resolved };
}

/** The value downstream subtasks get: the final answer, parsed when it is JSON. */
function answerValue(text: string): unknown {
  const trimmed = text.trim();
  if (/^(?:[[{"]|-?\d|true$|false$|null$)/.test(trimmed)) {
    try {
      return JSON.parse(trimmed);
    } catch {
      // not JSON: the text itself is the value
    }
  }
  return trimmed;
}

/**
 * A worker: a bounded tool-calling loop (model ↔ tools). It stops when the model answers, after
 * `maxSteps` model calls, or when the same tool is called with the same arguments a third time.
 * Every failure is an outcome, never a thrown error — except cancellation and a spent budget,
 * which stop the run rather than the subtask.
 */
export async function runWorker(input: WorkerInput, options: CallOptions): Promise<WorkerOutcome> {
  const allowed = input.agent.tools.filter((name) => input.tools.has(name));
  const toolCalls: WorkerToolCall[] = [];
  const system = new SystemMessage(workerPrompt(input.agent, allowed, input.maxSteps));
  const prepared: PreparedInput = { input, args: Object.entries(input.args).map(([name, value]) => [name, prepareValue(value)]) };
  const handles = new Map<string, unknown>(Object.entries(input.args).map(([name, value]) => [`args.${name}`, value]));
  const budget = input.promptBudget ?? LIMITS.promptTokenBudget;
  const turns: Turn[] = [];
  const specs = allowed.map((name) => input.tools.spec(name));
  const bound = new Map<ModelCandidate, Runnable<BaseLanguageModelInput, unknown>>();
  const prepare = (candidate: ModelCandidate): Runnable<BaseLanguageModelInput, unknown> => {
    let runnable = bound.get(candidate);
    if (!runnable) {
      if (specs.length === 0) runnable = candidate.model;
      else if (typeof candidate.model.bindTools !== "function") throw new Error(`the model ${candidate.model.getName()} does not support tool calling`);
      else runnable = candidate.model.bindTools(specs);
      bound.set(candidate, runnable);
    }
    return runnable;
  };
  const seen = new Map<string, number>();
  for (let step = 1; step <= input.maxSteps; step += 1) {
    let response;
    try {
      const { messages } = await fitToBudget((detail) => conversation(system, prepared, turns, detail), budget);
      response = (await callModel(input.model, messages, options, { prepare })).message;
    } catch (error) {
      // Cancellation and a spent budget stop the run, not just this subtask.
      if (options.signal?.aborted || isBudgetExhausted(error)) throw error;
      return { status: "failed", summary: "", error: `model call failed: ${modelFailure(error)}`, toolCalls, steps: step };
    }
    const calls = response.tool_calls ?? [];
    if (calls.length === 0) {
      const text = (typeof response.content === "string" ? response.content : response.text).trim();
      if (text.startsWith(FAILED_PREFIX)) {
        const reason = text.slice(FAILED_PREFIX.length).trim() || "the worker gave up";
        return { status: "failed", summary: truncate(text, LIMITS.previewChars), error: reason, toolCalls, steps: step };
      }
      return { status: "done", value: answerValue(text), summary: truncate(text, LIMITS.previewChars), toolCalls, steps: step };
    }
    const turn: Turn = { response, results: [] };
    turns.push(turn);
    for (const call of calls) {
      const key = `${call.name} ${stableStringify(call.args)}`;
      const count = (seen.get(key) ?? 0) + 1;
      seen.set(key, count);
      if (count >= LIMITS.repeatLimit) {
        const error = `stopped: ${call.name} was called ${count} times with the same arguments ${truncate(stableStringify(call.args), 200)}`;
        return { status: "failed", summary: "", error, toolCalls, steps: step };
      }
      const started = performance.now();
      let outcome: ToolOutcome;
      let args: unknown = call.args;
      if (!allowed.includes(call.name)) {
        outcome = { ok: false, error: { code: "tool_not_allowed", message: `the ${input.agent.name} worker cannot use ${call.name}; its tools are ${allowed.join(", ") || "none"}` } };
      } else {
        const substituted = substituteHandles(input.tools, call.name, call.args, handles);
        if ("error" in substituted) {
          outcome = { ok: false, error: { code: "unknown_handle", message: substituted.error } };
        } else {
          args = substituted.args;
          outcome = await input.tools.call(call.name, substituted.args, input.toolContext);
        }
      }
      const record: WorkerToolCall = { tool: call.name, args, outcome, durationMs: performance.now() - started };
      toolCalls.push(record);
      input.onToolCall?.(record);
      const handle = `results.${toolCalls.length}`;
      if (outcome.ok) handles.set(handle, outcome.value);
      turn.results.push({ id: call.id ?? `${call.name}_${step}`, name: call.name, outcome, handle, text: JSON.stringify(outcome) });
    }
  }
  return { status: "failed", summary: "", error: `stopped: no answer after ${input.maxSteps} steps`, toolCalls, steps: input.maxSteps };
}
