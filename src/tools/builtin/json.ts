import { JSONPath } from "jsonpath-plus";
import { z } from "zod";
import { ToolError } from "../../core/errors.js";
import { truncate } from "../../core/text.js";
import { defineTool } from "../define-tool.js";

export const JsonArgs = z.object({
  operation: z
    .enum(["validate", "format", "query"])
    .default("validate")
    .describe("validate: check the text parses; format: pretty-print it; query: select with a JSONPath"),
  text: z.string().max(5 * 1024 * 1024).describe("the JSON text"),
  path: z.string().optional().describe("JSONPath for the query operation, e.g. $.items[*].name"),
});

export type JsonValue =
  | { valid: true; type: string; formatted?: string; matches?: unknown[] }
  | { valid: false; error: string; line?: number; column?: number };

function typeOf(value: unknown): string {
  if (value === null) return "null";
  return Array.isArray(value) ? "array" : typeof value;
}

/** Locates a JSON.parse error ("at position N") as a line and column. */
function locate(text: string, message: string): { line?: number; column?: number } {
  const match = /position (\d+)/.exec(message);
  if (!match) return {};
  const offset = Number(match[1]);
  const before = text.slice(0, offset);
  const line = before.split("\n").length;
  const column = offset - before.lastIndexOf("\n");
  return { line, column };
}

/** Validates, pretty-prints or queries JSON text. An invalid document is a result, not a failure. */
export const jsonTool = defineTool({
  name: "json",
  description: "Validate JSON text (reporting where it breaks), pretty-print it, or query it with a JSONPath.",
  schema: JsonArgs,
  permission: "NONE",
  riskLevel: "low",
  idempotent: true,
  timeoutMs: 5_000,
  async execute({ operation, text, path }): Promise<JsonValue> {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      const message = (error as Error).message;
      return { valid: false, error: message, ...locate(text, message) };
    }
    if (operation === "format") return { valid: true, type: typeOf(parsed), formatted: JSON.stringify(parsed, null, 2) };
    if (operation === "query") {
      if (!path) throw new ToolError("invalid_arguments", "the query operation needs a path");
      const matches = JSONPath({ path, json: parsed as object, wrap: true, eval: "safe" }) as unknown[];
      return { valid: true, type: typeOf(parsed), matches };
    }
    return { valid: true, type: typeOf(parsed) };
  },
  summarize: (value) => {
    const result = value as JsonValue;
    if (!result.valid) {
      const where = result.line ? ` (line ${result.line}, column ${result.column})` : "";
      return `invalid JSON${where}: ${result.error}`;
    }
    if (result.matches) return `${result.matches.length} match(es): ${truncate(JSON.stringify(result.matches), 300)}`;
    if (result.formatted) return truncate(result.formatted, 300);
    return `valid JSON (${result.type})`;
  },
});
