import type { z } from "zod";
import { describeSchema, type JsonSchema, standInFor } from "../core/arg-types.js";
import type { PlannedArgument } from "../core/plan-check.js";
import { truncate } from "../core/text.js";
import { fitToolArgs } from "./arg-fit.js";

/**
 * A direct step's arguments checked against its tool before anything runs, as the plan check
 * asks (src/core/plan-check.ts): the literals as the plan gives them, and each reference as a
 * stand-in of the type the step it refers to declares (a reference of unknown type as a value the
 * tool takes there, so it cannot be blamed), brought to the tool's types as a run would
 * (`fitToolArgs`: a number given for text is its decimal text, loose names become the
 * calculator's variables) and validated with the tool's own schema. A built-in tool's schema is
 * troupe's own zod; an MCP tool's is its shallow, linear check (src/tools/mcp/mcp-schema-check.ts),
 * never the server's whole schema on the event loop. Each problem names the argument and says
 * what the tool takes.
 */

type Issue = z.core.$ZodIssue;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function propertiesOf(parameters: JsonSchema): Record<string, JsonSchema> {
  return (isRecord(parameters.properties) ? parameters.properties : {}) as Record<string, JsonSchema>;
}

function requiredOf(parameters: JsonSchema): string[] {
  return Array.isArray(parameters.required) ? parameters.required.filter((name): name is string => typeof name === "string") : [];
}

/** What a tool takes, in words: each parameter with its type, whether it is required, and the start of its description. */
export function describeParameters(tool: string, parameters: JsonSchema): string {
  const required = new Set(requiredOf(parameters));
  const entries = Object.entries(propertiesOf(parameters)).slice(0, 12);
  if (entries.length === 0) return `${tool} takes no arguments`;
  const described = entries.map(([name, property]) => {
    const notes = [describeSchema(property), ...(required.has(name) ? ["required"] : [])];
    const about = typeof property.description === "string" ? `: ${truncate(property.description, 80)}` : "";
    return `${name} (${notes.join(", ")})${about}`;
  });
  return `${tool} takes ${described.join("; ")}`;
}

/** The argument an issue is about: the first key of its path, or the loose name it was bound under (`vars.x` → x), or the one an MCP check names in its message (`/x must be …`). */
function argumentOf(issue: Issue, loose: ReadonlySet<string>): string | undefined {
  const [first, second] = issue.path;
  if (typeof first === "string") return first === "vars" && typeof second === "string" && loose.has(second) ? second : first;
  const named = /^\/([^/\s]+)/.exec(issue.message)?.[1];
  return named;
}

/** Why these arguments do not fit the tool (empty when they fit): see the file's comment. */
export function argumentProblems(tool: { name: string; schema: z.ZodType }, parameters: JsonSchema, args: Readonly<Record<string, PlannedArgument>>): string[] {
  const properties = propertiesOf(parameters);
  const candidate: Record<string, unknown> = {};
  // References whose value the check cannot blame: unknown type, or a stand-in whose constraints (length, format) say nothing of the real value.
  const referenced = new Map<string, { from: string; schema?: JsonSchema }>();
  for (const [name, arg] of Object.entries(args)) {
    if ("value" in arg) {
      candidate[name] = arg.value;
      continue;
    }
    referenced.set(name, arg);
    // Text can become anything a run brings it to ("42" a number, "true" a truth value): only a declared number, truth value, list or object stands for itself.
    const declared = arg.schema !== undefined && describeSchema(arg.schema) !== "string" ? standInFor(arg.schema) : undefined;
    const standIn = declared ?? standInFor(properties[name]);
    if (standIn) candidate[name] = standIn.value;
    if (!declared) referenced.set(name, { from: arg.from });
  }
  const loose = new Set(Object.keys(args).filter((name) => !(name in properties)));
  const fitted = fitToolArgs(parameters, candidate).args;
  const parsed = tool.schema.safeParse(fitted, { reportInput: true });
  if (parsed.success) return [];
  const problems: string[] = [];
  const given = Object.keys(args);
  for (const issue of parsed.error.issues.slice(0, 20)) {
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) problems.push(`${tool.name} does not take the argument "${key}"`);
      continue;
    }
    const name = argumentOf(issue, loose);
    const reference = name !== undefined ? referenced.get(name) : undefined;
    if (reference) {
      // A reference is blamed only for its declared type, never for a stand-in's length or format.
      if (reference.schema === undefined || issue.code !== "invalid_type" || issue.path.length > (loose.has(name as string) ? 2 : 1)) continue;
      problems.push(`${tool.name}'s argument "${name}" takes ${issue.expected}, and ${reference.from} is ${describeSchema(reference.schema)}`);
      continue;
    }
    if (issue.code === "invalid_type" && issue.input === undefined && name !== undefined && !given.includes(name)) {
      problems.push(`${tool.name} needs the argument "${name}"${given.length > 0 ? ` (it was given ${given.map((other) => `"${other}"`).join(", ")})` : ""}`);
      continue;
    }
    // A shallow MCP check says `/ must have required property 'x'` or `/x must be string`.
    const required = /must have required property '([^']{1,64})'/.exec(issue.message)?.[1];
    if (issue.code === "custom" && required !== undefined) {
      problems.push(`${tool.name} needs the argument "${required}"`);
      continue;
    }
    const message = issue.code === "custom" ? issue.message.replace(/^\/\S*\s*/, "") : issue.message;
    const at = issue.path.length > 0 ? `"${issue.path.join(".")}"` : name !== undefined ? `"${name}"` : "";
    problems.push(at !== "" ? `${tool.name}'s argument ${at}: ${truncate(message, 200)}` : `${tool.name}'s arguments: ${truncate(message, 200)}`);
  }
  if (problems.length === 0) return [];
  return [`${[...new Set(problems)].join("; ")} — ${describeParameters(tool.name, parameters)}`];
}
