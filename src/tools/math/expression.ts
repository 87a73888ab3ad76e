/**
 * A small arithmetic expression language, parsed by recursive descent and evaluated over
 * numbers only. No identifiers reach JavaScript: names resolve against the fixed tables below,
 * so model-written input cannot touch objects, prototypes or globals.
 *
 *   expression  := additive
 *   additive    := multiplicative (("+" | "-") multiplicative)*
 *   multiplicative := unary (("*" | "×" | "/" | "÷" | "mod" | "of") unary)*
 *   unary       := ("-" | "+") unary | power
 *   power       := postfix (("^" | "**") unary)?
 *   postfix     := primary ("%" | "!")*
 *   primary     := number | name | name "(" arguments ")" | "(" expression ")"
 *
 * `17%` is 0.17 and `of` multiplies, so `17% of 2,340` is 397.8. Thousands separators are accepted
 * outside function arguments (`2,340`); inside them a comma separates arguments.
 */

/** What is wrong with an expression or its variables, as the calculator's error code says it. */
export type ExpressionProblem = "invalid_expression" | "unknown_variable" | "variable_not_numeric" | "too_many_variables" | "variable_too_large";

export class ExpressionError extends Error {
  readonly position: number;
  readonly code: ExpressionProblem;
  constructor(message: string, position: number, code: ExpressionProblem = "invalid_expression") {
    super(message);
    this.name = "ExpressionError";
    this.position = position;
    this.code = code;
  }
}

/** Named values an expression may use: a number, or a list of numbers (spread into a function's arguments: `sum(prices)`). */
export type Variables = Readonly<Record<string, number | readonly number[]>>;

const MAX_LENGTH = 2_000;
const MAX_DEPTH = 100;
/** The most items a list variable may hold. */
export const MAX_LIST_ITEMS = 10_000;

const CONSTANTS: Readonly<Record<string, number>> = Object.freeze({
  pi: Math.PI,
  π: Math.PI,
  e: Math.E,
  tau: 2 * Math.PI,
});

type NumericFunction = { arity: [number, number]; apply: (args: number[]) => number };

const FUNCTIONS: Readonly<Record<string, NumericFunction>> = Object.freeze({
  sqrt: { arity: [1, 1], apply: ([x = 0]) => Math.sqrt(x) },
  cbrt: { arity: [1, 1], apply: ([x = 0]) => Math.cbrt(x) },
  abs: { arity: [1, 1], apply: ([x = 0]) => Math.abs(x) },
  floor: { arity: [1, 1], apply: ([x = 0]) => Math.floor(x) },
  ceil: { arity: [1, 1], apply: ([x = 0]) => Math.ceil(x) },
  trunc: { arity: [1, 1], apply: ([x = 0]) => Math.trunc(x) },
  round: {
    arity: [1, 2],
    apply: ([x = 0, digits = 0]) => {
      const factor = 10 ** digits;
      return Math.round(x * factor) / factor;
    },
  },
  // Up to a list variable's most items (a list is spread into these): written out, an expression's length bounds them.
  min: { arity: [1, MAX_LIST_ITEMS], apply: (args) => args.reduce((least, x) => Math.min(least, x), Number.POSITIVE_INFINITY) },
  max: { arity: [1, MAX_LIST_ITEMS], apply: (args) => args.reduce((most, x) => Math.max(most, x), Number.NEGATIVE_INFINITY) },
  sum: { arity: [1, MAX_LIST_ITEMS], apply: (args) => args.reduce((total, x) => total + x, 0) },
  avg: { arity: [1, MAX_LIST_ITEMS], apply: (args) => args.reduce((total, x) => total + x, 0) / args.length },
  pow: { arity: [2, 2], apply: ([x = 0, y = 0]) => x ** y },
  exp: { arity: [1, 1], apply: ([x = 0]) => Math.exp(x) },
  ln: { arity: [1, 1], apply: ([x = 0]) => Math.log(x) },
  log: { arity: [1, 2], apply: ([x = 0, base]) => (base === undefined ? Math.log10(x) : Math.log(x) / Math.log(base)) },
  log10: { arity: [1, 1], apply: ([x = 0]) => Math.log10(x) },
  log2: { arity: [1, 1], apply: ([x = 0]) => Math.log2(x) },
  sin: { arity: [1, 1], apply: ([x = 0]) => Math.sin(x) },
  cos: { arity: [1, 1], apply: ([x = 0]) => Math.cos(x) },
  tan: { arity: [1, 1], apply: ([x = 0]) => Math.tan(x) },
  asin: { arity: [1, 1], apply: ([x = 0]) => Math.asin(x) },
  acos: { arity: [1, 1], apply: ([x = 0]) => Math.acos(x) },
  atan: { arity: [1, 1], apply: ([x = 0]) => Math.atan(x) },
});

/** Whether a name means something already (a constant, a function, an operator word), so a variable may not take it. */
export function isReservedName(name: string): boolean {
  const lower = name.toLowerCase();
  return Object.hasOwn(CONSTANTS, lower) || Object.hasOwn(FUNCTIONS, lower) || lower === "mod" || lower === "of";
}

type Token =
  | { kind: "number"; value: number; text: string; position: number }
  | { kind: "name"; value: string; position: number }
  | { kind: "operator"; value: string; position: number }
  | { kind: "end"; position: number };

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let index = 0;
  while (index < source.length) {
    const char = source[index] ?? "";
    if (/\s/.test(char)) {
      index += 1;
      continue;
    }
    const number = /^(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/.exec(source.slice(index));
    if (number) {
      tokens.push({ kind: "number", value: Number(number[0]), text: number[0], position: index });
      index += number[0].length;
      continue;
    }
    const name = /^[A-Za-zπ_][A-Za-z0-9_]*/u.exec(source.slice(index));
    if (name) {
      tokens.push({ kind: "name", value: name[0].toLowerCase(), position: index });
      index += name[0].length;
      continue;
    }
    if (source.startsWith("**", index)) {
      tokens.push({ kind: "operator", value: "^", position: index });
      index += 2;
      continue;
    }
    if ("+-*/^%!(),×÷−".includes(char)) {
      const normalized = char === "×" ? "*" : char === "÷" ? "/" : char === "−" ? "-" : char;
      tokens.push({ kind: "operator", value: normalized, position: index });
      index += 1;
      continue;
    }
    throw new ExpressionError(`unexpected character "${char}" at position ${index + 1}`, index);
  }
  tokens.push({ kind: "end", position: source.length });
  return tokens;
}

class Parser {
  readonly #tokens: Token[];
  readonly #variables: Variables;
  #index = 0;
  #depth = 0;
  #callDepth = 0;

  constructor(tokens: Token[], variables: Variables) {
    this.#tokens = tokens;
    this.#variables = variables;
  }

  parse(): number {
    const value = this.#additive();
    const next = this.#peek();
    if (next.kind !== "end") throw new ExpressionError(`unexpected ${describe(next)} at position ${next.position + 1}`, next.position);
    return value;
  }

  #peek(offset = 0): Token {
    return this.#tokens[this.#index + offset] ?? this.#tokens[this.#tokens.length - 1] ?? { kind: "end", position: 0 };
  }

  #take(): Token {
    const token = this.#peek();
    this.#index += 1;
    return token;
  }

  #isOperator(value: string): boolean {
    const token = this.#peek();
    return token.kind === "operator" && token.value === value;
  }

  #enter(position: number): void {
    this.#depth += 1;
    if (this.#depth > MAX_DEPTH) throw new ExpressionError("the expression is nested too deeply", position);
  }

  #additive(): number {
    let value = this.#multiplicative();
    while (this.#isOperator("+") || this.#isOperator("-")) {
      const operator = this.#take();
      const right = this.#multiplicative();
      value = operator.kind === "operator" && operator.value === "+" ? value + right : value - right;
    }
    return value;
  }

  #multiplicative(): number {
    let value = this.#unary();
    for (;;) {
      const token = this.#peek();
      if (token.kind === "operator" && (token.value === "*" || token.value === "/")) {
        this.#take();
        const right = this.#unary();
        if (token.value === "/" && right === 0) throw new ExpressionError("division by zero", token.position);
        value = token.value === "*" ? value * right : value / right;
      } else if (token.kind === "name" && (token.value === "mod" || token.value === "of")) {
        this.#take();
        const right = this.#unary();
        if (token.value === "mod" && right === 0) throw new ExpressionError("modulo by zero", token.position);
        value = token.value === "mod" ? value % right : value * right;
      } else {
        return value;
      }
    }
  }

  #unary(): number {
    const token = this.#peek();
    if (token.kind === "operator" && (token.value === "-" || token.value === "+")) {
      this.#take();
      this.#enter(token.position);
      const operand = this.#unary();
      this.#depth -= 1;
      return token.value === "-" ? -operand : operand;
    }
    return this.#power();
  }

  #power(): number {
    const base = this.#postfix();
    if (this.#isOperator("^")) {
      const token = this.#take();
      this.#enter(token.position);
      const exponent = this.#unary();
      this.#depth -= 1;
      return base ** exponent;
    }
    return base;
  }

  #postfix(): number {
    let value = this.#primary();
    for (;;) {
      if (this.#isOperator("%")) {
        this.#take();
        value /= 100;
      } else if (this.#isOperator("!")) {
        const token = this.#take();
        value = factorial(value, token.position);
      } else {
        return value;
      }
    }
  }

  #primary(): number {
    const token = this.#take();
    if (token.kind === "number") return this.#withThousands(token);
    if (token.kind === "operator" && token.value === "(") {
      this.#enter(token.position);
      const saved = this.#callDepth;
      this.#callDepth = 0;
      const value = this.#additive();
      this.#callDepth = saved;
      this.#expect(")");
      this.#depth -= 1;
      return value;
    }
    if (token.kind === "name") {
      if (this.#isOperator("(")) return this.#call(token.value, token.position);
      if (Object.hasOwn(this.#variables, token.value)) {
        const value = this.#variables[token.value];
        if (typeof value === "number") return value;
        throw new ExpressionError(`the variable "${token.value}" is a list, not a number; use it as a function's arguments, e.g. sum(${token.value})`, token.position, "variable_not_numeric");
      }
      if (Object.hasOwn(CONSTANTS, token.value)) return CONSTANTS[token.value] ?? Number.NaN;
      if (Object.hasOwn(FUNCTIONS, token.value)) {
        throw new ExpressionError(`${token.value} is a function; write ${token.value}(…)`, token.position);
      }
      const bound = Object.keys(this.#variables);
      if (bound.length > 0) throw new ExpressionError(`unknown variable "${token.value}" at position ${token.position + 1} (the variables: ${bound.join(", ")})`, token.position, "unknown_variable");
      throw new ExpressionError(`unknown name "${token.value}" at position ${token.position + 1}`, token.position);
    }
    throw new ExpressionError(`unexpected ${describe(token)} at position ${token.position + 1}`, token.position);
  }

  /** Joins `2,340,000` into one number, but only outside function arguments. */
  #withThousands(token: Extract<Token, { kind: "number" }>): number {
    if (this.#callDepth > 0 || !/^\d{1,3}$/.test(token.text)) return token.value;
    let text = token.text;
    while (this.#isOperator(",")) {
      const next = this.#peek(1);
      if (next.kind !== "number" || !/^\d{3}(?:\.\d+)?$/.test(next.text)) break;
      this.#take();
      this.#take();
      text += next.text;
      if (next.text.includes(".")) break;
    }
    return Number(text);
  }

  #call(name: string, position: number): number {
    if (!Object.hasOwn(FUNCTIONS, name)) throw new ExpressionError(`unknown function "${name}"`, position);
    const definition = FUNCTIONS[name] as NumericFunction;
    this.#expect("(");
    this.#enter(position);
    this.#callDepth += 1;
    const args: number[] = [];
    if (!this.#isOperator(")")) {
      this.#argument(args);
      while (this.#isOperator(",")) {
        this.#take();
        this.#argument(args);
      }
    }
    this.#callDepth -= 1;
    this.#expect(")");
    this.#depth -= 1;
    const [least, most] = definition.arity;
    if (args.length < least || args.length > most) {
      const expected = least === most ? `${least}` : `${least} to ${most}`;
      throw new ExpressionError(`${name} takes ${expected} argument(s), got ${args.length}`, position);
    }
    return definition.apply(args);
  }

  /** One argument of a call: a list variable standing alone is spread into its items; anything else is one number. */
  #argument(args: number[]): void {
    const token = this.#peek();
    const after = this.#peek(1);
    const list = token.kind === "name" && Object.hasOwn(this.#variables, token.value) ? this.#variables[token.value] : undefined;
    if (Array.isArray(list) && after.kind === "operator" && (after.value === "," || after.value === ")")) {
      this.#take();
      if (args.length + list.length > MAX_LIST_ITEMS) throw new ExpressionError(`a call takes at most ${MAX_LIST_ITEMS} numbers`, token.position, "variable_too_large");
      args.push(...(list as number[]));
      return;
    }
    args.push(this.#additive());
  }

  #expect(value: string): void {
    const token = this.#take();
    if (token.kind !== "operator" || token.value !== value) {
      throw new ExpressionError(`expected "${value}" but found ${describe(token)}`, token.position);
    }
  }
}

function describe(token: Token): string {
  switch (token.kind) {
    case "end":
      return "the end of the expression";
    case "number":
      return `number ${token.text}`;
    default:
      return `"${token.value}"`;
  }
}

function factorial(value: number, position: number): number {
  if (!Number.isInteger(value) || value < 0) throw new ExpressionError("factorial needs a whole number ≥ 0", position);
  if (value > 170) throw new ExpressionError("factorial is too large", position);
  let result = 1;
  for (let factor = 2; factor <= value; factor += 1) result *= factor;
  return result;
}

/**
 * Evaluates an arithmetic expression, its names resolved against `variables` first (checked
 * ones: see `bindVariables`). The result is rounded to 15 significant digits so that binary
 * floating-point noise (0.1 + 0.2) does not reach the user.
 */
export function evaluateExpression(source: string, variables: Variables = {}): number {
  if (source.length > MAX_LENGTH) throw new ExpressionError(`the expression is longer than ${MAX_LENGTH} characters`, 0);
  if (source.trim() === "") throw new ExpressionError("the expression is empty", 0);
  const value = new Parser(tokenize(source), variables).parse();
  if (!Number.isFinite(value)) throw new ExpressionError("the result is not a finite number", 0);
  return Number(value.toPrecision(15));
}
