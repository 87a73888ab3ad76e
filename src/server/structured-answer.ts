import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import safeRegex from "safe-regex2";
import { InputError } from "../core/errors.js";

/**
 * Typed answers for protocol clients (MCP's `run_task` with `output_schema`). The schema is a
 * caller's program in disguise, so it is bounded before it is compiled: its size, its depth, and
 * every regular expression in it (star height, through safe-regex2). The run itself is given the
 * schema (`output_schema`: its synthesizer answers in JSON valid against it, or the run fails with
 * the validation errors); `structuredAnswerOf` reads that JSON back as the value for the client.
 */

const MAX_SCHEMA_BYTES = 32 * 1024;
const MAX_DEPTH = 32;
/** An answer longer than this is not parsed for a structured value. */
const MAX_ANSWER_CHARS = 1024 * 1024;

/** Its own ajv: a caller's schemas must not fill the tools' instance's cache. */
const ajv = new Ajv2020({ allErrors: false, strict: false, validateFormats: false, loadSchema: undefined });

export interface OutputSchema {
  schema: Record<string, unknown>;
  validate: ValidateFunction;
}

function walk(value: unknown, depth: number, visit: (key: string, value: unknown) => void): void {
  if (depth > MAX_DEPTH) throw new InputError("output_schema_too_deep", `the output schema nests deeper than ${MAX_DEPTH} levels`);
  if (Array.isArray(value)) {
    for (const item of value) walk(item, depth + 1, visit);
    return;
  }
  if (typeof value !== "object" || value === null) return;
  for (const [key, child] of Object.entries(value)) {
    visit(key, child);
    walk(child, depth + 1, visit);
  }
}

function checkPattern(pattern: string): void {
  let safe: boolean;
  try {
    safe = safeRegex(pattern, { limit: 25 });
  } catch {
    safe = false;
  }
  if (!safe) throw new InputError("output_schema_unsafe_pattern", `the output schema's pattern ${JSON.stringify(pattern.slice(0, 100))} could take exponential time; simplify it`);
}

/** Checks and compiles a caller's JSON schema for the answer; a bad one is an InputError naming why. */
export function parseOutputSchema(schema: unknown): OutputSchema {
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) throw new InputError("output_schema_invalid", "the output schema must be a JSON object (a JSON Schema)");
  if (Buffer.byteLength(JSON.stringify(schema), "utf8") > MAX_SCHEMA_BYTES) throw new InputError("output_schema_too_large", `the output schema is larger than ${MAX_SCHEMA_BYTES / 1024} KB`);
  walk(schema, 0, (key, value) => {
    if (key === "pattern" && typeof value === "string") checkPattern(value);
    if (key === "patternProperties" && typeof value === "object" && value !== null) for (const pattern of Object.keys(value)) checkPattern(pattern);
    if (key === "$ref" && typeof value === "string" && !value.startsWith("#")) throw new InputError("output_schema_invalid", `the output schema may only refer to its own parts ($ref "${value.slice(0, 100)}")`);
  });
  try {
    return { schema: schema as Record<string, unknown>, validate: ajv.compile(schema) };
  } catch (error) {
    throw new InputError("output_schema_invalid", `the output schema is not a valid JSON Schema: ${(error as Error).message}`);
  } finally {
    // Compiled schemas are not kept: each call brings its own.
    ajv.removeSchema(schema as object);
  }
}

/** JSON the answer holds: the whole answer, else its first fenced ```json block. */
function jsonIn(answer: string): unknown {
  const trimmed = answer.trim();
  try {
    return JSON.parse(trimmed);
  } catch {
    const fenced = /```(?:json)?\s*\n([\s\S]*?)\n```/.exec(trimmed);
    if (!fenced) throw new Error("the answer holds no JSON");
    return JSON.parse(fenced[1] as string);
  }
}

/** The answer as a value of the schema, or why it is not one. */
export function structuredAnswerOf(answer: string | null, output: OutputSchema): { value: unknown } | { error: string } {
  if (answer === null || answer.trim() === "") return { error: "the run has no answer" };
  if (answer.length > MAX_ANSWER_CHARS) return { error: `the answer is longer than ${MAX_ANSWER_CHARS} characters` };
  let value: unknown;
  try {
    value = jsonIn(answer);
  } catch (error) {
    return { error: `the answer is not JSON of the output schema: ${(error as Error).message}` };
  }
  if (!output.validate(value)) {
    const first = output.validate.errors?.[0];
    return { error: `the answer does not match the output schema: ${first ? `${first.instancePath || "/"} ${first.message ?? first.keyword}` : "invalid"}` };
  }
  return { value };
}
