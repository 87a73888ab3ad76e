import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { compileLinearRegExp } from "../core/linear-regex.js";

/**
 * ajv's `code.regExp`: every `pattern` and `patternProperties` of a schema runs on RE2, so a
 * schema from a caller (or a planted document) cannot backtrack for minutes. A pattern RE2
 * refuses (lookaround, backreferences) makes the schema invalid, with the reason.
 */
const linearRegExp = Object.assign((pattern: string, flags: string) => compileLinearRegExp(pattern, flags), { code: "linearRegExp" });

/** One ajv instance for the tools layer: compiled schemas are cached by it, formats (date-time, email, uri, …) checked. */
export const ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: true, code: { regExp: linearRegExp } });
addFormats.default(ajv);

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

/** A document's violations of a JSON Schema, each with the place it is at (empty when it matches); the schema must compile. */
export function violationsOf(document: unknown, schema: object): SchemaViolation[] {
  const validate = validatorOf(schema);
  if (validate(document)) return [];
  return (validate.errors ?? []).map((error) => ({ path: error.instancePath || "/", message: error.message ?? "is not valid" }));
}
