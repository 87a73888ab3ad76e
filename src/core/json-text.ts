import { BracketSpans } from "./json-scan.js";

/**
 * JSON as real models write it in text: bare, inside a ```json fence, after a sentence, or as a
 * tool call spelled out in the content (`{"name": "submit_plan", "arguments": {…}}`, Hermes'
 * `<tool_call>…</tool_call>`). Every reader here scans the text once, so a long answer costs
 * linear time.
 */

/** Where a JSON value found in text starts and ends, and the value. */
interface Found {
  value: unknown;
  start: number;
  end: number;
}

/** Candidates tried before giving up, so text full of stray brackets costs a bounded number of scans. */
const MAX_CANDIDATES = 16;

/**
 * The first complete JSON object or array in `text` at or after `from`: from an opening brace or
 * bracket to its matching close (strings and escapes respected, json-scan.ts), parsed. A
 * candidate that does not parse, or whose brackets do not match, is skipped and the scan goes on
 * after its opening character (at most MAX_CANDIDATES times); one left open at the end of the
 * text ends the search.
 */
function firstJson(text: string, from = 0): Found | undefined {
  const spans = new BracketSpans(text);
  let tried = 0;
  for (let start = nextOpening(text, from); start >= 0; start = nextOpening(text, start + 1)) {
    const span = spans.spanAt(start);
    if (span.kind === "unterminated") return undefined;
    if (span.kind === "closed") {
      try {
        return { value: JSON.parse(text.slice(start, span.end + 1)) as unknown, start, end: span.end + 1 };
      } catch {
        // Not JSON after all (prose with braces): look again after this opening.
      }
    }
    tried += 1;
    if (tried >= MAX_CANDIDATES) return undefined;
  }
  return undefined;
}

/** The index of the first `{` or `[` at or after `from`, or -1. */
function nextOpening(text: string, from: number): number {
  for (let index = from; index < text.length; index += 1) if (text[index] === "{" || text[index] === "[") return index;
  return -1;
}

const FENCE = /```[ \t]*(?:json5?|javascript|js)?[ \t]*\r?\n?([\s\S]*?)```/gi;

/**
 * A JSON value a model wrote in text: the whole text when it is JSON, else the first fenced
 * block that is, else the first JSON object or array in the text (after prose). Undefined when
 * there is none.
 */
export function jsonInText(text: string): { value: unknown } | undefined {
  const trimmed = text.trim();
  if (trimmed === "") return undefined;
  try {
    return { value: JSON.parse(trimmed) as unknown };
  } catch {
    // not bare JSON: look for it inside
  }
  for (const match of trimmed.matchAll(FENCE)) {
    const inner = (match[1] ?? "").trim();
    try {
      return { value: JSON.parse(inner) as unknown };
    } catch {
      const found = firstJson(inner);
      if (found) return { value: found.value };
    }
  }
  const found = firstJson(trimmed);
  return found ? { value: found.value } : undefined;
}

/** A tool call a model spelled out in its text instead of making it. */
export interface TextToolCall {
  name: string;
  args: Record<string, unknown>;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `{name, arguments | parameters | args | input}` (arguments possibly as JSON text) as a call, or undefined. */
function callShape(value: unknown): TextToolCall | undefined {
  if (!isRecord(value)) return undefined;
  const inner = isRecord(value.function) ? value.function : value;
  const name = inner.name;
  if (typeof name !== "string" || name === "") return undefined;
  let args = inner.arguments ?? inner.parameters ?? inner.args ?? inner.input;
  if (typeof args === "string") {
    try {
      args = JSON.parse(args) as unknown;
    } catch {
      return undefined;
    }
  }
  return isRecord(args) ? { name, args } : undefined;
}

/**
 * The tool calls spelled out in a model's text, among `known` names: `<tool_call>{…}</tool_call>`
 * blocks, or JSON (bare, fenced or after prose) that is a call or a list of calls. Empty when the
 * text holds none.
 */
export function toolCallsInText(text: string, known: ReadonlySet<string>): TextToolCall[] {
  const calls: TextToolCall[] = [];
  for (const match of text.matchAll(/<tool_call>([\s\S]*?)<\/tool_call>/g)) {
    const found = jsonInText(match[1] ?? "");
    const call = found ? callShape(found.value) : undefined;
    if (call && known.has(call.name)) calls.push(call);
  }
  if (calls.length > 0) return calls;
  const found = jsonInText(text);
  if (!found) return [];
  const values = Array.isArray(found.value) ? found.value : [found.value];
  for (const value of values) {
    const call = callShape(value);
    if (call && known.has(call.name)) calls.push(call);
  }
  return calls;
}

/**
 * The answer to a forced call of `name` that a model wrote as text: the arguments of a spelled
 * out call of `name`, else the JSON in the text itself. Undefined when the text holds no JSON.
 */
export function answerInText(text: string, name: string): { value: unknown } | undefined {
  const [call] = toolCallsInText(text, new Set([name]));
  if (call) return { value: call.args };
  return jsonInText(text);
}
