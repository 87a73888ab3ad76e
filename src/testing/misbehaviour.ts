/**
 * The ways real models misbehave, played by the fake provider servers on demand (a `misbehave`
 * fault): each turns a well-formed answer into the one a real model gives — in a fence, after
 * prose, a call written as text, cut off at the output limit, a refusal, nothing, a tool that
 * does not exist, arguments of the wrong type, the same call twice, or a schema filled in every
 * field it allows (see SchemaFollowingChatModel) — and, for an answer in text that is not JSON
 * (a compact plan, a written answer), the text in a code fence or between a sentence before and
 * one after. The servers write the result in their wire
 * format, streaming or not, so the real clients read it as they would a real model's.
 */

export const MISBEHAVIOURS = [
  "fenced-json",
  "prose-json",
  "tool-as-text",
  "truncated",
  "refusal",
  "empty",
  "unknown-tool",
  "wrong-types",
  "duplicate-calls",
  "schema-filler",
  "fenced-text",
  "chatty-text",
] as const;
export type Misbehaviour = (typeof MISBEHAVIOURS)[number];

/** A tool call as a server writes it: its arguments as JSON text (possibly broken) and, for wires that send objects, as an object. */
export interface WireCall {
  id: string;
  name: string;
  arguments: string;
  input: Record<string, unknown>;
}

/** An answer in protocol-neutral form, as the protocol files write it. */
export interface WireAnswer {
  text: string;
  calls: WireCall[];
  /** Why it stopped: done, to have tools called, cut off at the output limit, or refused. */
  finish: "stop" | "tool_calls" | "length" | "refusal";
  /** The model's refusal, when it refused. */
  refusal?: string;
}

export const REFUSAL_TEXT = "I'm sorry, but I can't help with that request.";

function spelled(calls: readonly WireCall[]): string {
  const shown = calls.map((call) => ({ name: call.name, arguments: call.input }));
  return JSON.stringify(shown.length === 1 ? shown[0] : shown);
}

/** The JSON an answer carries: its calls spelled out, or its text when that is JSON. */
function jsonOf(answer: WireAnswer): string | undefined {
  if (answer.calls.length > 0) return spelled(answer.calls);
  const trimmed = answer.text.trim();
  return /^[[{]/.test(trimmed) ? trimmed : undefined;
}

function mistyped(value: unknown): unknown {
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (Array.isArray(value)) return value.map(mistyped);
  if (typeof value === "object" && value !== null) return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, mistyped(item)]));
  return value;
}

/** A tool name as a model might misremember it (`file_write` → `filewrite`, `calculator` → `calculator_tool`). */
export function misnamed(name: string): string {
  return name.includes("_") ? name.replace(/_/g, "") : `${name}_tool`;
}

function halfOf(text: string): string {
  return text.slice(0, Math.max(1, Math.floor(text.length / 2)));
}

/** The first half of an object's properties: what a wire that sends objects has of one cut off. */
function halfInput(input: Record<string, unknown>): Record<string, unknown> {
  const entries = Object.entries(input);
  return Object.fromEntries(entries.slice(0, Math.floor(entries.length / 2)));
}

/** `answer` as a model that misbehaves this way gives it. */
export function misbehave(answer: WireAnswer, as: Misbehaviour): WireAnswer {
  const json = jsonOf(answer);
  switch (as) {
    case "fenced-json":
      return json === undefined ? answer : { text: `Here is the answer:\n\n\`\`\`json\n${json}\n\`\`\``, calls: [], finish: "stop" };
    case "prose-json":
      return json === undefined ? answer : { text: `Sure, I worked it out. The answer follows. ${json}`, calls: [], finish: "stop" };
    case "tool-as-text":
      return json === undefined ? answer : { text: json, calls: [], finish: "stop" };
    case "truncated": {
      const [first] = answer.calls;
      if (first) return { text: "", calls: [{ ...first, arguments: halfOf(first.arguments), input: halfInput(first.input) }], finish: "length" };
      if (answer.text === "") return answer;
      return { text: halfOf(answer.text), calls: [], finish: "length" };
    }
    case "refusal":
      return { text: "", calls: [], finish: "refusal", refusal: REFUSAL_TEXT };
    case "empty":
      return { text: "", calls: [], finish: "stop" };
    case "unknown-tool":
      return answer.calls.length === 0 ? answer : { ...answer, calls: answer.calls.map((call) => ({ ...call, name: misnamed(call.name) })) };
    case "wrong-types": {
      if (answer.calls.length > 0) {
        return { ...answer, calls: answer.calls.map((call) => { const input = mistyped(call.input) as Record<string, unknown>; return { ...call, input, arguments: JSON.stringify(input) }; }) };
      }
      if (json === undefined) return answer;
      try {
        return { ...answer, text: JSON.stringify(mistyped(JSON.parse(json))) };
      } catch {
        return answer;
      }
    }
    case "duplicate-calls":
      return answer.calls.length === 0 ? answer : { ...answer, calls: answer.calls.flatMap((call) => [call, { ...call, id: `${call.id}_again` }]) };
    case "schema-filler":
      // Played by the server before the answer is shaped: the brain is not asked.
      return answer;
    case "fenced-text":
      return json !== undefined || answer.text.trim() === "" ? answer : { ...answer, text: `\`\`\`\n${answer.text}\n\`\`\`` };
    case "chatty-text":
      return json !== undefined || answer.text.trim() === "" ? answer : { ...answer, text: `Sure — here it is.\n\n${answer.text}\n\nLet me know if you need anything else.` };
  }
}
