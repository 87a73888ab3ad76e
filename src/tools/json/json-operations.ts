import { type ParseError, parse as parseTolerant } from "jsonc-parser";
import { ToolError } from "../../core/errors.js";
import { JsonPathLimitError, JsonPathSyntaxError, queryJsonPath } from "../../core/json-path.js";
import { ajv, type SchemaViolation } from "../json-schema.js";
import { jsonSizeWithin } from "../result-size.js";

/**
 * The json tool's work — parse, validate against a schema, pretty-print, query — as one pure
 * function. It runs in a worker thread (`json-pool.ts`): a schema and a path are programs a
 * caller (or a planted document) writes, and the worker can be stopped at its deadline.
 */

export interface JsonJob {
  operation: "validate" | "format" | "query";
  text: string;
  path?: string | undefined;
  schema?: unknown;
  /** The most bytes the value may take as JSON. */
  maxResultBytes: number;
  /** The most steps a query may take. */
  maxPathSteps: number;
}

export type JsonValue =
  | { valid: true; type: string; formatted?: string; matches?: unknown[] }
  | { valid: false; error: string; line?: number; column?: number; violations?: SchemaViolation[] };

/** The most a pretty-printed document may take; past it the format operation refuses rather than build it. */
export const MAX_FORMATTED_BYTES = 16 * 1024 * 1024;

function schemaOf(schema: unknown): object | boolean {
  if (typeof schema !== "string") return schema as object | boolean;
  try {
    return JSON.parse(schema) as object | boolean;
  } catch (error) {
    throw new ToolError("invalid_schema", `the schema is not valid JSON: ${(error as Error).message}`);
  }
}

/** Checks a document against a JSON schema; returns the violations (empty when it matches). */
export function schemaViolations(document: unknown, schema: unknown): SchemaViolation[] {
  const parsed = schemaOf(schema);
  let validate;
  try {
    validate = ajv.compile(parsed);
  } catch (error) {
    throw new ToolError("invalid_schema", `the schema is invalid: ${(error as Error).message}`);
  }
  try {
    if (validate(document)) return [];
    return (validate.errors ?? []).map((issue) => ({ path: issue.instancePath || "/", message: issue.message ?? issue.keyword }));
  } finally {
    // Every call brings a new schema object: ajv would keep each compiled one for good.
    if (typeof parsed === "object") ajv.removeSchema(parsed);
  }
}

function typeOf(value: unknown): string {
  if (value === null) return "null";
  return Array.isArray(value) ? "array" : typeof value;
}

/**
 * Where strict JSON breaks, as a line and column. V8's messages do not always carry a position,
 * so jsonc-parser (with comments and trailing commas disallowed) locates the first error.
 */
function locate(text: string): { line?: number; column?: number } {
  const errors: ParseError[] = [];
  parseTolerant(text, errors, { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false });
  const first = errors[0];
  if (!first) return {};
  const before = text.slice(0, first.offset);
  const line = before.split("\n").length;
  const column = first.offset - before.lastIndexOf("\n");
  return { line, column };
}

/**
 * The size of `JSON.stringify(value, null, 2)`, counted without building it and stopping past
 * `limit`. Indentation grows with depth, so a few megabytes of nested brackets would print as
 * gigabytes: measured first, it is refused at once.
 */
export function prettySizeWithin(value: unknown, limit: number): { bytes: number; over: boolean } {
  let bytes = 0;
  const stack: Array<{ value: unknown; depth: number }> = [{ value, depth: 0 }];
  while (stack.length > 0) {
    if (bytes > limit) return { bytes, over: true };
    const { value: current, depth } = stack.pop() as { value: unknown; depth: number };
    if (current === null || typeof current !== "object") {
      bytes += typeof current === "string" ? Buffer.byteLength(current, "utf8") + 2 : String(current).length;
      continue;
    }
    const items: Array<[string | undefined, unknown]> = Array.isArray(current) ? current.map((item) => [undefined, item]) : Object.entries(current as Record<string, unknown>);
    if (items.length === 0) {
      bytes += 2;
      continue;
    }
    // "[\n", then each item on its own line, indented one level deeper, then the closing bracket indented.
    bytes += 2 + 2 * depth + 1 + items.length * (2 * (depth + 1) + 2);
    for (const [key, item] of items) {
      if (key !== undefined) bytes += Buffer.byteLength(key, "utf8") + 4;
      stack.push({ value: item, depth: depth + 1 });
    }
  }
  return { bytes, over: bytes > limit };
}

/** Validates, pretty-prints or queries JSON text. An invalid document is a result, not a failure. */
export function runJsonJob({ operation, text, path, schema, maxResultBytes, maxPathSteps }: JsonJob): JsonValue {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return { valid: false, error: (error as Error).message.split("\n")[0] ?? "invalid JSON", ...locate(text) };
  }
  if (operation === "format") {
    if (prettySizeWithin(parsed, MAX_FORMATTED_BYTES).over) {
      throw new ToolError("result_too_large", `the document would be more than ${MAX_FORMATTED_BYTES} bytes pretty-printed (deep nesting multiplies its indentation); format a part of it`);
    }
    return { valid: true, type: typeOf(parsed), formatted: JSON.stringify(parsed, null, 2) };
  }
  if (operation === "query") {
    if (!path) throw new ToolError("invalid_arguments", "the query operation needs a path");
    let matches: unknown[];
    try {
      matches = queryJsonPath(parsed, path, maxPathSteps);
    } catch (error) {
      if (error instanceof JsonPathSyntaxError) throw new ToolError("invalid_path", `not a valid JSONPath: ${error.message}`);
      if (error instanceof JsonPathLimitError) throw new ToolError("path_too_costly", error.message);
      throw error;
    }
    // Matches share subtrees (`$..*`): measured as JSON would write them, before anything copies them.
    if (jsonSizeWithin(matches, maxResultBytes).over) {
      throw new ToolError("result_too_large", `the query's ${matches.length} matches are more than ${maxResultBytes} bytes as JSON; select less`);
    }
    return { valid: true, type: typeOf(parsed), matches };
  }
  if (schema !== undefined) {
    const violations = schemaViolations(parsed, schema);
    if (violations.length > 0) {
      const first = violations[0] as SchemaViolation;
      return { valid: false, error: `does not match the schema: ${first.path} ${first.message}`, violations };
    }
  }
  return { valid: true, type: typeOf(parsed) };
}
