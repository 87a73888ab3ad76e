import { describe, expect, it } from "vitest";
import { ExpressionError, evaluateExpression } from "./expression.js";

describe("evaluateExpression", () => {
  it.each([
    ["2 + 3 * 4", 14],
    ["(2 + 3) * 4", 20],
    ["2 ^ 3 ^ 2", 512],
    ["2 ** 10", 1024],
    ["-2 ^ 2", -4],
    ["17% of 2,340", 397.8],
    ["17 % * 2340", 397.8],
    ["2,340,000 / 1,000", 2340],
    ["0.1 + 0.2", 0.3],
    ["10 mod 4", 2],
    ["5!", 120],
    ["sqrt(144) + 10", 22],
    ["max(1,234)", 234],
    ["round(10 / 3, 2)", 3.33],
    ["avg(1, 2, 3, 4)", 2.5],
    ["log(1000)", 3],
    ["log(8, 2)", 3],
    ["2 × 3 ÷ 4 − 1", 0.5],
    ["pi * 2", 6.28318530717959],
    [".5e1", 5],
  ])("%s = %s", (expression, expected) => {
    expect(evaluateExpression(expression)).toBe(expected);
  });

  it.each([
    ["10 / 0", /division by zero/],
    ["1 +", /unexpected the end of the expression/],
    ["(1 + 2", /expected "\)"/],
    ["2 $ 3", /unexpected character "\$"/],
    ["", /empty/],
    ["sqrt", /is a function/],
    ["max()", /takes 1 to 10000 argument/],
    ["1e400", /not a finite number/],
    ["(-1)!", /whole number/],
  ])("rejects %j", (expression, message) => {
    expect(() => evaluateExpression(expression)).toThrow(ExpressionError);
    expect(() => evaluateExpression(expression)).toThrow(message);
  });

  it("gives no access to JavaScript objects, prototypes or globals", () => {
    for (const attempt of ["constructor", "__proto__", "toString()", "process", "globalThis", "this", "valueOf(1)", "hasOwnProperty(1)"]) {
      expect(() => evaluateExpression(attempt)).toThrow(/unknown (name|function)|unexpected/);
    }
  });

  it("refuses pathological input instead of overflowing the stack", () => {
    expect(() => evaluateExpression(`${"(".repeat(200)}1${")".repeat(200)}`)).toThrow(/nested too deeply/);
    expect(() => evaluateExpression("1+".repeat(1_500))).toThrow(/longer than/);
  });
});
