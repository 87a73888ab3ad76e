import { ExpressionError, isReservedName, MAX_LIST_ITEMS, type Variables } from "./expression.js";

/** The most variables one expression may bind. */
export const MAX_VARIABLES = 32;
const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,31}$/;
/** A number as text (what a referenced value may be): plain decimal, at most 64 characters. */
const NUMBER_TEXT = /^\s*[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?\s*$/;

function shown(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return `a list of ${value.length}`;
  if (typeof value === "object") return `an object with ${Object.keys(value).slice(0, 5).join(", ") || "no fields"}`;
  const text = typeof value === "string" ? JSON.stringify(value) : String(value);
  return `${typeof value === "string" ? "the text" : `the ${typeof value}`} ${text.length > 60 ? `${text.slice(0, 59)}…` : text}`;
}

/** A variable's value as a number: a finite number, or a number written as text; undefined otherwise. */
function numberOf(value: unknown): number | undefined {
  if (typeof value === "number") return Number.isFinite(value) ? value : undefined;
  if (typeof value === "string" && value.length <= 64 && NUMBER_TEXT.test(value)) {
    const parsed = Number(value);
    return Number.isFinite(parsed) ? parsed : undefined;
  }
  return undefined;
}

/**
 * The variables an expression is given (`{ a: 12.5, prices: [1, 2] }`, often values taken by
 * reference from earlier results), checked before anything is evaluated: at most
 * `MAX_VARIABLES`, each named like an identifier that is not a constant or function, each a
 * number (or a number as text) or a list of at most `MAX_LIST_ITEMS` of them. Names are
 * matched without case, as the expression's are. Each problem is an `ExpressionError` whose
 * code says which (`too_many_variables`, `variable_not_numeric`, `variable_too_large`,
 * `invalid_expression` for a name).
 */
export function bindVariables(given: unknown): Variables {
  if (given === undefined || given === null) return {};
  if (typeof given !== "object" || Array.isArray(given)) throw new ExpressionError(`vars is an object of named numbers, not ${shown(given)}`, 0, "variable_not_numeric");
  const entries = Object.entries(given as Record<string, unknown>);
  if (entries.length > MAX_VARIABLES) throw new ExpressionError(`the expression has ${entries.length} variables; at most ${MAX_VARIABLES} are allowed (sum a list in one variable instead)`, 0, "too_many_variables");
  const bound: Record<string, number | number[]> = {};
  for (const [name, value] of entries) {
    if (!NAME.test(name)) throw new ExpressionError(`the variable name ${JSON.stringify(name.slice(0, 40))} is not a name (letters, digits and _, at most 32, not starting with a digit)`, 0);
    if (isReservedName(name)) throw new ExpressionError(`the variable "${name}" has the name of a constant or function; name it otherwise`, 0);
    const key = name.toLowerCase();
    if (Object.hasOwn(bound, key)) throw new ExpressionError(`the variables "${name}" and another differ only in case; names are matched without case`, 0);
    if (Array.isArray(value)) {
      if (value.length > MAX_LIST_ITEMS) throw new ExpressionError(`the variable "${name}" is a list of ${value.length}; at most ${MAX_LIST_ITEMS} items are allowed`, 0, "variable_too_large");
      const numbers: number[] = [];
      for (const [index, item] of value.entries()) {
        const number = numberOf(item);
        if (number === undefined) throw new ExpressionError(`the variable "${name}" is a list whose item ${index + 1} is not a number: it is ${shown(item)}`, 0, "variable_not_numeric");
        numbers.push(number);
      }
      bound[key] = numbers;
      continue;
    }
    const number = numberOf(value);
    if (number === undefined) {
      const hint = typeof value === "object" && value !== null ? " (select the number's field with the reference's path, e.g. $.price)" : "";
      throw new ExpressionError(`the variable "${name}" is not a number: it is ${shown(value)}${hint}`, 0, "variable_not_numeric");
    }
    bound[key] = number;
  }
  return bound;
}
