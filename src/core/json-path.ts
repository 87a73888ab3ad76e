import type jsep from "jsep";
import { isDefiniteSegment, JsonPathSyntaxError, parseJsonPath, type Segment, type Selector } from "./json-path-syntax.js";
import { preview } from "./text.js";

export { JsonPathSyntaxError } from "./json-path-syntax.js";

export class ArgReferenceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ArgReferenceError";
  }
}

/**
 * The most steps one evaluation may take (a node visited, a filter's operation): recursive
 * descents multiply (`$..a..a..a` on 200 nested objects made 1.3 million matches in 15 s on
 * jsonpath-plus), so past this the query stops with an error instead of holding the thread.
 * References between subtasks are resolved on the event loop: half a million steps is about
 * 50 ms (a filter over 100,000 records). The json tool queries in a worker thread, with more.
 */
export const MAX_JSON_PATH_STEPS = 500_000;

/** The longest string a filter may build (`@.s + @.s + …` would double it each time). */
const MAX_FILTER_STRING = 64 * 1024;

export class JsonPathLimitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "JsonPathLimitError";
  }
}

type Json = unknown;

const own = (value: Json, key: string): Json => {
  if (value === null || value === undefined) return undefined;
  if (typeof value === "string") return key === "length" ? value.length : undefined;
  if (typeof value !== "object") return undefined;
  return Object.hasOwn(value, key) ? (value as Record<string, Json>)[key] : undefined;
};

const isContainer = (value: Json): value is object => value !== null && typeof value === "object";

/** Calls `visit` on each child of a container in order: an array's items, an object's values (with their keys). */
function eachChild(value: Json, visit: (property: string | number, child: Json) => void): void {
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index += 1) visit(index, value[index]);
  } else if (isContainer(value)) {
    for (const key of Object.keys(value)) visit(key, (value as Record<string, Json>)[key]);
  }
}

interface Budget {
  steps: number;
  path: string;
  limit: number;
}

function spend(budget: Budget, steps = 1): void {
  budget.steps += steps;
  if (budget.steps > budget.limit) {
    throw new JsonPathLimitError(`the JSONPath ${preview(budget.path, 120)} needs more than ${budget.limit.toLocaleString("en-US")} steps on this data (recursive descents and filters multiply); narrow it`);
  }
}

interface Scope {
  current: Json;
  property: string | number | undefined;
  parent: Json;
  root: Json;
}

/** A filter's or an index expression's value: reads, comparisons and arithmetic only (checked when parsed). */
function evaluate(node: jsep.Expression, scope: Scope, budget: Budget): Json {
  spend(budget);
  switch (node.type) {
    case "Literal":
      return (node as jsep.Literal).value;
    case "Identifier": {
      const name = (node as jsep.Identifier).name;
      if (name === "@") return scope.current;
      if (name === "$" || name === "@root") return scope.root;
      if (name === "@property" || name === "@parentProperty") return scope.property;
      if (name === "@parent") return scope.parent;
      if (name === "true") return true;
      if (name === "false") return false;
      if (name === "null") return null;
      return undefined;
    }
    case "MemberExpression": {
      const member = node as jsep.MemberExpression;
      const object = evaluate(member.object, scope, budget);
      const key = member.computed ? evaluate(member.property, scope, budget) : (member.property as jsep.Identifier).name;
      return own(object, String(key));
    }
    case "UnaryExpression": {
      const unary = node as jsep.UnaryExpression;
      const value = evaluate(unary.argument, scope, budget);
      if (unary.operator === "!") return !value;
      if (unary.operator === "-") return -(value as number);
      if (unary.operator === "+") return Number(value);
      return typeof value;
    }
    case "LogicalExpression":
    case "BinaryExpression": {
      const binary = node as jsep.BinaryExpression;
      const left = evaluate(binary.left, scope, budget);
      if (binary.operator === "&&") return left && evaluate(binary.right, scope, budget);
      if (binary.operator === "||") return left || evaluate(binary.right, scope, budget);
      if (binary.operator === "??") return left ?? evaluate(binary.right, scope, budget);
      return binaryOf(binary.operator, left, evaluate(binary.right, scope, budget));
    }
    case "ConditionalExpression": {
      const conditional = node as jsep.ConditionalExpression;
      return evaluate(conditional.test, scope, budget) ? evaluate(conditional.consequent, scope, budget) : evaluate(conditional.alternate, scope, budget);
    }
    case "ArrayExpression":
      return (node as jsep.ArrayExpression).elements.map((element) => (element ? evaluate(element, scope, budget) : undefined));
    default:
      return undefined;
  }
}

function binaryOf(operator: string, left: Json, right: Json): Json {
  // JSONPath filters compare as JavaScript does (jsonpath-plus's semantics): == is loose.
  switch (operator) {
    case "==":
      return left == right;
    case "!=":
      return left != right;
    case "===":
      return left === right;
    case "!==":
      return left !== right;
    case "<":
      return (left as number) < (right as number);
    case "<=":
      return (left as number) <= (right as number);
    case ">":
      return (left as number) > (right as number);
    case ">=":
      return (left as number) >= (right as number);
    case "in":
      return isContainer(right) && Object.hasOwn(right, String(left));
    case "+": {
      if (typeof left === "number" && typeof right === "number") return left + right;
      const text = `${String(left)}${String(right)}`;
      if (text.length > MAX_FILTER_STRING) throw new JsonPathLimitError(`a filter built a string of more than ${MAX_FILTER_STRING} characters`);
      return text;
    }
    case "-":
      return (left as number) - (right as number);
    case "*":
      return (left as number) * (right as number);
    case "/":
      return (left as number) / (right as number);
    default:
      return (left as number) % (right as number);
  }
}

interface Node {
  value: Json;
  property: string | number | undefined;
  parent: Json;
}

function indexIn(length: number, index: number): number | undefined {
  const at = index < 0 ? length + index : index;
  return at >= 0 && at < length ? at : undefined;
}

/** What one selector picks from one node, appended to `out`. */
function select(selector: Selector, node: Node, root: Json, budget: Budget, out: Node[]): void {
  const value = node.value;
  switch (selector.kind) {
    case "name": {
      if (Array.isArray(value) && /^-?\d+$/.test(selector.name)) {
        const at = indexIn(value.length, Number(selector.name));
        if (at !== undefined) out.push({ value: value[at], property: at, parent: value });
        return;
      }
      const found = own(value, selector.name);
      if (found !== undefined) out.push({ value: found, property: selector.name, parent: value });
      return;
    }
    case "index": {
      if (!Array.isArray(value)) {
        const found = own(value, String(selector.index));
        if (found !== undefined) out.push({ value: found, property: String(selector.index), parent: value });
        return;
      }
      const at = indexIn(value.length, selector.index);
      if (at !== undefined) out.push({ value: value[at], property: at, parent: value });
      return;
    }
    case "wildcard":
      eachChild(value, (property, child) => {
        spend(budget);
        out.push({ value: child, property, parent: value });
      });
      return;
    case "slice": {
      if (!Array.isArray(value)) return;
      const length = value.length;
      const step = selector.step ?? 1;
      const clamp = (bound: number | undefined, fallback: number): number => (bound === undefined ? fallback : bound < 0 ? Math.max(length + bound, step > 0 ? 0 : -1) : Math.min(bound, step > 0 ? length : length - 1));
      const start = clamp(selector.start, step > 0 ? 0 : length - 1);
      const end = clamp(selector.end, step > 0 ? length : -1);
      for (let at = start; step > 0 ? at < end : at > end; at += step) {
        spend(budget);
        out.push({ value: value[at], property: at, parent: value });
      }
      return;
    }
    case "filter":
      eachChild(value, (property, child) => {
        spend(budget);
        if (evaluate(selector.expression, { current: child, property, parent: value, root }, budget)) out.push({ value: child, property, parent: value });
      });
      return;
    case "script": {
      const key = evaluate(selector.expression, { current: value, property: node.property, parent: node.parent, root }, budget);
      if (typeof key === "number" && Number.isInteger(key)) select({ kind: "index", index: key }, node, root, budget, out);
      else if (typeof key === "string") select({ kind: "name", name: key }, node, root, budget, out);
    }
  }
}

/** Applies one segment to each node; after `..`, to each node and every descendant, depth first (jsonpath-plus's order). */
function applySegment(segment: Segment, nodes: Node[], root: Json, budget: Budget): Node[] {
  const out: Node[] = [];
  const apply = (node: Node): void => {
    spend(budget);
    for (const selector of segment.selectors) select(selector, node, root, budget, out);
  };
  for (const node of nodes) {
    if (!segment.descendant) {
      apply(node);
      continue;
    }
    // An explicit stack rather than recursion: a deep document must not overflow the call stack.
    const stack: Node[] = [node];
    const children: Node[] = [];
    while (stack.length > 0) {
      const next = stack.pop() as Node;
      apply(next);
      eachChild(next.value, (property, child) => {
        if (isContainer(child)) children.push({ value: child, property, parent: next.value });
      });
      // Reversed onto the stack, so the first child is visited first.
      while (children.length > 0) stack.push(children.pop() as Node);
    }
  }
  return out;
}

/** Reads a path, or throws a JsonPathSyntaxError. Parsed paths are cached (plans repeat them). */
const parsed = new Map<string, Segment[]>();
function segmentsOf(path: string): Segment[] {
  let segments = parsed.get(path);
  if (!segments) {
    segments = parseJsonPath(path);
    if (parsed.size > 500) parsed.clear();
    if (path.length <= 4_096) parsed.set(path, segments);
  }
  return segments;
}

/**
 * Every value a JSONPath selects, in document order as jsonpath-plus gives them. Time is linear
 * in the path and bounded by `maxSteps` on the data (JsonPathLimitError past it).
 */
export function queryJsonPath(value: Json, path: string, maxSteps = MAX_JSON_PATH_STEPS): Json[] {
  return evaluateSegments(value, segmentsOf(path), { steps: 0, path, limit: maxSteps });
}

function evaluateSegments(value: Json, segments: Segment[], budget: Budget): Json[] {
  let nodes: Node[] = [{ value, property: undefined, parent: undefined }];
  for (const segment of segments) {
    nodes = applySegment(segment, nodes, value, budget);
    if (nodes.length === 0) break;
  }
  return nodes.map((node) => node.value);
}

/** A path that names one place (no wildcard, filter, slice, union or recursive descent) yields one value. */
export function isDefinitePath(path: string): boolean {
  try {
    return segmentsOf(path).every(isDefiniteSegment);
  } catch {
    return false;
  }
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
    return queryJsonPath(value, path);
  } catch (error) {
    if (error instanceof JsonPathSyntaxError) throw new ArgReferenceError(`the path ${preview(path, 200)} into ${from} is not a valid JSONPath: ${error.message}`);
    if (error instanceof JsonPathLimitError) throw new ArgReferenceError(`the path into ${from}: ${error.message}`);
    throw error;
  }
}

function nothingMatched(value: unknown, path: string, from: string): ArgReferenceError {
  return new ArgReferenceError(`the path ${preview(path, 200)} matched nothing in the result of ${from}, which is ${describeShape(value)}: ${preview(value, 200)}`);
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
  let segments: Segment[];
  try {
    segments = segmentsOf(path);
  } catch {
    return matches;
  }
  if (segments.every(isDefiniteSegment)) {
    if (matches.length === 0) throw nothingMatched(value, path, from);
    return matches[0];
  }
  if (matches.length === 0) {
    // The definite part before the first segment that selects many: the place the list comes from.
    const first = segments.findIndex((segment) => !isDefiniteSegment(segment));
    if (first >= 1) {
      const container = evaluateSegments(value, segments.slice(0, first), { steps: 0, path, limit: MAX_JSON_PATH_STEPS });
      if (container.length === 0) throw nothingMatched(value, path, from);
    }
  }
  return matches;
}

/**
 * Why a path cannot be used, or undefined when it can: it must start with `$`, balance its
 * brackets, parentheses and quotes, and every filter must parse and only read and compare.
 */
export function pathProblem(path: string): string | undefined {
  try {
    segmentsOf(path);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}
