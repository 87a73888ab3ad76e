import { AIMessage, type ToolCall } from "@langchain/core/messages";
import { isBudgetExhausted } from "../core/budget.js";
import { toolCallsInText } from "../core/json-text.js";
import { stableStringify } from "../core/text.js";
import { fitToolArgs } from "../tools/arg-fit.js";
import type { ToolRegistry } from "../tools/registry.js";
import { type CallOptions, ModelRefusalError, modelFailure, UsageMeter } from "./model-call.js";
import { HANDLE_KEY, isValueHandle } from "./prompt-budget.js";
import { SUBMIT_RESULT } from "./agent-loop-result.js";
import type { DurableStep, ModelStep } from "./agent-loop-types.js";

/** Reading a worker's model reply into tool calls, and a call's handles into values. */

/**
 * A tool call's arguments with every handle the model passed back (`{"$stash": key}`) replaced by
 * the full value, then brought to the types the tool takes (`fitToolArgs`: a read file's value
 * given for text is its content, base64 bytes keep their encoding, a number where text is wanted
 * is its decimal text, "42" where a number is wanted is 42) — each change noted for the trace.
 */
export function substituteHandles(
  tools: ToolRegistry,
  name: string,
  args: Record<string, unknown>,
  handles: Map<string, unknown>,
  lost: ReadonlySet<string>,
): { args: Record<string, unknown>; handles?: Record<string, string>; notes: string[] } | { error: string } {
  const used: Record<string, string> = {};
  const resolved: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(args)) {
    if (!isValueHandle(value)) {
      resolved[key] = value;
      continue;
    }
    const handle = value[HANDLE_KEY];
    if (lost.has(handle)) return { error: `"${handle}" was too large to keep across the pause in this subtask; call the tool that produced it again` };
    if (!handles.has(handle)) return { error: `"${handle}" is not a handle of this subtask; known: ${[...handles.keys()].join(", ") || "none"}` };
    resolved[key] = handles.get(handle);
    used[key] = handle;
  }
  if (!tools.has(name)) return { args: resolved, notes: [], ...(Object.keys(used).length > 0 ? { handles: used } : {}) };
  const fitted = fitToolArgs(tools.spec(name).function.parameters as Record<string, unknown>, resolved);
  return { args: fitted.args, notes: fitted.notes, ...(Object.keys(used).length > 0 ? { handles: used } : {}) };
}

/** What a worker that answered with nothing is told when asked again. */
export const EMPTY_ANSWER_NUDGE = `Your answer was empty. Call one of your tools, or end the subtask with ${SUBMIT_RESULT}.`;

/** A tool name reduced to what a misremembering model keeps of it: lower case, letters and digits, without a `tool` suffix. */
function looseName(name: string): string {
  return name
    .toLowerCase()
    .replace(/[^a-z0-9]/g, "")
    .replace(/(?:tool|function)$/, "");
}

/**
 * The reply with each call of a tool that does not exist renamed to the one tool it plainly
 * means (`filewrite`, `file-write`, `file_write_tool` → `file_write`), and which were renamed;
 * a name that matches none, or several, is left for the registry to refuse.
 */
export function withKnownNames(response: AIMessage, known: ReadonlySet<string>): { message: AIMessage; renamed: Array<{ id: string | undefined; note: string }> } {
  const renamed: Array<{ id: string | undefined; note: string }> = [];
  const calls = (response.tool_calls ?? []).map((call) => {
    if (known.has(call.name)) return call;
    const matches = [...known].filter((name) => looseName(name) === looseName(call.name));
    if (matches.length !== 1) return call;
    renamed.push({ id: call.id, note: `the model called ${call.name}, which does not exist; read as ${matches[0]}` });
    return { ...call, name: matches[0] as string };
  });
  if (renamed.length === 0) return { message: response, renamed };
  // Providers that keep calls as content blocks (Anthropic's tool_use) send those back: they are renamed too.
  const names = new Map(calls.flatMap((call) => (call.id !== undefined ? [[call.id, call.name] as const] : [])));
  const content = Array.isArray(response.content)
    ? response.content.map((block) => (block.type === "tool_use" && typeof block.id === "string" && names.has(block.id) ? { ...block, name: names.get(block.id) } : block))
    : response.content;
  return { message: new AIMessage({ content, tool_calls: calls, additional_kwargs: response.additional_kwargs, response_metadata: response.response_metadata, ...(response.id ? { id: response.id } : {}) }), renamed };
}

/**
 * The tool calls of a reply as the worker runs them: those the model made, or — when it made
 * none — the ones it spelled out in its text (`{"name", "arguments"}`, `<tool_call>`) for tools
 * it was given; a call repeated in one reply (same tool, same arguments) runs once, and the
 * repeats get its result (`sameAs`).
 */
export function callsOf(response: AIMessage, known: ReadonlySet<string>, turnNumber: number): { calls: Array<ToolCall & { id: string; sameAs?: string }>; spelled: boolean } {
  let calls: ToolCall[] = response.tool_calls ?? [];
  let spelled = false;
  if (calls.length === 0) {
    const text = typeof response.content === "string" ? response.content : response.text;
    calls = toolCallsInText(text, known).map((call, index) => ({ id: `text_call_${turnNumber}_${index + 1}`, name: call.name, args: call.args, type: "tool_call" as const }));
    spelled = calls.length > 0;
  }
  const first = new Map<string, string>();
  const marked = calls.map((call, index) => {
    const id = call.id ?? `${call.name}_${turnNumber}_${index + 1}`;
    const key = `${call.name} ${stableStringify(call.args)}`;
    const earlier = first.get(key);
    if (earlier === undefined) first.set(key, id);
    return { ...call, id, ...(earlier !== undefined ? { sameAs: earlier } : {}) };
  });
  return { calls: marked, spelled };
}

/** A model step's reply: a message, or why there is none. */
export function modelStep(
  step: DurableStep,
  options: CallOptions,
  call: (meter: UsageMeter) => Promise<AIMessage>,
): Promise<{ value: ModelStep; replayed: boolean }> {
  return step<ModelStep>("worker_model", async () => {
    // Its own meter, so the usage is kept with the step; retries and fallbacks are still told as they happen.
    const meter = new UsageMeter((incident) => options.meter.note(incident));
    const kept = (): Pick<ModelStep, "usage" | "incidents"> => ({ usage: meter.usage, incidents: meter.incidents });
    try {
      return { message: await call(meter), ...kept() };
    } catch (error) {
      // A cancelled run is not a failed step: it throws, so nothing is saved and a resume calls again.
      if (options.signal?.aborted) throw error;
      if (isBudgetExhausted(error)) return { budget: error.stop, ...kept() };
      return { error: modelFailure(error), ...(error instanceof ModelRefusalError ? { refused: true as const } : {}), ...kept() };
    }
  });
}
