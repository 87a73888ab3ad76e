import { JSONPath } from "jsonpath-plus";
import { isArgRef, type PlannedSubtask } from "./plan.js";
import { preview } from "./text.js";

export class ArgReferenceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ArgReferenceError";
  }
}

/** A path that names one place (no wildcard, filter, slice, union or recursive descent) yields one value. */
export function isDefinitePath(path: string): boolean {
  return !/\*|\?\(|\.\.|\[[^\]]*[:,][^\]]*\]/.test(path);
}

/** A short description of a value's shape, for error messages. */
export function describeShape(value: unknown, depth = 0): string {
  if (value === null) return "null";
  if (Array.isArray(value)) {
    if (value.length === 0 || depth > 1) return `array(${value.length})`;
    return `array(${value.length}) of ${describeShape(value[0], depth + 1)}`;
  }
  if (typeof value === "object") {
    const keys = Object.keys(value as object);
    if (depth > 1) return "object";
    return `object {${keys.slice(0, 12).join(", ")}${keys.length > 12 ? ", …" : ""}}`;
  }
  return typeof value;
}

/** Selects from a subtask's result with a JSONPath: one value for a definite path, a list otherwise. */
export function selectPath(value: unknown, path: string, from: string): unknown {
  if (path === "$") return value;
  let matches: unknown[];
  try {
    matches = JSONPath({ path, json: value as object, wrap: true, eval: "safe" }) as unknown[];
  } catch (error) {
    throw new ArgReferenceError(`the path ${path} into ${from} is not a valid JSONPath: ${(error as Error).message}`);
  }
  if (isDefinitePath(path)) {
    if (matches.length === 0) {
      throw new ArgReferenceError(`the path ${path} matched nothing in the result of ${from}, which is ${describeShape(value)}: ${preview(value, 200)}`);
    }
    return matches[0];
  }
  return matches;
}

/** The subtask's arguments with every reference replaced by the value it selects. */
export function resolveArgs(subtask: PlannedSubtask, resultOf: (id: string) => unknown): Record<string, unknown> {
  const resolved: Record<string, unknown> = {};
  for (const [name, arg] of Object.entries(subtask.args)) {
    resolved[name] = isArgRef(arg) ? selectPath(resultOf(arg.ref), arg.path, arg.ref) : arg.value;
  }
  return resolved;
}
