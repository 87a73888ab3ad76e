import { describe, expect, it } from "vitest";
import { JsonPathLimitError, JsonPathSyntaxError, pathProblem, queryJsonPath, selectPath } from "./json-path.js";

describe("JSONPath, read in one pass and evaluated within a budget", () => {
  const store = {
    book: [
      { category: "reference", title: "Sayings", price: 8.95 },
      { category: "fiction", title: "Sword", price: 12.99, isbn: "0-553" },
      { category: "fiction", title: "Moby", price: 8.99, isbn: "0-395" },
    ],
    bicycle: { color: "red", price: 19.95 },
  };

  it("selects as jsonpath-plus did: names, indexes, wildcards, unions, slices, descent, filters, expressions", () => {
    expect(queryJsonPath(store, "$.book[*].title")).toEqual(["Sayings", "Sword", "Moby"]);
    expect(queryJsonPath(store, "$..price")).toEqual([8.95, 12.99, 8.99, 19.95]);
    expect(queryJsonPath(store, "$.book[0,2].title")).toEqual(["Sayings", "Moby"]);
    expect(queryJsonPath(store, "$.book[1:].title")).toEqual(["Sword", "Moby"]);
    expect(queryJsonPath(store, "$.book[-1:].title")).toEqual(["Moby"]);
    expect(queryJsonPath(store, "$.book[?(@.isbn && @.price < 10)].title")).toEqual(["Moby"]);
    expect(queryJsonPath(store, "$.book[?(@.category == 'fiction')].title")).toEqual(["Sword", "Moby"]);
    expect(queryJsonPath(store, "$.book[(@.length-1)].title")).toEqual(["Moby"]);
    expect(queryJsonPath(store, "$['bicycle'][\"color\"]")).toEqual(["red"]);
    expect(queryJsonPath(store, "$.book.length")).toEqual([3]);
    expect(queryJsonPath({ "a.b": 1, list: [[1, 2]] }, "$['a.b']")).toEqual([1]);
  });

  it("reads a long dotted path in linear time (jsonpath-plus: 160,000 characters took 13 s, quadratic)", () => {
    const path = `$${".a".repeat(500_000)}`;
    let nested: unknown = "end";
    for (let depth = 0; depth < 500_000; depth += 1) nested = { a: nested };
    expect(queryJsonPath(nested, path)).toEqual(["end"]);
  });

  it("stops a query whose recursive descents multiply past its budget, with an error (jsonpath-plus: 15 s for 1.3 million matches)", () => {
    let deep: Record<string, unknown> = {};
    const root = deep;
    for (let depth = 0; depth < 400; depth += 1) {
      deep.a = {};
      deep = deep.a as Record<string, unknown>;
    }
    expect(() => queryJsonPath(root, "$..a..a..a..a")).toThrow(JsonPathLimitError);
    expect(() => selectPath(root, "$..a..a..a..a", "s1")).toThrow(/the path into s1: the JSONPath \$\.\.a\.\.a\.\.a\.\.a needs more than 500,000 steps/);
  });

  it("lets a filter read and compare only: calls, regular expressions and assignments are refused before anything runs", () => {
    // On jsonpath-plus's safe eval, `match` ran a backtracking RegExp and `repeat` built any string.
    expect(pathProblem("$[?(@.name.match(/^(a+)+$/))]")).toMatch(/calls are not allowed|regular expressions are not allowed|does not parse/);
    expect(pathProblem("$[?(@.name.repeat(1e9))]")).toMatch(/calls are not allowed/);
    expect(pathProblem("$[?(x = 1)]")).toMatch(/cannot run|does not parse/);
    expect(pathProblem("$[?(@.constructor)]")).toBeUndefined();
    // Reads only own fields: nothing of the prototype.
    expect(queryJsonPath([{ a: 1 }], "$[?(@.constructor)]")).toEqual([]);
    expect(() => queryJsonPath([], "$[?(@.a.b(")).toThrow(JsonPathSyntaxError);
  });

  it("bounds the strings a filter can build", () => {
    const big = "x".repeat(40_000);
    expect(() => queryJsonPath([{ s: big }], "$[?(@.s + @.s + @.s == '')]")).toThrow(/a filter built a string of more than/);
  });
});
