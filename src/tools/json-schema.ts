import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { InputError } from "../core/errors.js";
import { compileLinearRegExp, PatternError } from "../core/linear-regex.js";
import { OutputSchema } from "../core/run.js";

/**
 * ajv's `code.regExp`: every `pattern`, `patternProperties` and `propertyNames` pattern of a
 * schema runs on RE2, so a schema from a caller (or a planted document) cannot backtrack for
 * minutes. A pattern RE2 refuses (lookaround, backreferences) makes the schema invalid, naming
 * the pattern and the reason.
 */
const linearRegExp = Object.assign(
  (pattern: string, flags: string) => {
    try {
      return compileLinearRegExp(pattern, flags);
    } catch (error) {
      if (error instanceof PatternError) throw new PatternError(`the pattern ${JSON.stringify(pattern.length > 100 ? `${pattern.slice(0, 100)}…` : pattern)} cannot be used: ${error.message}`);
      throw error;
    }
  },
  { code: "linearRegExp" },
);

/** One ajv instance for the tools layer: compiled schemas are cached by it, formats (date-time, email, uri, …) checked. */
export const ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: true, code: { regExp: linearRegExp } });
addFormats.default(ajv);

/**
 * `format: "url"`, checked by the WHATWG URL parser (linear in the text) instead of ajv-formats'
 * backtracking expression, which takes cubic time on a crafted string ("http://" and 8,000 ':'
 * took 0.15 s, a 100 KB one minutes). A URL of http, https or ftp with a host, and no white space.
 */
function isWebUrl(text: string): boolean {
  if (/\s/.test(text) || !URL.canParse(text)) return false;
  const url = new URL(text);
  return (url.protocol === "http:" || url.protocol === "https:" || url.protocol === "ftp:") && url.hostname.length > 0;
}
ajv.addFormat("url", { type: "string", validate: isWebUrl });

export interface SchemaViolation {
  path: string;
  message: string;
}

/** Validators of schemas that come with requests (a run's output schema), by their JSON text; the newest few. */
const compiled = new Map<string, ValidateFunction>();
const COMPILED_KEPT = 64;

/**
 * The validator of a schema a request brought, compiled once per distinct schema and kept apart
 * from ajv's own cache: ajv keys that by the schema object (each run's is a new one, which would
 * pile up) and refuses a second schema with the same `$id`, so the schema is taken out of ajv
 * once compiled.
 */
function validatorOf(schema: object): ValidateFunction {
  const key = JSON.stringify(schema);
  let validate = compiled.get(key);
  if (!validate) {
    try {
      validate = ajv.compile(schema);
    } finally {
      ajv.removeSchema(schema);
    }
    if (compiled.size >= COMPILED_KEPT) compiled.delete(compiled.keys().next().value as string);
    compiled.set(key, validate);
  }
  return validate;
}

/** Why a JSON Schema cannot be used (it does not compile), or undefined when it can. */
export function schemaProblem(schema: object): string | undefined {
  try {
    validatorOf(schema);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/**
 * Checks a run's output schema (a typed answer's: the CLI's `--output-schema`, REST's and MCP's
 * `output_schema`, the library's `outputSchema`), the same way on every path: a JSON object of at
 * most 64 KiB and 32 levels (core/run.ts) that compiles on this ajv, every pattern on RE2. A bad
 * one is an InputError `invalid_output_schema` naming why (a pattern RE2 cannot run: which, and why).
 */
export function checkOutputSchema(schema: unknown): OutputSchema {
  const parsed = OutputSchema.safeParse(schema);
  if (!parsed.success) throw new InputError("invalid_output_schema", parsed.error.issues[0]?.message ?? "the output schema must be a JSON Schema object");
  const problem = schemaProblem(parsed.data);
  if (problem) throw new InputError("invalid_output_schema", `the output schema is not a valid JSON Schema: ${problem}`);
  return parsed.data;
}

/** A document's violations of a JSON Schema, each with the place it is at (empty when it matches); the schema must compile. */
export function violationsOf(document: unknown, schema: object): SchemaViolation[] {
  const validate = validatorOf(schema);
  if (validate(document)) return [];
  return (validate.errors ?? []).map((error) => ({ path: error.instancePath || "/", message: error.message ?? "is not valid" }));
}
