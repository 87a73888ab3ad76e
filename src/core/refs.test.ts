import { describe, expect, it } from "vitest";
import { isDefinitePath, resolveArgs, selectPath } from "./refs.js";

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
});
