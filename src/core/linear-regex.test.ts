import { describe, expect, it } from "vitest";
import { compileLinearRegExp, patternProblem } from "./linear-regex.js";

describe("user-supplied patterns on RE2", () => {
  it("matches as JavaScript does for the syntax both share", () => {
    expect(compileLinearRegExp("\\b42\\b").test("the answer is 42.")).toBe(true);
    expect(compileLinearRegExp("^\\d{3}-\\d{4}$").test("55-1234")).toBe(false);
    expect(compileLinearRegExp("(?<year>\\d{4})-\\d{2}").test("2024-05")).toBe(true);
    expect(compileLinearRegExp("HELLO", "i").test("hello")).toBe(true);
    expect(compileLinearRegExp("^\\p{L}+$", "u").test("héllo")).toBe(true);
    expect(compileLinearRegExp("\\u0041").test("A")).toBe(true);
  });

  it("answers a pattern that backtracks for ever on V8 at once (the eval case that took 70 s on a 93-character answer)", () => {
    const pattern = compileLinearRegExp("^([\\s\\S]+)+\u0000$");
    expect(pattern.test("x".repeat(100_000))).toBe(false);
    expect(compileLinearRegExp("^(a+)+$").test(`${"a".repeat(50_000)}!`)).toBe(false);
  });

  it("refuses what cannot run in linear time, and patterns too long or too costly, saying why", () => {
    expect(patternProblem("(?=a)a")).toMatch(/lookahead and lookbehind cannot run in linear time/);
    expect(patternProblem("(a)\\1")).toMatch(/backreferences cannot run in linear time/);
    expect(patternProblem("(")).toMatch(/missing closing \)/);
    expect(patternProblem("a".repeat(5_000))).toMatch(/more than 4096/);
    expect(patternProblem("((a{100}){100})")).toMatch(/repeat|instructions/);
    expect(patternProblem("a", "g")).toBeUndefined();
    expect(patternProblem("a", "x")).toMatch(/flag "x" is not supported/);
  });
});
