import type { JsonSchemaValidator, jsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/types.js";
import { ToolError } from "../../core/errors.js";
import { ajv } from "../json-schema.js";
import { jsonPool } from "../json/json-pool.js";

/**
 * Checks of values against an MCP server's schemas. A server's schema is a program in disguise
 * (recursive `anyOf`, `uniqueItems` over thousands of objects: exponential or quadratic in the
 * value), so the full check runs in the json tool's worker threads, stopped at a deadline. Only a
 * shallow schema derived from it — the top-level `required` names and each property's `type`,
 * linear in the value — runs in-process, so that a model's usual slip (a missing or mistyped
 * argument) is refused before approval and audit, as built-in tools' arguments are.
 */

/** The most a schema check may take; a server whose schema needs more is not sent the call. */
export const SCHEMA_CHECK_MS = 5_000;
/** Properties past this many are left to the full check (the shallow one is compiled on the event loop). */
const SHALLOW_PROPERTIES = 256;
const TYPES = new Set(["string", "number", "integer", "boolean", "object", "array", "null"]);

function typeOnly(property: unknown): { type: string | string[] } | undefined {
  const type = (property as { type?: unknown } | null)?.type;
  if (typeof type === "string" && TYPES.has(type)) return { type };
  if (Array.isArray(type) && type.length > 0 && type.every((item) => typeof item === "string" && TYPES.has(item))) return { type: type as string[] };
  return undefined;
}

/** The in-process part of a server's input schema: required names and the top-level properties' types, nothing that can cost more than the value's size. */
export function shallowValidator(inputSchema: Record<string, unknown>): ReturnType<typeof ajv.compile> | undefined {
  const properties: Record<string, { type: string | string[] }> = {};
  const declared = inputSchema.properties;
  if (declared && typeof declared === "object") {
    for (const [name, property] of Object.entries(declared).slice(0, SHALLOW_PROPERTIES)) {
      const type = typeOnly(property);
      if (type) properties[name] = type;
    }
  }
  const required = Array.isArray(inputSchema.required) ? inputSchema.required.filter((name): name is string => typeof name === "string").slice(0, SHALLOW_PROPERTIES) : [];
  if (Object.keys(properties).length === 0 && required.length === 0) return undefined;
  const shallow = { type: "object", properties, required };
  try {
    return ajv.compile(shallow);
  } catch {
    return undefined;
  } finally {
    ajv.removeSchema(shallow);
  }
}

/**
 * A value's violations of a server's schema, checked in a worker thread: empty when it matches,
 * or when the schema cannot be compiled (the server then checks). Past `deadlineMs`, or on abort,
 * the worker is stopped and this rejects with a ToolError (`timeout`, `cancelled`).
 */
export async function violationsOffLoop(value: unknown, schema: Record<string, unknown>, deadlineMs: number, signal: AbortSignal | undefined, what: string): Promise<string[]> {
  let outcome;
  try {
    outcome = await jsonPool.run({ operation: "validate", text: JSON.stringify(value), schema, maxResultBytes: 0, maxPathSteps: 0 }, deadlineMs, signal);
  } catch (error) {
    if (error instanceof ToolError && error.code === "invalid_schema") return [];
    if (error instanceof ToolError && error.code === "timeout") {
      throw new ToolError("timeout", `${what} could not be checked against the server's schema within ${deadlineMs} ms; the worker checking it was stopped`);
    }
    throw error;
  }
  if (outcome.valid) return [];
  return (outcome.violations ?? [{ path: "/", message: outcome.error }]).map((violation) => `${violation.path} ${violation.message}`);
}

/**
 * The SDK client's validator of tools' structured output, replaced: its own compiles each output
 * schema on the event loop with backtracking patterns. The output is checked by `violationsOffLoop`
 * after the call instead.
 */
export const deferredOutputValidator: jsonSchemaValidator = {
  getValidator<T>(): JsonSchemaValidator<T> {
    return (input) => ({ valid: true, data: input as T, errorMessage: undefined });
  },
};
