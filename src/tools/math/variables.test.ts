import { describe, expect, it } from "vitest";
import { createBuiltinRegistry } from "../builtin/index.js";
import { fitToolArgs } from "../arg-fit.js";
import { ExpressionError, evaluateExpression, MAX_LIST_ITEMS } from "./expression.js";
import { bindVariables, MAX_VARIABLES } from "./variables.js";

function problem(run: () => unknown): { code: string; message: string } | undefined {
  try {
    run();
    return undefined;
  } catch (error) {
    return error instanceof ExpressionError ? { code: error.code, message: error.message } : { code: "other", message: String(error) };
  }
}

describe("an expression's variables", () => {
  it("binds numbers, numbers as text and lists (spread into a function), names matched without case", () => {
    const vars = bindVariables({ Price: 12.5, qty: "4", prices: [1, "2.5", 3] });
    expect(evaluateExpression("price * QTY", vars)).toBe(50);
    expect(evaluateExpression("sum(prices) + max(prices, 10)", vars)).toBe(16.5);
    expect(evaluateExpression("avg(prices)", vars)).toBeCloseTo(6.5 / 3, 12);
  });

  it("refuses what is not a number, too many variables, too long a list, and names that mean something else, each with its code", () => {
    expect(problem(() => evaluateExpression("a + c", bindVariables({ a: 1, b: 2 })))).toMatchObject({ code: "unknown_variable", message: expect.stringContaining('unknown variable "c"') });
    expect(problem(() => bindVariables({ a: "twelve" }))).toMatchObject({ code: "variable_not_numeric", message: 'the variable "a" is not a number: it is the text "twelve"' });
    expect(problem(() => bindVariables({ a: { price: 1 } }))).toMatchObject({ code: "variable_not_numeric", message: expect.stringContaining("$.price") });
    expect(problem(() => bindVariables({ a: [1, null] }))).toMatchObject({ code: "variable_not_numeric", message: expect.stringContaining("item 2") });
    expect(problem(() => bindVariables({ a: Number.NaN }))).toMatchObject({ code: "variable_not_numeric" });
    expect(problem(() => evaluateExpression("a * 2", bindVariables({ a: [1, 2] })))).toMatchObject({ code: "variable_not_numeric", message: expect.stringContaining("sum(a)") });
    const many = Object.fromEntries(Array.from({ length: MAX_VARIABLES + 1 }, (_, index) => [`v${index}`, index]));
    expect(problem(() => bindVariables(many))).toMatchObject({ code: "too_many_variables" });
    expect(problem(() => bindVariables({ a: new Array(MAX_LIST_ITEMS + 1).fill(1) }))).toMatchObject({ code: "variable_too_large" });
    expect(problem(() => evaluateExpression("sum(a, b)", bindVariables({ a: new Array(MAX_LIST_ITEMS).fill(1), b: [1] })))).toMatchObject({ code: "variable_too_large" });
    expect(problem(() => bindVariables({ e: 1 }))).toMatchObject({ code: "invalid_expression", message: expect.stringContaining("constant or function") });
    expect(problem(() => bindVariables({ "a b": 1 }))).toMatchObject({ code: "invalid_expression" });
    expect(problem(() => bindVariables({ a: 1, A: 2 }))).toMatchObject({ code: "invalid_expression", message: expect.stringContaining("case") });
    expect(problem(() => bindVariables({ a: "9".repeat(65) }))).toMatchObject({ code: "variable_not_numeric" });
    expect(problem(() => evaluateExpression(`${"a + ".repeat(600)}a`, bindVariables({ a: 1 })))).toMatchObject({ code: "invalid_expression", message: expect.stringContaining("longer than 2000") });
  });

  it("through the calculator tool: a direct step's other arguments become its variables, and each problem is the call's error code", async () => {
    const registry = createBuiltinRegistry();
    const parameters = registry.spec("calculator").function.parameters as Record<string, unknown>;
    const fitted = fitToolArgs(parameters, { expression: "a + b", a: 1, b: "2" });
    expect(fitted.args).toEqual({ expression: "a + b", vars: { a: 1, b: "2" } });
    expect(fitted.notes).toContain("vars: a, b bound as the expression's variables");
    const call = (args: Record<string, unknown>) => registry.call("calculator", fitToolArgs(parameters, args).args, { workspace: "." });
    expect(await call({ expression: "a + b", a: 1, b: "2" })).toMatchObject({ ok: true, value: 3 });
    expect(await call({ expression: "a + c", a: 1 })).toMatchObject({ ok: false, error: { code: "unknown_variable" } });
    expect(await call({ expression: "a", a: "n/a" })).toMatchObject({ ok: false, error: { code: "variable_not_numeric" } });
    expect(await call({ expression: "1", ...Object.fromEntries(Array.from({ length: 40 }, (_, index) => [`v${index}`, index])) })).toMatchObject({ ok: false, error: { code: "too_many_variables" } });
    // A tool without named variables keeps its arguments as they are (its validation refuses what it does not take).
    const write = registry.spec("file_write").function.parameters as Record<string, unknown>;
    expect(fitToolArgs(write, { path: "a.txt", content: "x", stray: 1 }).args).toMatchObject({ stray: 1 });
  });
});
