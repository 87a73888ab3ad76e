import { checkOutputSchema, violationsOf } from "../tools/json-schema.js";

/**
 * Typed answers for protocol clients (MCP's `run_task` with `output_schema`). The schema is a
 * caller's program in disguise: it is checked as every path checks a run's output schema
 * (`checkOutputSchema`: size, depth, and every pattern on RE2, linear in the text), and the
 * answer is validated by the same linear-time ajv the run's synthesizer uses. The run itself is
 * given the schema (`output_schema`: its synthesizer answers in JSON valid against it, or the run
 * fails with the validation errors); `structuredAnswerOf` reads that JSON back as the value for
 * the client.
 */

/** An answer longer than this is not parsed for a structured value. */
const MAX_ANSWER_CHARS = 1024 * 1024;

export interface OutputSchema {
  schema: Record<string, unknown>;
}

/** Checks a caller's JSON schema for the answer; a bad one is an InputError `invalid_output_schema` naming why. */
export function parseOutputSchema(schema: unknown): OutputSchema {
  return { schema: checkOutputSchema(schema) };
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
  const first = violationsOf(value, output.schema)[0];
  if (first) return { error: `the answer does not match the output schema: ${first.path} ${first.message}` };
  return { value };
}
