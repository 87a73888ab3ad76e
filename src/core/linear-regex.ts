import { RE2JS } from "re2js";

/**
 * Regular expressions that users supply (an eval's `answer_matches`, a JSON Schema's `pattern`,
 * a permission condition) run on RE2 (re2js, a pure-JavaScript port): matching takes time linear
 * in the text, whatever the pattern, so `^(a+)+$` cannot hold the event loop. RE2 has no
 * lookaround and no backreferences (they cannot run in linear time); a pattern that uses them is
 * refused with that reason rather than run on a backtracking engine.
 */

/** The longest pattern accepted: matching costs the text's length times the pattern's size. */
export const MAX_PATTERN_LENGTH = 4_096;

/** The largest compiled program accepted (RE2's own measure of a pattern's cost). */
export const MAX_PROGRAM_SIZE = 5_000;

/** What a compiled pattern offers: what callers of a RegExp use for a yes/no match. */
export interface LinearRegExp {
  readonly source: string;
  readonly flags: string;
  test(text: string): boolean;
  toString(): string;
}

export class PatternError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PatternError";
  }
}

const FLAG_BITS: Record<string, number> = { i: RE2JS.CASE_INSENSITIVE, m: RE2JS.MULTILINE, s: RE2JS.DOTALL, u: 0, g: 0, y: 0 };

/** Why RE2 refuses a pattern, in terms of the JavaScript syntax the user wrote. */
function explain(message: string): string {
  if (/\(\?[=!<]|Perl syntax/.test(message)) return `${message} (lookahead and lookbehind cannot run in linear time, so they are not supported)`;
  if (/invalid escape sequence: `\\[1-9k]/.test(message)) return `${message} (backreferences cannot run in linear time, so they are not supported)`;
  if (/repeat count/.test(message)) return `${message} (a counted repeat is at most {1000})`;
  return message;
}

/**
 * Compiles a JavaScript regular expression's source (flags `i`, `m`, `s`, `u`) for RE2. Throws a
 * PatternError naming what is wrong: too long, too costly, a syntax error, or a feature RE2 lacks.
 */
export function compileLinearRegExp(source: string, flags = ""): LinearRegExp {
  if (source.length > MAX_PATTERN_LENGTH) throw new PatternError(`the pattern is ${source.length} characters, more than ${MAX_PATTERN_LENGTH}`);
  let bits = 0;
  for (const flag of flags) {
    const bit = FLAG_BITS[flag];
    if (bit === undefined) throw new PatternError(`the flag "${flag}" is not supported (i, m, s and u are)`);
    bits |= bit;
  }
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(RE2JS.translateRegExp(source), bits);
  } catch (error) {
    throw new PatternError(explain((error as Error).message));
  }
  const size = compiled.programSize();
  if (size > MAX_PROGRAM_SIZE) throw new PatternError(`the pattern compiles to ${size} instructions, more than ${MAX_PROGRAM_SIZE} (repeats multiply its size)`);
  // toString: ajv keys its compiled patterns by it.
  return { source, flags, test: (text: string) => compiled.test(text), toString: () => `/${source}/${flags}` };
}

/** Why a pattern cannot be used, or undefined when it can. */
export function patternProblem(source: string, flags = ""): string | undefined {
  try {
    compileLinearRegExp(source, flags);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}
