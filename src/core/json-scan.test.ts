import { describe, expect, it } from "vitest";
import { BracketSpans, bracketSpan, JsonScanner } from "./json-scan.js";

/** The text of the span that starts at `start`, or its kind when it did not close. */
function spanText(text: string, start = text.search(/[{[]/), limit?: number): string {
  const span = bracketSpan(text, start, limit);
  return span.kind === "closed" ? text.slice(start, span.end + 1) : span.kind;
}

describe("the balanced-JSON scanner", () => {
  it("finds the bracket that closes a nested object or array, after prose and before more", () => {
    expect(spanText('The plan: {"a": {"b": [1, [2, {"c": 3}]]}, "d": []} and then {"e": 1}')).toBe('{"a": {"b": [1, [2, {"c": 3}]]}, "d": []}');
    expect(spanText("[[], [[]], {}] tail")).toBe("[[], [[]], {}]");
    expect(spanText("x {} y")).toBe("{}");
  });

  it("reads braces, brackets, quotes and escapes inside strings as text", () => {
    expect(spanText('{"text": "a } ] { [ inside", "more": 1} after')).toBe('{"text": "a } ] { [ inside", "more": 1}');
    expect(spanText('{"q": "she said \\"}\\" twice", "n": 2}!')).toBe('{"q": "she said \\"}\\" twice", "n": 2}');
    // An escaped backslash ends the escape: the quote after it closes the string.
    expect(spanText('{"path": "C:\\\\", "x": "}"}')).toBe('{"path": "C:\\\\", "x": "}"}');
    expect(JSON.parse(spanText('{"path": "C:\\\\", "x": "}"}'))).toEqual({ path: "C:\\", x: "}" });
    expect(spanText('{"u": "\\u007d"}')).toBe('{"u": "\\u007d"}');
  });

  it("says when the text ends with the bracket open, or a closing bracket does not match", () => {
    expect(bracketSpan('{"a": [1, 2', 0)).toEqual({ kind: "unterminated" });
    expect(bracketSpan('{"a": "never closed }', 0)).toEqual({ kind: "unterminated" });
    expect(bracketSpan("{", 0)).toEqual({ kind: "unterminated" });
    expect(bracketSpan('{"a": [1}', 0)).toEqual({ kind: "mismatched", at: 8 });
    expect(bracketSpan("[}", 0)).toEqual({ kind: "mismatched", at: 1 });
    // Asked about a character that opens nothing.
    expect(bracketSpan("abc", 1)).toEqual({ kind: "mismatched", at: 1 });
    expect(bracketSpan("", 0)).toEqual({ kind: "mismatched", at: 0 });
  });

  it("reads no more than its limit from the opening", () => {
    const text = `{"a": "${"x".repeat(100)}"}`;
    expect(spanText(text, 0, 50)).toBe("unterminated");
    expect(spanText(text, 0, text.length)).toBe(text);
    // A limited scan settles only its own opening: a later one may read further.
    const spans = new BracketSpans(`[${" ".repeat(10)}[1]`, 5);
    expect(spans.spanAt(0)).toEqual({ kind: "unterminated" });
    expect(spans.spanAt(11)).toEqual({ kind: "closed", end: 13 });
  });

  it("answers every opening of a text as a scan from it would", () => {
    const texts = ['{"a": [1, {"b": "]"}], "c": [[]] }', '[[[{"x": 1}', 'x [1, 2} {"y": [3]} "[" ]', '{"s": "\\"[" , "t": [ }', "[[]][[[]"];
    for (const text of texts) {
      const shared = new BracketSpans(text);
      for (let index = 0; index < text.length; index += 1) {
        if (text[index] !== "{" && text[index] !== "[") continue;
        // The shared index first (warm from earlier openings), then a fresh scan.
        expect(shared.spanAt(index), `${text} at ${index}`).toEqual(bracketSpan(text, index));
      }
    }
  });

  it("stays linear on huge input: 200,000 openings asked about one by one reads each character about once", () => {
    const size = 200_000;
    for (const text of ["[".repeat(size), "{".repeat(size), `[${'"'.repeat(size)}`, "[{".repeat(size / 2) + "]"]) {
      let reads = 0;
      const counting = new BracketSpans(text);
      // Count the characters read through the scanner the spans use.
      const original = JsonScanner.prototype.read;
      JsonScanner.prototype.read = function (char: string) {
        reads += 1;
        return original.call(this, char);
      };
      try {
        for (let index = 0; index < text.length; index += 1) if (text[index] === "{" || text[index] === "[") counting.spanAt(index);
      } finally {
        JsonScanner.prototype.read = original;
      }
      expect(reads).toBeLessThanOrEqual(2 * text.length);
    }
  });

  it("follows text fed one character at a time: depth, strings and mismatches", () => {
    const scanner = new JsonScanner();
    const kinds = [...'{"k": ["}", 1]}'].map((char) => scanner.read(char));
    expect(kinds).toEqual(["open", "quote", "string", "unquote", "colon", "other", "open", "quote", "string", "unquote", "other", "other", "other", "close", "close"]);
    expect(scanner.depth).toBe(0);
    expect(scanner.inString).toBe(false);
    expect(scanner.mismatched).toBe(false);
    scanner.read("]");
    expect(scanner.mismatched).toBe(true);
  });
});
