import { z } from "zod";
import { MAX_JSON_PATH_STEPS } from "../../core/json-path.js";
import { truncate } from "../../core/text.js";
import { defineTool } from "../define-tool.js";
import type { SchemaViolation } from "../json-schema.js";
import type { JsonValue } from "../json/json-operations.js";
import { jsonPool as pool } from "../json/json-pool.js";
import { DEFAULT_MAX_RESULT_BYTES } from "../registry.js";

export { MAX_FORMATTED_BYTES, prettySizeWithin, schemaViolations } from "../json/json-operations.js";

export const JsonArgs = z.object({
  operation: z
    .enum(["validate", "format", "query"])
    .default("validate")
    .describe("validate: check the text parses (and matches `schema` when given); format: pretty-print it; query: select with a JSONPath"),
  text: z.string().max(5 * 1024 * 1024).describe("the JSON text"),
  path: z.string().max(1024 * 1024).optional().describe("JSONPath for the query operation, e.g. $.items[*].name"),
  schema: z
    .union([z.record(z.string(), z.unknown()), z.boolean(), z.string().max(1024 * 1024)])
    .optional()
    .describe("a JSON Schema (object, or its JSON text) the document must match; drafts 2020-12 and 07 keywords; patterns in RE2 syntax (no lookaround or backreferences)"),
});

/** A query in the worker may take this many times the steps of one resolved on the event loop. */
const WORKER_PATH_STEPS = 4 * MAX_JSON_PATH_STEPS;
const TIMEOUT_MS = 5_000;

/** Validates, pretty-prints or queries JSON text, in a worker thread stopped at the tool's timeout. */
export const jsonTool = defineTool({
  name: "json",
  description: "Validate JSON text (reporting where it breaks, and against a JSON Schema when given), pretty-print it, or query it with a JSONPath.",
  schema: JsonArgs,
  permission: "NONE",
  powers: [],
  idempotent: true,
  // Its failures are its input's (a timeout comes back the same): retrying them only costs time.
  retries: 0,
  timeoutMs: TIMEOUT_MS,
  execute: ({ operation, text, path, schema }, context) =>
    pool.run({ operation, text, path, schema, maxResultBytes: DEFAULT_MAX_RESULT_BYTES, maxPathSteps: WORKER_PATH_STEPS }, TIMEOUT_MS, context.signal),
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

export type { JsonValue, SchemaViolation };
