/**
 * The templates of the offline planner's plans, filled by its worker from the subtask's resolved
 * arguments: an expression over earlier results (`{a} * 2`), and a file made of several results
 * (`{a}\n{b}`), whose text values go to the tool by handle so they reach the file exactly.
 */
import { HANDLE_KEY } from "../../core/prompt-protocol.js";

/** A value as a tool's text argument: text as it is, a number as written, anything else as JSON. */
export function asText(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return JSON.stringify(value, null, 2);
}

/** An argument shown as a handle (too large for the prompt): it can only be passed on, not read. */
export function isHandle(value: unknown): boolean {
  return typeof value === "object" && value !== null && !Array.isArray(value) && typeof (value as Record<string, unknown>)[HANDLE_KEY] === "string";
}

/** Placeholders of a template: `{a}`, `{b}`, … naming arguments of the subtask. */
const PLACEHOLDER = /\{([a-z])\}/g;

/** A value as it goes into arithmetic: a number as written, a negative one in parentheses, a list as its items. */
function operandText(value: unknown): string {
  if (Array.isArray(value)) return value.map(operandText).join(", ");
  if (typeof value === "number") return value < 0 ? `(${value})` : String(value);
  return asText(value).trim();
}

/**
 * A computation's expression with its operands put in, from the subtask's resolved arguments,
 * or why it cannot be: an operand it was not given (the clause refers to a result that is not
 * there, which needs a language model to sort out: `unable`), or one too large to be shown.
 */
export function filledExpression(template: string, args: Record<string, unknown>): { expression: string } | { unable: string } | { failed: string } {
  // A combination of earlier results ("add them") given none: there is nothing to combine.
  if (template.trim() === "") return { unable: "it combines earlier results it was not given" };
  const missing = [...template.matchAll(PLACEHOLDER)].map((match) => match[1] ?? "").filter((name) => args[name] === undefined);
  if (missing.length > 0) return { unable: `the computation "${template}" refers to earlier results it was not given (${missing.join(", ")})` };
  const large = [...template.matchAll(PLACEHOLDER)].map((match) => match[1] ?? "").find((name) => isHandle(args[name]));
  if (large !== undefined) return { failed: `the value of ${large} is too large to compute with` };
  return { expression: template.replace(PLACEHOLDER, (_, name: string) => operandText(args[name])) };
}

/** A piece of a file to write: text, or an argument handed to the tool by its handle, exactly. */
export type Piece = { text: string } | { handle: Record<string, unknown> };

/**
 * The pieces of a templated write ("{a}\n{b}"): numbers as text, text values and large values
 * by handle (so they reach the file byte for byte), adjacent text merged.
 */
export function templatePieces(template: string, args: Record<string, unknown>): Piece[] | { missing: string } {
  const pieces: Piece[] = [];
  const addText = (text: string): void => {
    const last = pieces.at(-1);
    if (last && "text" in last) last.text += text;
    else if (text !== "") pieces.push({ text });
  };
  let index = 0;
  /** The value just put in ends its own line: the template's line break after it would add an empty line. */
  let endsLine = false;
  for (const match of template.matchAll(PLACEHOLDER)) {
    const between = template.slice(index, match.index);
    addText(endsLine && between.startsWith("\n") ? between.slice(1) : between);
    index = (match.index ?? 0) + match[0].length;
    const name = match[1] ?? "";
    const value = args[name];
    if (value === undefined) return { missing: name };
    if (isHandle(value)) pieces.push({ handle: value as Record<string, unknown> });
    else if (typeof value === "string") pieces.push({ handle: { [HANDLE_KEY]: `args.${name}` } });
    else addText(Array.isArray(value) ? value.map(asText).join("\n") : asText(value));
    endsLine = typeof value === "string" && value.endsWith("\n");
  }
  addText(template.slice(index));
  return pieces;
}

