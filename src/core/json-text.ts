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
 * bracket to its matching close (strings and escapes respected), parsed. A candidate that does
 * not parse is skipped and the scan goes on after its opening character (at most
 * MAX_CANDIDATES times).
 */
function firstJson(text: string, from = 0): Found | undefined {
  let tried = 0;
  let start = -1;
  let depth = 0;
  let inString = false;
  let escaped = false;
  for (let index = from; index < text.length; index += 1) {
    const char = text[index] as string;
    if (start < 0) {
      if (char === "{" || char === "[") {
        start = index;
        depth = 1;
      }
      continue;
    }
    if (inString) {
      if (escaped) escaped = false;
      else if (char === "\\") escaped = true;
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"') inString = true;
    else if (char === "{" || char === "[") depth += 1;
    else if (char === "}" || char === "]") {
      depth -= 1;
      if (depth === 0) {
        const candidate = text.slice(start, index + 1);
        try {
          return { value: JSON.parse(candidate) as unknown, start, end: index + 1 };
        } catch {
          // Not JSON after all (prose with braces): look again after this opening.
          tried += 1;
          if (tried >= MAX_CANDIDATES) return undefined;
          index = start;
          start = -1;
        }
      }
    }
  }
  return undefined;
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
