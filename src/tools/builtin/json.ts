import { type ParseError, parse as parseTolerant, printParseErrorCode } from "jsonc-parser";
import { JSONPath } from "jsonpath-plus";
import { z } from "zod";
import { ToolError } from "../../core/errors.js";
import { truncate } from "../../core/text.js";
import { defineTool } from "../define-tool.js";
import { ajv, type SchemaViolation } from "../json-schema.js";

export const JsonArgs = z.object({
  operation: z
    .enum(["validate", "format", "query"])
    .default("validate")
    .describe("validate: check the text parses (and matches `schema` when given); format: pretty-print it; query: select with a JSONPath"),
  text: z.string().max(5 * 1024 * 1024).describe("the JSON text"),
  path: z.string().optional().describe("JSONPath for the query operation, e.g. $.items[*].name"),
  schema: z
    .union([z.record(z.string(), z.unknown()), z.boolean(), z.string()])
    .optional()
    .describe("a JSON Schema (object, or its JSON text) the document must match; drafts 2020-12 and 07 keywords"),
});

export type JsonValue =
  | { valid: true; type: string; formatted?: string; matches?: unknown[] }
  | { valid: false; error: string; line?: number; column?: number; violations?: SchemaViolation[] };

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
  let validate;
  try {
    validate = ajv.compile(schemaOf(schema));
  } catch (error) {
    if (error instanceof ToolError) throw error;
    throw new ToolError("invalid_schema", `the schema is invalid: ${(error as Error).message}`);
  }
  if (validate(document)) return [];
  return (validate.errors ?? []).map((issue) => ({ path: issue.instancePath || "/", message: issue.message ?? issue.keyword }));
}

function typeOf(value: unknown): string {
  if (value === null) return "null";
  return Array.isArray(value) ? "array" : typeof value;
}

/**
 * Where strict JSON breaks, as a line and column. V8's messages do not always carry a position,
 * so jsonc-parser (with comments and trailing commas disallowed) locates the first error.
 */
function locate(text: string): { line?: number; column?: number; reason?: string } {
  const errors: ParseError[] = [];
  parseTolerant(text, errors, { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false });
  const first = errors[0];
  if (!first) return {};
  const before = text.slice(0, first.offset);
  const line = before.split("\n").length;
  const column = first.offset - before.lastIndexOf("\n");
  return { line, column, reason: printParseErrorCode(first.error) };
}

/** The most a pretty-printed document may take; past it the format operation refuses rather than build it. */
export const MAX_FORMATTED_BYTES = 16 * 1024 * 1024;

/**
 * The size of `JSON.stringify(value, null, 2)`, counted without building it and stopping past
 * `limit`. Indentation grows with depth, so a few megabytes of nested brackets would print as
 * gigabytes, built synchronously on the event loop: measured first, it is refused at once.
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
export const jsonTool = defineTool({
  name: "json",
  description: "Validate JSON text (reporting where it breaks, and against a JSON Schema when given), pretty-print it, or query it with a JSONPath.",
  schema: JsonArgs,
  permission: "NONE",
  riskLevel: "low",
  idempotent: true,
  timeoutMs: 5_000,
  async execute({ operation, text, path, schema }): Promise<JsonValue> {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      const { reason: _reason, ...where } = locate(text);
      return { valid: false, error: (error as Error).message.split("\n")[0] ?? "invalid JSON", ...where };
    }
    if (operation === "format") {
      if (prettySizeWithin(parsed, MAX_FORMATTED_BYTES).over) {
        throw new ToolError("result_too_large", `the document would be more than ${MAX_FORMATTED_BYTES} bytes pretty-printed (deep nesting multiplies its indentation); format a part of it`);
      }
      return { valid: true, type: typeOf(parsed), formatted: JSON.stringify(parsed, null, 2) };
    }
    if (operation === "query") {
      if (!path) throw new ToolError("invalid_arguments", "the query operation needs a path");
      const matches = JSONPath({ path, json: parsed as object, wrap: true, eval: "safe" }) as unknown[];
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
  },
  summarize: (value) => {
    const result = value as JsonValue;
    if (!result.valid) {
      if (result.violations) return `JSON ${result.error}${result.violations.length > 1 ? ` (+${result.violations.length - 1} more)` : ""}`;
      const where = result.line ? ` (line ${result.line}, column ${result.column})` : "";
      return `invalid JSON${where}: ${result.error}`;
    }
    if (result.matches) return `${result.matches.length} match(es): ${truncate(JSON.stringify(result.matches), 300)}`;
    if (result.formatted) return truncate(result.formatted, 300);
    return `valid JSON (${result.type})`;
  },
});
