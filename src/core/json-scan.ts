/**
 * The one scanner of JSON's structure in text: where a `{…}` or `[…]` that starts somewhere in a
 * model's answer, a task or a tool result ends, with strings and their escapes respected (a `}`
 * inside `"…"` closes nothing). It reads each character once and never parses: callers parse the
 * span it finds (json-text.ts, streamed-elements.ts, the offline model's clause splitter, the
 * obedient test model).
 */

/** What one character was to the structure. */
export type JsonChar =
  /** `{` or `[` outside a string. */
  | "open"
  /** `}` or `]` outside a string, whether or not it matched its opening (see `mismatched`). */
  | "close"
  /** The `"` that starts a string. */
  | "quote"
  /** The `"` that ends a string. */
  | "unquote"
  /** `:` outside a string. */
  | "colon"
  /** Any character inside a string, its escapes included. */
  | "string"
  /** Anything else outside a string (prose, numbers, commas, spaces). */
  | "other";

/**
 * A scanner fed one character at a time (so it can follow text that streams in): it keeps the
 * brackets open, whether it is inside a string and after a backslash there, and whether a
 * closing bracket has not matched its opening.
 */
export class JsonScanner {
  readonly #open: string[] = [];
  #inString = false;
  #escaped = false;
  #mismatched = false;

  /** How many brackets are open. */
  get depth(): number {
    return this.#open.length;
  }

  get inString(): boolean {
    return this.#inString;
  }

  /** Whether a closing bracket did not match the last one open (or closed nothing). It stays set. */
  get mismatched(): boolean {
    return this.#mismatched;
  }

  /** Reads one character (a UTF-16 code unit as `text[index]` gives it). */
  read(char: string): JsonChar {
    if (this.#inString) {
      if (this.#escaped) this.#escaped = false;
      else if (char === "\\") this.#escaped = true;
      else if (char === '"') {
        this.#inString = false;
        return "unquote";
      }
      return "string";
    }
    switch (char) {
      case '"':
        this.#inString = true;
        return "quote";
      case "{":
      case "[":
        this.#open.push(char === "{" ? "}" : "]");
        return "open";
      case "}":
      case "]":
        if (this.#open.pop() !== char) this.#mismatched = true;
        return "close";
      case ":":
        return "colon";
      default:
        return "other";
    }
  }
}

/** How a bracket's span ended: closed at `end` (the index of its closing bracket), or not. */
export type BracketSpan =
  | { kind: "closed"; end: number }
  /** A closing bracket that does not match, at `at` (or `start` was not an opening bracket). */
  | { kind: "mismatched"; at: number }
  /** The text (or the characters `limit` allows) ended with the bracket still open. */
  | { kind: "unterminated" };

/**
 * Where the `{` or `[` at `start` closes: the first point its scan is back at depth 0, with
 * every bracket inside matched. At most `limit` characters are read from `start`.
 */
export function bracketSpan(text: string, start: number, limit = Number.POSITIVE_INFINITY): BracketSpan {
  return new BracketSpans(text, limit).spanAt(start);
}

/**
 * The spans of many brackets of one text, for a caller that asks about each opening in turn (a
 * scan that fails at the first bracket would otherwise be repeated from every bracket after it,
 * quadratic on `[[[[…`). One scan from an opening answers for every opening it passes outside a
 * string: the ones it sees closed, and the ones still open when it ends (their own scans would
 * end the same way), so each character is read about once.
 */
export class BracketSpans {
  readonly #text: string;
  readonly #limit: number;
  readonly #known = new Map<number, BracketSpan>();

  constructor(text: string, limit = Number.POSITIVE_INFINITY) {
    this.#text = text;
    this.#limit = limit;
  }

  spanAt(start: number): BracketSpan {
    const known = this.#known.get(start);
    if (known) return known;
    const text = this.#text;
    const opening = text[start];
    if (opening !== "{" && opening !== "[") return { kind: "mismatched", at: start };
    const scanner = new JsonScanner();
    // The openings this scan passed, innermost last, and the spans it settled.
    const open: number[] = [];
    const settled = new Map<number, BracketSpan>();
    const stop = Math.min(text.length, start + this.#limit);
    let result: BracketSpan | undefined;
    for (let index = start; index < stop && result === undefined; index += 1) {
      const read = scanner.read(text[index] as string);
      if (read === "open") open.push(index);
      else if (read === "close") {
        const opened = open.pop() as number;
        if (scanner.mismatched) {
          // This closing bracket matches none of the openings still open: their scans all stop here.
          result = { kind: "mismatched", at: index };
          settled.set(opened, result);
          for (const inner of open) settled.set(inner, result);
        } else {
          settled.set(opened, { kind: "closed", end: index });
          if (scanner.depth === 0) result = { kind: "closed", end: index };
        }
      }
    }
    if (result === undefined) {
      result = { kind: "unterminated" };
      // Within a limit, a later opening could read further than this scan did: only the text's end settles them.
      if (stop === text.length) for (const inner of open) settled.set(inner, result);
      else settled.set(start, result);
    }
    for (const [at, span] of settled) this.#known.set(at, span);
    return result;
  }
}
