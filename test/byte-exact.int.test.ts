import { describe, expect, it } from "vitest";
import { byteExactCases, byteExactContent, runByteExactCase } from "../bench/byte-exact.js";
import { CLI, tempDir } from "./helpers.js";

describe("data flows byte-exact through the CLI (the matrix of the benchmark)", () => {
  it("makes the files it promises: exact sizes, trailing whitespace, CRLF, multibyte and control characters; binary that is not UTF-8", () => {
    for (const bytes of [1, 5 * 1024, 8_900]) {
      const text = byteExactContent(bytes, false);
      expect(text.byteLength).toBe(bytes);
      expect(/\s$/.test(text.toString("utf8"))).toBe(true);
      expect(Buffer.from(text.toString("utf8"), "utf8").equals(text)).toBe(true);
    }
    const sample = byteExactContent(8_900, false).toString("utf8");
    for (const kind of ["\r\n", "  \n", "ü", "中", "😀", "\u0000", "\u001b"]) expect(sample).toContain(kind);
    const binary = byteExactContent(4_096, true);
    expect(Buffer.from(binary.toString("utf8"), "utf8").equals(binary)).toBe(false);
  });

  // Each case is one CLI run on the offline model in its own folders; two run at a time.
  const cases = byteExactCases();
  it(`holds for all ${cases.length} cases: cmp finds the copy identical, text and binary alike`, async () => {
    const outcomes = [];
    for (let index = 0; index < cases.length; index += 2) {
      outcomes.push(...(await Promise.all(cases.slice(index, index + 2).map((entry) => runByteExactCase(entry, CLI, tempDir("troupe-exact-"))))));
    }
    expect(outcomes.filter((outcome) => !outcome.held).map((outcome) => `${outcome.name}: ${outcome.detail}`)).toEqual([]);
  });
});
