import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

/** One ajv instance for the tools layer: compiled schemas are cached by it, formats (date-time, email, uri, …) checked. */
export const ajv = new Ajv2020({ allErrors: true, strict: false, validateFormats: true });
addFormats.default(ajv);

export interface SchemaViolation {
  path: string;
  message: string;
}

/** Why a JSON Schema cannot be used (it does not compile), or undefined when it can. */
export function schemaProblem(schema: object): string | undefined {
  try {
    ajv.compile(schema);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/** A document's violations of a JSON Schema, each with the place it is at (empty when it matches); the schema must compile. */
export function violationsOf(document: unknown, schema: object): SchemaViolation[] {
  const validate = ajv.compile(schema);
  if (validate(document)) return [];
  return (validate.errors ?? []).map((error) => ({ path: error.instancePath || "/", message: error.message ?? "is not valid" }));
}
