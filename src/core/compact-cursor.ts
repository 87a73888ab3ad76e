/**
 * The cursor the compact plan wire (plan-compact.ts) reads a line with: identifiers, JSON
 * literals (their extent found by counting brackets outside strings, then parsed), references
 * with their JSONPath, each in one pass.
 */

/** How deep a JSON literal on a line may nest. */
export const MAX_LITERAL_DEPTH = 32;

/** What is wrong with a line, as the repair round says it. */
export class LineError extends Error {}

export function isIdentStart(char: string | undefined): boolean {
  return char !== undefined && ((char >= "a" && char <= "z") || (char >= "A" && char <= "Z") || char === "_");
}

export function isIdentChar(char: string | undefined): boolean {
  return char !== undefined && (isIdentStart(char) || (char >= "0" && char <= "9") || char === "-" || char === ".");
}

export function isSpace(char: string | undefined): boolean {
  return char === " " || char === "\t" || char === "\r";
}

/** A cursor over one line of a compact plan: each character looked at a bounded number of times. */
export class Cursor {
  position = 0;
  constructor(readonly text: string) {}

  peek(offset = 0): string | undefined {
    return this.text[this.position + offset];
  }

  skipSpace(): void {
    while (isSpace(this.peek())) this.position += 1;
  }

  done(): boolean {
    this.skipSpace();
    return this.position >= this.text.length;
  }

  /** What is left of the line, for error messages. */
  near(): string {
    const rest = this.text.slice(this.position, this.position + 30);
    return rest === "" ? "the end of the line" : `"${rest}${this.text.length - this.position > 30 ? "…" : ""}"`;
  }

  fail(message: string): never {
    throw new LineError(`${message} (at ${this.near()})`);
  }

  expect(char: string, what: string): void {
    this.skipSpace();
    if (this.peek() !== char) this.fail(`expected ${what}`);
    this.position += 1;
  }

  /** An identifier (letters, digits, `_`, `-`, `.`; starting with a letter or `_`), or undefined. */
  identifier(): string | undefined {
    this.skipSpace();
    if (!isIdentStart(this.peek())) return undefined;
    const start = this.position;
    while (isIdentChar(this.peek())) this.position += 1;
    return this.text.slice(start, this.position);
  }

  /** A JSON string literal at the cursor, decoded. */
  string(): string {
    this.skipSpace();
    if (this.peek() !== '"') this.fail('expected text in double quotes');
    const start = this.position;
    this.position += 1;
    for (;;) {
      const char = this.peek();
      if (char === undefined) this.fail("a string is not closed with \"");
      this.position += 1;
      if (char === "\\") this.position += 1;
      else if (char === '"') break;
    }
    try {
      return JSON.parse(this.text.slice(start, this.position)) as string;
    } catch {
      this.position = start;
      return this.fail("a string is not valid JSON text (escape \" and \\ with \\)");
    }
  }

  /** A JSON literal at the cursor: a string, number, true, false, null, list or object. */
  literal(): unknown {
    this.skipSpace();
    const char = this.peek();
    if (char === '"') return this.string();
    if (char === "[" || char === "{") return this.structure();
    if (char === "-" || (char !== undefined && char >= "0" && char <= "9")) {
      const start = this.position;
      while (/[-+0-9.eE]/.test(this.peek() ?? " ")) this.position += 1;
      const text = this.text.slice(start, this.position);
      let value: number;
      try {
        value = JSON.parse(text) as number;
      } catch {
        this.position = start;
        return this.fail("a number is not valid");
      }
      this.endOfValue(start);
      return value;
    }
    for (const [word, value] of [["true", true], ["false", false], ["null", null]] as const) {
      if (this.text.startsWith(word, this.position) && !isIdentChar(this.peek(word.length))) {
        const start = this.position;
        this.position += word.length;
        this.endOfValue(start);
        return value;
      }
    }
    if (isIdentStart(char)) this.fail('a text value is written in double quotes ("widget")');
    return this.fail('expected a value: JSON ("text", 12, true, [1, 2], {"a": 1}) or a result ($s1, $s1.field)');
  }

  /** After a bare value (a number, true): the end of the argument, or text that shows the value was meant as text. */
  endOfValue(start: number): void {
    const next = this.peek();
    if (next === undefined || isSpace(next) || next === "," || next === ")" || next === "]" || next === "}") return;
    this.position = start;
    this.fail('a text value is written in double quotes ("17% of 2340")');
  }

  /** A JSON list or object: its extent found by counting brackets outside strings, then parsed. */
  structure(): unknown {
    const start = this.position;
    let depth = 0;
    let inString = false;
    let reference = false;
    for (; this.position < this.text.length; this.position += 1) {
      const char = this.text[this.position] as string;
      if (inString) {
        if (char === "\\") this.position += 1;
        else if (char === '"') inString = false;
        continue;
      }
      if (char === '"') inString = true;
      else if (char === "$") reference = true;
      else if (char === "[" || char === "{") {
        depth += 1;
        if (depth > MAX_LITERAL_DEPTH) this.fail(`a value is nested deeper than ${MAX_LITERAL_DEPTH} levels`);
      } else if (char === "]" || char === "}") {
        depth -= 1;
        if (depth === 0) {
          this.position += 1;
          break;
        }
      }
    }
    if (depth !== 0) {
      this.position = start;
      this.fail("a list or object is not closed");
    }
    try {
      return JSON.parse(this.text.slice(start, this.position)) as unknown;
    } catch {
      this.position = start;
      return this.fail(reference ? "a list or object holds only JSON values; give each result its own argument ($s1, $s2)" : "a list or object is not valid JSON");
    }
  }

  /** A reference `$id` with the path after it, up to a space, comma or `)` outside brackets and quotes. */
  reference(): { ref: string; path: string } {
    this.expect("$", "$");
    const id = this.identifier();
    if (id === undefined) this.fail("$ is followed by a step id ($s1)");
    // An id ends before a dot: `$s1.price` is the step s1 and the path .price.
    const dot = id.indexOf(".");
    const ref = dot >= 0 ? id.slice(0, dot) : id;
    let path = dot >= 0 ? id.slice(dot) : "";
    let depth = 0;
    let quote: string | undefined;
    for (; this.position < this.text.length; this.position += 1) {
      const char = this.text[this.position] as string;
      if (quote !== undefined) {
        if (char === quote) quote = undefined;
      } else if (char === "'" || char === '"') {
        if (depth === 0) break;
        quote = char;
      } else if (char === "[") depth += 1;
      else if (char === "]") depth -= 1;
      else if (depth <= 0 && (char === "," || char === ")" || isSpace(char))) break;
      path += char;
    }
    return { ref, path: `$${path}` };
  }
}

