import jsep from "jsep";

/**
 * JSONPath read into segments in one pass over the text (jsonpath-plus's own reading of a
 * dotted path is quadratic: 160,000 characters of `$.a.a…` took 13 s). The grammar is the one
 * troupe's plans and tools have always used (jsonpath-plus's): `.name`, `['name']`, `[0]`,
 * `[*]`/`.*`, unions `[0,2]`, slices `[1:5:2]`, recursive descent `..`, filters `[?(expr)]` and
 * expressions `[(expr)]`. Filter and index expressions are parsed by jsep and may only read
 * values and compare them: no calls, no regular expressions, no assignments (a filter is a
 * program a model or a planted document writes).
 */

export type Selector =
  | { kind: "name"; name: string }
  | { kind: "index"; index: number }
  | { kind: "wildcard" }
  | { kind: "slice"; start?: number; end?: number; step?: number }
  | { kind: "filter"; source: string; expression: jsep.Expression }
  | { kind: "script"; source: string; expression: jsep.Expression };

/** One step of a path: its selectors (several for a union), applied to each node or, after `..`, to each descendant too. */
export interface Segment {
  descendant: boolean;
  selectors: Selector[];
}

export class JsonPathSyntaxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "JsonPathSyntaxError";
  }
}

const IDENTIFIERS = new Set(["@", "$", "@property", "@parent", "@parentProperty", "@root", "@path", "undefined", "null", "true", "false"]);
const BINARY = new Set(["==", "!=", "===", "!==", "<", "<=", ">", ">=", "+", "-", "*", "/", "%", "in"]);
const UNARY = new Set(["!", "-", "+", "typeof"]);

// jsep reads `@` and `$` as the start of identifiers (`@.price`, `@property`).
jsep.addIdentifierChar("@");
jsep.addIdentifierChar("$");

/** Why an expression may not run, or undefined: only reads, comparisons and arithmetic pass. */
function expressionProblem(node: jsep.Expression): string | undefined {
  switch (node.type) {
    case "Literal":
      return (node as jsep.Literal).value instanceof RegExp ? "regular expressions are not allowed in a filter" : undefined;
    case "Identifier":
      return IDENTIFIERS.has((node as jsep.Identifier).name) ? undefined : `unknown name ${(node as jsep.Identifier).name} (a filter reads @, its fields, and $)`;
    case "MemberExpression": {
      const member = node as jsep.MemberExpression;
      return expressionProblem(member.object) ?? (member.computed ? expressionProblem(member.property) : undefined);
    }
    case "UnaryExpression": {
      const unary = node as jsep.UnaryExpression;
      return UNARY.has(unary.operator) ? expressionProblem(unary.argument) : `the operator ${unary.operator} is not allowed`;
    }
    case "BinaryExpression":
    case "LogicalExpression": {
      const binary = node as jsep.BinaryExpression;
      if (!BINARY.has(binary.operator) && !["&&", "||", "??"].includes(binary.operator)) return `the operator ${binary.operator} is not allowed`;
      return expressionProblem(binary.left) ?? expressionProblem(binary.right);
    }
    case "ConditionalExpression": {
      const conditional = node as jsep.ConditionalExpression;
      return expressionProblem(conditional.test) ?? expressionProblem(conditional.consequent) ?? expressionProblem(conditional.alternate);
    }
    case "ArrayExpression":
      for (const element of (node as jsep.ArrayExpression).elements) {
        const problem = element ? expressionProblem(element) : undefined;
        if (problem) return problem;
      }
      return undefined;
    case "CallExpression":
      return "calls are not allowed in a filter (it may read and compare values only)";
    default:
      return `${node.type} is not allowed in a filter`;
  }
}

function parseExpression(source: string, what: string): jsep.Expression {
  let expression: jsep.Expression;
  try {
    expression = jsep(source);
  } catch (error) {
    throw new JsonPathSyntaxError(`the ${what} does not parse: ${(error as Error).message}`);
  }
  const problem = expressionProblem(expression);
  if (problem) throw new JsonPathSyntaxError(`the ${what} cannot run: ${problem}`);
  return expression;
}

/** The index of the character closing a quote that opens at `start`. */
function closingQuote(path: string, start: number): number {
  const quote = path[start];
  for (let index = start + 1; index < path.length; index += 1) {
    if (path[index] === "\\") index += 1;
    else if (path[index] === quote) return index;
  }
  throw new JsonPathSyntaxError(`a ${quote} quote is not closed`);
}

/** The index of the `)` closing a `(` at `start`, skipping quoted text and nested parentheses. */
function closingParenthesis(path: string, start: number): number {
  let depth = 0;
  for (let index = start; index < path.length; index += 1) {
    const char = path[index];
    if (char === "'" || char === '"') index = closingQuote(path, index);
    else if (char === "(") depth += 1;
    else if (char === ")") {
      depth -= 1;
      if (depth === 0) return index;
    }
  }
  throw new JsonPathSyntaxError(`")" is missing`);
}

function unquote(text: string): string {
  const quote = text[0] as string;
  let out = "";
  for (let index = 1; index < text.length - 1; index += 1) {
    const char = text[index] as string;
    if (char === "\\" && index + 1 < text.length - 1) {
      const next = text[index + 1] as string;
      out += next === "n" ? "\n" : next === "t" ? "\t" : next === quote || next === "\\" ? next : `\\${next}`;
      index += 1;
    } else out += char;
  }
  return out;
}

const INTEGER = /^-?\d+$/;

function sliceOf(text: string): Selector {
  const parts = text.split(":").map((part) => part.trim());
  if (parts.length > 3 || parts.some((part) => part !== "" && !INTEGER.test(part))) throw new JsonPathSyntaxError(`[${text}] is not a slice (start:end:step, whole numbers)`);
  const [start, end, step] = parts.map((part) => (part === "" || part === undefined ? undefined : Number(part)));
  if (step === 0) throw new JsonPathSyntaxError(`[${text}] has a step of 0`);
  return { kind: "slice", ...(start !== undefined ? { start } : {}), ...(end !== undefined ? { end } : {}), ...(step !== undefined ? { step } : {}) };
}

/** One selector of a bracket, its text trimmed. */
function selectorOf(text: string): Selector {
  if (text === "*") return { kind: "wildcard" };
  if (text.startsWith("?(") && text.endsWith(")")) {
    const source = text.slice(2, -1);
    return { kind: "filter", source, expression: parseExpression(source, `filter [${text}]`) };
  }
  if (text.startsWith("(") && text.endsWith(")")) {
    const source = text.slice(1, -1);
    return { kind: "script", source, expression: parseExpression(source, `expression [${text}]`) };
  }
  if ((text.startsWith("'") || text.startsWith('"')) && text.length >= 2 && text.endsWith(text[0] as string)) return { kind: "name", name: unquote(text) };
  if (INTEGER.test(text)) return { kind: "index", index: Number(text) };
  if (text.includes(":")) return sliceOf(text);
  if (text === "") throw new JsonPathSyntaxError("[] selects nothing");
  // jsonpath-plus reads a bare word in brackets as a name.
  return { kind: "name", name: text };
}

/** The selectors of the bracket opening at `start`, split at top-level commas; and where it ends. */
function readBracket(path: string, start: number): { selectors: Selector[]; end: number } {
  const parts: string[] = [];
  let from = start + 1;
  let index = start + 1;
  while (index < path.length) {
    const char = path[index];
    if (char === "'" || char === '"') index = closingQuote(path, index) + 1;
    else if (char === "(") index = closingParenthesis(path, index) + 1;
    else if (char === "[") throw new JsonPathSyntaxError(`"[" inside a bracket at ${index}`);
    else if (char === ",") {
      parts.push(path.slice(from, index));
      from = index + 1;
      index += 1;
    } else if (char === "]") {
      parts.push(path.slice(from, index));
      return { selectors: parts.map((part) => selectorOf(part.trim())), end: index + 1 };
    } else index += 1;
  }
  throw new JsonPathSyntaxError(`"]" is missing`);
}

/** Reads a JSONPath into its segments, in one pass; throws a JsonPathSyntaxError naming what is wrong. */
export function parseJsonPath(path: string): Segment[] {
  if (!path.startsWith("$")) throw new JsonPathSyntaxError("a JSONPath starts with $");
  const segments: Segment[] = [];
  let index = 1;
  while (index < path.length) {
    const char = path[index];
    let descendant = false;
    if (char === ".") {
      if (path[index + 1] === ".") {
        descendant = true;
        index += 2;
      } else index += 1;
      if (path[index] === "[") {
        if (!descendant) throw new JsonPathSyntaxError(`".[" at ${index - 1}: a bracket follows a name directly`);
      } else {
        let end = index;
        while (end < path.length && path[end] !== "." && path[end] !== "[" && path[end] !== "]") end += 1;
        const name = path.slice(index, end);
        if (name === "") throw new JsonPathSyntaxError(`a name is missing after "." at ${index - 1}`);
        segments.push({ descendant, selectors: [name === "*" ? { kind: "wildcard" } : { kind: "name", name }] });
        index = end;
        continue;
      }
    }
    if (path[index] === "[") {
      const { selectors, end } = readBracket(path, index);
      segments.push({ descendant, selectors });
      index = end;
      continue;
    }
    if (path[index] === "]") throw new JsonPathSyntaxError(`"]" does not close anything`);
    throw new JsonPathSyntaxError(`unexpected "${path[index]}" at ${index}`);
  }
  return segments;
}

/** Whether a path names one place at most: no descent, wildcard, slice, union, filter or expression. */
export function isDefiniteSegment(segment: Segment): boolean {
  return !segment.descendant && segment.selectors.length === 1 && (segment.selectors[0]?.kind === "name" || segment.selectors[0]?.kind === "index");
}
