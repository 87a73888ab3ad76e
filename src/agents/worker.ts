import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { type BaseMessage, HumanMessage, SystemMessage, ToolMessage } from "@langchain/core/messages";
import { LIMITS } from "../core/limits.js";
import type { PlannedSubtask } from "../core/plan.js";
import { FAILED_PREFIX, roleLine, SECTIONS, section } from "../core/prompt-protocol.js";
import { preview, stableStringify, truncate } from "../core/text.js";
import type { ToolContext, ToolOutcome } from "../tools/define-tool.js";
import type { ToolRegistry } from "../tools/registry.js";
import type { AgentDefinition } from "./define-agent.js";
import { type CallOptions, type ChatRunnable, callModel, modelFailure } from "./model-call.js";

/** What a worker knows of a subtask it depends on. */
export interface DependencyView {
  id: string;
  label: string;
  summary: string;
}

export interface WorkerInput {
  agent: AgentDefinition;
  model: BaseChatModel;
  tools: ToolRegistry;
  task: string;
  subtask: PlannedSubtask;
  args: Record<string, unknown>;
  dependencies: DependencyView[];
  feedback: string[];
  toolContext: ToolContext;
  maxSteps: number;
  /** The tools the run may use, when it is restricted. */
  allowedTools?: readonly string[];
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

/** How much of a tool result goes back into the conversation. */
const TOOL_RESULT_CHARS = 8_000;

function workerPrompt(agent: AgentDefinition, tools: string[], maxSteps: number): string {
  return [
    roleLine(`${agent.name} worker`),
    agent.instructions,
    `Your tools: ${tools.length > 0 ? tools.join(", ") : "none"}. You have at most ${maxSteps} steps.`,
    `When you are done, answer without calling a tool. If you cannot complete the subtask, answer "${FAILED_PREFIX} <reason>".`,
    "Answer with the result only; do not describe your private reasoning.",
  ].join("\n");
}

function subtaskMessage(input: WorkerInput): string {
  const parts = [
    section(SECTIONS.task, input.task),
    section(SECTIONS.subtask, `${input.subtask.id} (${input.subtask.agent}): ${input.subtask.label}`),
    section(SECTIONS.arguments, JSON.stringify(input.args, null, 2)),
  ];
  if (input.dependencies.length > 0) {
    parts.push(section(SECTIONS.dependencies, input.dependencies.map((dependency) => `- ${dependency.id} (${dependency.label}): ${dependency.summary}`).join("\n")));
  }
  if (input.feedback.length > 0) parts.push(section(SECTIONS.feedback, input.feedback.map((line) => `- ${line}`).join("\n")));
  return parts.join("\n\n");
}

/** The tool outcome as the model reads it: JSON, with large values cut. */
function toolReply(outcome: ToolOutcome): string {
  const text = JSON.stringify(outcome);
  if (text.length <= TOOL_RESULT_CHARS) return text;
  if (!outcome.ok) return truncate(text, TOOL_RESULT_CHARS);
  return JSON.stringify({ ok: true, summary: outcome.summary, value: preview(outcome.value, TOOL_RESULT_CHARS), truncated: true });
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
 * Every failure is an outcome, never a thrown error.
 */
export async function runWorker(input: WorkerInput, options: CallOptions): Promise<WorkerOutcome> {
  const allowed = input.agent.tools.filter((name) => input.tools.has(name) && (input.allowedTools?.includes(name) ?? true));
  const toolCalls: WorkerToolCall[] = [];
  const messages: BaseMessage[] = [new SystemMessage(workerPrompt(input.agent, allowed, input.maxSteps)), new HumanMessage(subtaskMessage(input))];
  let model: ChatRunnable = input.model;
  if (allowed.length > 0) {
    if (typeof input.model.bindTools !== "function") {
      return { status: "failed", summary: "", error: `the model ${input.model.getName()} does not support tool calling`, toolCalls, steps: 0 };
    }
    model = input.model.bindTools(allowed.map((name) => input.tools.spec(name))) as ChatRunnable;
  }
  const seen = new Map<string, number>();
  for (let step = 1; step <= input.maxSteps; step += 1) {
    let response;
    try {
      response = await callModel(model, messages, options);
    } catch (error) {
      if (options.signal?.aborted) throw error;
      return { status: "failed", summary: "", error: `model call failed: ${modelFailure(error)}`, toolCalls, steps: step };
    }
    messages.push(response);
    const calls = response.tool_calls ?? [];
    if (calls.length === 0) {
      const text = (typeof response.content === "string" ? response.content : response.text).trim();
      if (text.startsWith(FAILED_PREFIX)) {
        const reason = text.slice(FAILED_PREFIX.length).trim() || "the worker gave up";
        return { status: "failed", summary: truncate(text, LIMITS.previewChars), error: reason, toolCalls, steps: step };
      }
      return { status: "done", value: answerValue(text), summary: truncate(text, LIMITS.previewChars), toolCalls, steps: step };
    }
    for (const call of calls) {
      const key = `${call.name} ${stableStringify(call.args)}`;
      const count = (seen.get(key) ?? 0) + 1;
      seen.set(key, count);
      if (count >= LIMITS.repeatLimit) {
        const error = `stopped: ${call.name} was called ${count} times with the same arguments ${truncate(stableStringify(call.args), 200)}`;
        return { status: "failed", summary: "", error, toolCalls, steps: step };
      }
      const started = performance.now();
      const outcome: ToolOutcome = allowed.includes(call.name)
        ? await input.tools.call(call.name, call.args, input.toolContext)
        : { ok: false, error: { code: "tool_not_allowed", message: `the ${input.agent.name} worker cannot use ${call.name}; its tools are ${allowed.join(", ") || "none"}` } };
      const record: WorkerToolCall = { tool: call.name, args: call.args, outcome, durationMs: performance.now() - started };
      toolCalls.push(record);
      input.onToolCall?.(record);
      messages.push(new ToolMessage({ tool_call_id: call.id ?? `${call.name}_${step}`, name: call.name, content: toolReply(outcome) }));
    }
  }
  return { status: "failed", summary: "", error: `stopped: no answer after ${input.maxSteps} steps`, toolCalls, steps: input.maxSteps };
}
