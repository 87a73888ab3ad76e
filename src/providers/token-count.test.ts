import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { countTokens } from "gpt-tokenizer/encoding/cl100k_base";
import { describe, expect, it } from "vitest";
import { boundedPieces, countTextTokens, MAX_PIECE_CHARS } from "./token-count.js";

// Ordinary prose: a page of the docs (the README was this sample until its reference moved to docs/).
const README = readFileSync(path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../docs/runs.md"), "utf8");

describe("token counting, bounded for any input", () => {
  it("hands the tokenizer pieces of at most 128 characters, even for a 5,000-character run of one letter", async () => {
    for (const text of ["a".repeat(5_000), "!".repeat(5_000), " ".repeat(5_000), "漢".repeat(5_000), "😀".repeat(2_500), `${"x".repeat(300)} ${"y".repeat(300)}`]) {
      const pieces = boundedPieces(text);
      expect(pieces.join("")).toBe(text);
      expect(Math.max(...pieces.map((piece) => piece.length))).toBeLessThanOrEqual(MAX_PIECE_CHARS);
      // No surrogate pair is cut in two.
      for (const piece of pieces) expect(piece).toBe(Buffer.from(piece, "utf8").toString("utf8"));
    }
    expect(boundedPieces("a".repeat(5_000))).toHaveLength(40);
    // 39 pieces of 128 a's (16 tokens each) and one of 8 (1 token): what the tokenizer says of the whole run.
    expect(await countTextTokens("a".repeat(5_000))).toBe(625);
  });

  it("counts ordinary text exactly as the tokenizer does whole", async () => {
    const sample = README.slice(0, 20_000);
    expect(boundedPieces(sample).length).toBeGreaterThan(100);
    expect(await countTextTokens(sample)).toBe(countTokens(sample));
    const prose = "The critic scores accuracy, completeness, relevance and logic.\n\n  Indented  text,\twith tabs and 12345 numbers; don't stop.";
    expect(await countTextTokens(prose.repeat(40))).toBe(countTokens(prose.repeat(40)));
  });

  it("moves the count of a long unbroken run by at most a token per cut (about 2% here)", async () => {
    let seed = 7;
    const next = (): number => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648);
    const random = (length: number, alphabet: string): string => Array.from({ length }, () => alphabet[Math.floor(next() / 65_536) % alphabet.length]).join("");
    for (const text of [random(5_000, "abcdefghijklmnopqrstuvwxyz"), random(5_000, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")]) {
      const whole = countTokens(text);
      const bounded = await countTextTokens(text);
      const cuts = boundedPieces(text).length - 1;
      expect(bounded).toBeGreaterThanOrEqual(whole);
      expect(bounded - whole).toBeLessThanOrEqual(cuts);
      expect((bounded - whole) / whole).toBeLessThan(0.025);
    }
  });
});
