import { pathProblem } from "./json-path.js";

/**
 * A plan's answer template: the answer a plan can state in advance, with placeholders for its
 * steps' results — `"17% of 2,340 is {s1}; saved to result.txt"`, `{s1.price}` for a field
 * (JSONPath after the step id), `{{` and `}}` for literal braces. Code fills it once the results
 * are verified, so no model call writes the answer.
 *
 * The template is read once, in one pass, into literal pieces and placeholders; filling
 * concatenates them with the values' text and never reads the result again, so a result that
 * holds `{s2}` (an untrusted page, say) stays text — it cannot name another result.
 */

export const ANSWER_TEMPLATE_LIMITS = {
  /** Characters of a template. */
  chars: 4_000,
  /** Placeholders in one template. */
  placeholders: 64,
  /** Characters one filled-in value may take; a larger value needs a model to summarise it. */
  valueChars: 4_000,
  /** Characters of the filled answer. */
  answerChars: 64_000,
} as const;

export type TemplatePiece = { text: string } | { ref: string; path: string; source: string };

export class AnswerTemplateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "AnswerTemplateError";
  }
}

const ID_START = /[A-Za-z]/;
const ID_CHAR = /[A-Za-z0-9_-]/;

/**
 * The template's pieces in order, or an AnswerTemplateError saying what is wrong and where.
 * Linear in the template's length: each character is looked at a bounded number of times.
 */
export function parseAnswerTemplate(template: string): TemplatePiece[] {
  if (template.length > ANSWER_TEMPLATE_LIMITS.chars) throw new AnswerTemplateError(`the answer is longer than ${ANSWER_TEMPLATE_LIMITS.chars} characters`);
  const pieces: TemplatePiece[] = [];
  let literal = "";
  let placeholders = 0;
  let position = 0;
  while (position < template.length) {
    const char = template[position] as string;
    if (char === "}") {
      if (template[position + 1] !== "}") throw new AnswerTemplateError(`the answer has a } at character ${position + 1} that closes nothing (write }} for a brace)`);
      literal += "}";
      position += 2;
      continue;
    }
    if (char !== "{") {
      literal += char;
      position += 1;
      continue;
    }
    if (template[position + 1] === "{") {
      literal += "{";
      position += 2;
      continue;
    }
    const start = position;
    position += 1;
    if (!ID_START.test(template[position] ?? "")) throw new AnswerTemplateError(`the answer has a { at character ${start + 1} that is not a step's result ({s1}, {s1.field}; write {{ for a brace)`);
    let id = "";
    while (position < template.length && ID_CHAR.test(template[position] as string) && id.length <= 64) id += template[position++];
    // The path runs to the } that closes the placeholder: brackets and quotes inside it are its own.
    let path = "";
    let depth = 0;
    let quote: string | undefined;
    for (; position < template.length; position += 1) {
      const next = template[position] as string;
      if (quote !== undefined) {
        if (next === quote) quote = undefined;
      } else if (next === "'" || next === '"') quote = next;
      else if (next === "[") depth += 1;
      else if (next === "]") depth -= 1;
      else if (next === "}" && depth <= 0) break;
      else if (next === "{" || next === "\n") break;
      path += next;
    }
    if (template[position] !== "}") throw new AnswerTemplateError(`the placeholder at character ${start + 1} ({${id}…) is not closed with }`);
    position += 1;
    if (path !== "" && !path.startsWith(".") && !path.startsWith("[")) throw new AnswerTemplateError(`the placeholder {${id}${path}} is a step id, then a path starting with . or [ ({${id}.field})`);
    const jsonPath = `$${path}`;
    const problem = path === "" ? undefined : pathProblem(jsonPath);
    if (problem !== undefined) throw new AnswerTemplateError(`the placeholder {${id}${path}} has a path that does not parse: ${problem}`);
    placeholders += 1;
    if (placeholders > ANSWER_TEMPLATE_LIMITS.placeholders) throw new AnswerTemplateError(`the answer has more than ${ANSWER_TEMPLATE_LIMITS.placeholders} placeholders`);
    if (literal !== "") pieces.push({ text: literal });
    literal = "";
    pieces.push({ ref: id, path: jsonPath, source: template.slice(start, position) });
  }
  if (literal !== "") pieces.push({ text: literal });
  return pieces;
}

/** The step ids a template's placeholders name, in order of first use. */
export function templateRefs(pieces: readonly TemplatePiece[]): string[] {
  return [...new Set(pieces.flatMap((piece) => ("ref" in piece ? [piece.ref] : [])))];
}

/**
 * Every reason a template cannot answer for this plan (an empty list when it can): it must parse,
 * and each placeholder must name a step of the plan.
 */
export function answerTemplateProblems(template: string, stepIds: readonly string[]): string[] {
  let pieces: TemplatePiece[];
  try {
    pieces = parseAnswerTemplate(template);
  } catch (error) {
    return [`answer: ${(error as Error).message}`];
  }
  if (template.trim() === "") return ["answer: the answer is empty; leave it out when the answer needs a model"];
  const known = new Set(stepIds);
  const unknown = templateRefs(pieces).filter((id) => !known.has(id));
  return unknown.map((id) => `answer: {${id}} names no step of the plan (its steps: ${stepIds.slice(0, 30).join(", ") || "none"}; write {{ for a brace)`);
}

/** A value as it reads in an answer: text as it is, numbers and truth values as written, a list of them joined by commas, anything else as compact JSON. */
export function answerText(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean" || value === null) return String(value);
  if (Array.isArray(value) && value.every((item) => item === null || ["string", "number", "boolean"].includes(typeof item))) return value.map((item) => answerText(item)).join(", ");
  return JSON.stringify(value) ?? "";
}

/**
 * The template filled with the values `valueOf` gives each placeholder, or undefined when one
 * cannot be given (`valueOf` throws) or is too large to read in an answer: the answer then needs
 * a model. The values are inserted as text and never read as template syntax.
 */
export function fillAnswerTemplate(pieces: readonly TemplatePiece[], valueOf: (ref: string, path: string) => unknown): { text: string } | { problem: string } {
  let text = "";
  for (const piece of pieces) {
    if ("text" in piece) {
      text += piece.text;
      continue;
    }
    let value: unknown;
    try {
      value = valueOf(piece.ref, piece.path);
    } catch (error) {
      return { problem: `${piece.source}: ${(error as Error).message}` };
    }
    const shown = answerText(value);
    if (shown.length > ANSWER_TEMPLATE_LIMITS.valueChars) return { problem: `${piece.source} is ${shown.length} characters long, more than an answer shows as it is (${ANSWER_TEMPLATE_LIMITS.valueChars})` };
    text += shown;
    if (text.length > ANSWER_TEMPLATE_LIMITS.answerChars) return { problem: `the filled answer is longer than ${ANSWER_TEMPLATE_LIMITS.answerChars} characters` };
  }
  return { text };
}
