import { describe, expect, it } from "vitest";
import { isDefinitePath, pathProblem, resolveArgs, selectPath } from "./refs.js";

describe("argument references", () => {
  const users = { users: [{ id: 1, name: "Ada", address: { city: "London" } }, { id: 2, name: "Linus", address: { city: "Helsinki" } }] };

  it("selects the whole result, one field, or a list across items", () => {
    expect(selectPath(users, "$", "s1")).toBe(users);
    expect(selectPath(users, "$.users[0].name", "s1")).toBe("Ada");
    expect(selectPath(users, "$.users[*].address.city", "s1")).toEqual(["London", "Helsinki"]);
    expect(selectPath(users, "$.users[?(@.id == 2)].name", "s1")).toEqual(["Linus"]);
    expect(selectPath(users, "$..city", "s1")).toEqual(["London", "Helsinki"]);
  });

  it("tells definite paths from ones that select many", () => {
    expect(isDefinitePath("$.a.b[0]")).toBe(true);
    expect(isDefinitePath("$.a[*]")).toBe(false);
    expect(isDefinitePath("$.a[0:2]")).toBe(false);
    expect(isDefinitePath("$..a")).toBe(false);
  });

  it("fails with the path and the shape it found when nothing matches", () => {
    expect(() => selectPath(users, "$.people[0]", "s1")).toThrow("the path $.people[0] matched nothing in the result of s1, which is object {users}");
  });

  it("resolves a subtask's arguments from its dependencies' results", () => {
    const args = resolveArgs(
      { id: "s2", label: "x", agent: "execute", dependsOn: ["s1"], args: { city: { ref: "s1", path: "$.users[1].address.city" }, unit: { value: "km" } } },
      () => users,
    );
    expect(args).toEqual({ city: "Helsinki", unit: "km" });
  });

  it("selects a nested field across a list, and the successful outputs of a map report", () => {
    const report = {
      overallStatus: "PARTIAL_SUCCESS",
      results: [
        { status: "success", input: "u1", output: { items: [{ title: "a" }] } },
        { status: "error", input: "u2", error: "timeout" },
        { status: "success", input: "u3", output: { items: [{ title: "c" }, { title: "d" }] } },
      ],
    };
    expect(selectPath(report, "$.results[?(@.status=='success')].output", "s2")).toEqual([{ items: [{ title: "a" }] }, { items: [{ title: "c" }, { title: "d" }] }]);
    expect(selectPath(report, "$.results[?(@.status=='success')].output.items[*].title", "s2")).toEqual(["a", "c", "d"]);
    expect(selectPath(report, "$.results[?(@.status=='error')].input", "s2")).toEqual(["u2"]);
  });

  it("gives an empty list when the listed place exists but is empty, and fails when it does not exist", () => {
    expect(selectPath({ users: [] }, "$.users[*].id", "s1")).toEqual([]);
    expect(selectPath({ results: [{ status: "error" }] }, "$.results[?(@.status=='success')].output", "s1")).toEqual([]);
    expect(() => selectPath(users, "$.user[*].id", "s1")).toThrow("the path $.user[*].id matched nothing in the result of s1, which is object {users}");
    expect(() => selectPath("plain text", "$.users[*].id", "s1")).toThrow("which is string: plain text");
  });

  it("names what is wrong with a path before anything runs", () => {
    expect(pathProblem("$.users[*].id")).toBeUndefined();
    expect(pathProblem("$.results[?(@.status=='success')].output")).toBeUndefined();
    expect(pathProblem("users[0]")).toBe("a JSONPath starts with $");
    expect(pathProblem("$.users[0")).toBe('"]" is missing');
    expect(pathProblem("$.users]")).toBe('"]" does not close anything');
    expect(pathProblem("$.users[?(@.name=='x)]")).toBe("a ' quote is not closed");
    expect(pathProblem("$.users[?(@.id==)]")).toMatch(/^the filter \[\?\(@\.id==\)\] does not parse: /);
  });
});
