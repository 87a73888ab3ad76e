import { JSONPath } from "jsonpath-plus";
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

function query(value: unknown, path: string, from: string): unknown[] {
  try {
    return JSONPath({ path, json: value as object, wrap: true, eval: "safe" }) as unknown[];
  } catch (error) {
    throw new ArgReferenceError(`the path ${path} into ${from} is not a valid JSONPath: ${(error as Error).message}`);
  }
}

/**
 * The part of a path before its first segment that selects many (`$.users` of `$.users[*].id`),
 * or undefined when the path starts selecting many at once (`$..id`, `$[*]`).
 */
function containerOf(path: string): string | undefined {
  const segments = JSONPath.toPathArray(path);
  const first = segments.findIndex((segment, index) => index > 0 && !isDefinitePath(segment.startsWith("?(") || segment === ".." ? segment : `$[${segment}]`));
  if (first <= 1) return undefined;
  return JSONPath.toPathString(segments.slice(0, first));
}

function nothingMatched(value: unknown, path: string, from: string): ArgReferenceError {
  return new ArgReferenceError(`the path ${path} matched nothing in the result of ${from}, which is ${describeShape(value)}: ${preview(value, 200)}`);
}

/**
 * Selects from a subtask's result with a JSONPath: one value for a definite path, a list
 * otherwise. A path that matches nothing is an error naming the path and the shape found —
 * for a list-selecting path, when the place it lists from does not exist (`$.user[*].id` on
 * `{users: …}`); an empty list where the place exists is a result.
 */
export function selectPath(value: unknown, path: string, from: string): unknown {
  if (path === "$") return value;
  const matches = query(value, path, from);
  if (isDefinitePath(path)) {
    if (matches.length === 0) throw nothingMatched(value, path, from);
    return matches[0];
  }
  if (matches.length === 0) {
    const container = containerOf(path);
    if (container !== undefined && query(value, container, from).length === 0) throw nothingMatched(value, path, from);
  }
  return matches;
}

/**
 * Why a path cannot be used, or undefined when it can: it must start with `$`, balance its
 * brackets, parentheses and quotes, and every filter must parse.
 */
export function pathProblem(path: string): string | undefined {
  if (!path.startsWith("$")) return "a JSONPath starts with $";
  const closers: string[] = [];
  let quote: string | undefined;
  for (const char of path) {
    if (quote) {
      if (char === quote) quote = undefined;
    } else if (char === "'" || char === '"') quote = char;
    else if (char === "[" || char === "(") closers.push(char === "[" ? "]" : ")");
    else if (char === "]" || char === ")") {
      if (closers.pop() !== char) return `"${char}" does not close anything`;
    }
  }
  if (quote) return `a ${quote} quote is not closed`;
  if (closers.length > 0) return `"${closers.at(-1)}" is missing`;
  // Filters are parsed only when they run, so run each once on a stand-in item.
  for (const segment of JSONPath.toPathArray(path)) {
    if (!segment.startsWith("?(")) continue;
    try {
      JSONPath({ path: `$[${segment}]`, json: [{}], wrap: true, eval: "safe" });
    } catch (error) {
      return `the filter [${segment}] does not parse: ${(error as Error).message}`;
    }
  }
  return undefined;
}
