import { describe, expect, it } from "vitest";
import { evaluateExpression } from "../../tools/math/expression.js";
import { combination, combinationNoun, computations, continuation, expandOperands, toExpression } from "./arithmetic.js";

/** A template evaluated the way the worker does it: operands put in, then the calculator's parser. */
function evaluate(template: string, operands: Record<string, number>): number {
  return evaluateExpression(template.replace(/\{([a-z])\}/g, (_, name: string) => String(operands[name])));
}

describe("arithmetic in words", () => {
  it("turns a computation in words into an expression the calculator evaluates", () => {
    const cases: Array<[string, number]> = [
      ["compute 15% of 80 plus 25% of 40", 22],
      ["sqrt(144)+3 cubed", 39],
      ["what is 7 times 6?", 42],
      ["add 2 and 3", 5],
      ["add 2 to 40", 42],
      ["multiply 6 by 7", 42],
      ["divide 10 by 4", 2.5],
      ["subtract 3 from 10", 7],
      ["the average of 4 and 8", 6],
      ["3 x 4", 12],
      ["twice 21", 42],
      ["half of 9", 4.5],
      ["the sum of 2, 3 and 4", 9],
      ["add up 1, 2, 3 and 4", 10],
      ["the product of 2, 3 and 7", 42],
      ["the largest of 3, 9 and 4", 9],
      ["seven times six", 42],
      ["twenty-one plus a hundred", 121],
    ];
    for (const [words, value] of cases) expect([words, evaluateExpression(toExpression(words) ?? "")]).toEqual([words, value]);
  });

  it("refuses what is not arithmetic, a lone number, and an operator with nothing on its left", () => {
    expect(toExpression("write a poem about 3 cats")).toBeUndefined();
    expect(toExpression("compute 50")).toBeUndefined();
    expect(toExpression("×2")).toBeUndefined();
    expect(toExpression("/ 4")).toBeUndefined();
  });

  it("reads a continuation of the previous result as a template over {a}", () => {
    const cases: Array<[string, number]> = [
      ["×2", 78],
      ["* 2", 78],
      ["times 2", 78],
      ["multiply it by 2", 78],
      ["multiply the result by 2", 78],
      ["double it", 78],
      ["halve it", 19.5],
      ["square it", 1521],
      ["cube it", 59319],
      ["divide it by 3", 13],
      ["add 3 to it", 42],
      ["add 3", 42],
      ["subtract 9 from it", 30],
      ["minus 9", 30],
      ["increase it by 10%", 42.9],
      ["reduce it by 50%", 19.5],
      ["take the square root of it", Number(Math.sqrt(39).toPrecision(15))],
      ["round it to 1 decimal place", 39],
      ["it squared plus 1", 1522],
      ["take 50% of it", 19.5],
      ["x2", 78],
      ["times two", 78],
      ["multiply it by three", 117],
    ];
    for (const [words, value] of cases) {
      const chained = continuation(words);
      expect([words, chained?.operands]).toEqual([words, { kind: "previous" }]);
      expect([words, evaluate(chained?.expression ?? "", { a: 39 })]).toEqual([words, value]);
    }
    expect(continuation("compute 2+2")).toBeUndefined();
    expect(continuation("write it to a.txt")).toBeUndefined();
  });

  it("reads a combination of earlier results, over all of them or the last two", () => {
    const over = (words: string, operands: number[]): number => {
      const chained = combination(words);
      if (!chained) throw new Error(`no combination in "${words}"`);
      const names = Object.fromEntries(operands.map((value, index) => [String.fromCharCode(97 + index), value]));
      return evaluate(expandOperands(chained, operands.length), names);
    };
    expect(over("add them", [12, 10])).toBe(22);
    expect(over("add them together", [1, 2, 3])).toBe(6);
    expect(over("the total", [12, 10])).toBe(22);
    expect(over("the sum of the two", [12, 10])).toBe(22);
    expect(over("multiply them", [6, 7])).toBe(42);
    expect(over("the average", [4, 8, 12])).toBe(8);
    expect(over("the larger", [7, 8])).toBe(8);
    expect(over("the smallest of them", [7, 8, 3])).toBe(3);
    expect(over("the difference", [100, 36])).toBe(64);
    expect(over("subtract the first from the second", [36, 100])).toBe(64);
    expect(over("divide the first by the second", [1024, 8])).toBe(128);
    expect(over("divide the second by the first", [8, 1024])).toBe(128);
    expect(over("express the first as a percentage of the second", [25, 200])).toBe(12.5);
    expect(combination("add salt")).toBeUndefined();
    expect(combinationNoun("save the total to total.txt")?.operands).toEqual({ kind: "all", join: " + " });
    expect(combinationNoun("save it to total.txt")).toBeUndefined();
  });

  it("splits a clause that lists several computations, and only such a clause", () => {
    expect(computations("compute 2^10 and 3^5")).toEqual([
      { part: "2^10", expression: "2^10" },
      { part: "3^5", expression: "3^5" },
    ]);
    expect(computations("what are 15% of 2,340, 10% of 80 and 2 plus 2")).toEqual([
      { part: "15% of 2,340", expression: "15% of 2,340" },
      { part: "10% of 80", expression: "10% of 80" },
      { part: "2 plus 2", expression: "2 + 2" },
    ]);
    expect(computations("the sum of 2 and 3")).toBeUndefined();
    expect(computations("compute 2^10 and the meaning of life")).toBeUndefined();
  });
});
