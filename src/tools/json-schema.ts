import { Ajv2020 } from "ajv/dist/2020.js";
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
