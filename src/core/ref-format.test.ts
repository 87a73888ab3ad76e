import { describe, expect, it } from "vitest";
import { type PlannedSubtask, validatePlan } from "./plan.js";
import { resolveArgs } from "./refs.js";
import { FORMAT_MAX_BYTES, formatProblem, formatReferenced } from "./ref-format.js";

describe("a reference's format", () => {
  it("makes a list a line per item, {} the item and {field} its field; a single value is one line", () => {
    expect(formatReferenced([{ item: "widget", price: 12.5 }, { item: "gizmo", price: 3.1 }], "{item}: {price}", "s1")).toBe("widget: 12.5\ngizmo: 3.1");
    expect(formatReferenced([1, "two", null], "- {}", "s1")).toBe("- 1\n- two\n- null");
    expect(formatReferenced(397.8, "{}", "s1")).toBe("397.8");
    expect(formatReferenced([], "{}", "s1")).toBe("");
    const subtask = { id: "s2", label: "save", agent: "execute", dependsOn: ["s1"], args: { content: { ref: "s1", path: "$.results[*].output", format: "{}" } } };
    expect(resolveArgs(subtask, () => ({ results: [{ output: 1 }, { output: 2 }] }))).toEqual({ content: "1\n2" });
  });

  it("refuses a template without placeholders, with stray braces or too many placeholders, an item without the field, and text past its bound", () => {
    expect(formatProblem("plain")).toMatch(/no placeholder/);
    expect(formatProblem("{item} }")).toMatch(/not a placeholder/);
    expect(formatProblem("{a-b}")).toMatch(/no placeholder/);
    expect(formatProblem("{}".repeat(21))).toMatch(/21 placeholders/);
    expect(() => formatReferenced([{ item: "a" }], "{item}: {price}", "s1")).toThrow(/item 1 has no field "price"/);
    expect(() => formatReferenced(new Array(200_000).fill("0123456789"), "{}", "s1")).toThrow(new RegExp(`larger than ${FORMAT_MAX_BYTES} bytes`));
    // One large item that the template repeats is refused before the line is built.
    expect(() => formatReferenced("x".repeat(600_000), "{} {}", "s1")).toThrow(/larger than/);
  });

  it("is checked with the plan, a streamed prefix too", () => {
    const plan: PlannedSubtask[] = [
      { id: "s1", label: "a", agent: "execute", dependsOn: [], args: {} },
      { id: "s2", label: "b", agent: "execute", dependsOn: ["s1"], tool: "file_write", args: { content: { ref: "s1", path: "$", format: "no placeholder" } } },
    ];
    expect(validatePlan(plan, { agents: ["execute"] })).toEqual([expect.stringContaining('subtask s2: argument "content": its format has no placeholder')]);
    expect(validatePlan(plan, { agents: ["execute"] }, { prefix: true })).toHaveLength(1);
  });
});
