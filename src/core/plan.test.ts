import { describe, expect, it } from "vitest";
import { BUILTIN_AGENTS, findCycle, type PlannedSubtask, planDepth, validatePlan } from "./plan.js";

const rules = { agents: BUILTIN_AGENTS, tools: ["calculator", "file_write"] };
const task = (id: string, fields: Partial<PlannedSubtask> = {}): PlannedSubtask => ({ id, label: `do ${id}`, agent: "execute", dependsOn: [], args: {}, ...fields });

describe("validatePlan", () => {
  it("accepts a well-formed DAG", () => {
    const plan = [task("s1"), task("s2"), task("s3", { dependsOn: ["s1", "s2"], args: { a: { ref: "s1", path: "$.x" }, b: { value: 2 } } })];
    expect(validatePlan(plan, rules)).toEqual([]);
    expect(planDepth(plan)).toBe(2);
  });

  it("names every problem: unknown agent or tool, missing or self dependency, bad reference, duplicates, mapOver", () => {
    const errors = validatePlan(
      [
        task("s1", { agent: "poet" }),
        task("s2", { dependsOn: ["s9", "s2"] }),
        task("s3", { args: { x: { ref: "s1", path: "$" }, y: { ref: "s8", path: "$" }, z: { ref: "s1", path: "x" } }, dependsOn: [] }),
        task("s3"),
        task("s4", { tool: "rm_rf", mapOver: "items" }),
      ],
      rules,
    );
    expect(errors).toEqual(
      expect.arrayContaining([
        'subtask id "s3" is used more than once',
        'subtask s1: unknown agent "poet" (known: research, code, execute, memory, cleanup)',
        'subtask s2 depends on "s9", which is not in the plan (dependsOn may name: s1, s3, s4)',
        "subtask s2 depends on itself (dependsOn may name: s1, s3, s4)",
        'subtask s3: argument "x" refers to "s1", which is not in its dependsOn (add "s1" to dependsOn)',
        'subtask s3: argument "y" refers to "s8", which is not in the plan (its ref may name: s1, s2, s4)',
        'subtask s3: argument "z" has path "x"; a JSONPath starts with $',
        'subtask s4: unknown tool "rm_rf" (known: calculator, file_write)',
        'subtask s4: mapOver names "items", which is not one of its args (none)',
      ]),
    );
  });

  it("refuses references whose JSONPath cannot work and maps over values that are not lists", () => {
    const errors = validatePlan(
      [
        task("s1"),
        task("s2", { dependsOn: ["s1"], args: { a: { ref: "s1", path: "$.users[0" }, b: { ref: "s1", path: "$.users[?(@.id==)]" } } }),
        task("s3", { args: { n: { value: 3 } }, mapOver: "n" }),
        task("s4", { args: { n: { value: [1, 2, 3] } }, mapOver: "n" }),
        task("s5", { dependsOn: ["s1"], args: { n: { ref: "s1", path: "$.items[*]" } }, mapOver: "n" }),
      ],
      rules,
    );
    expect(errors).toEqual([
      'subtask s2: argument "a" has path "$.users[0"; "]" is missing',
      expect.stringMatching(/^subtask s2: argument "b" has path "\$\.users\[\?\(@\.id==\)\]"; the filter .* does not parse/),
      'subtask s3: mapOver names "n", whose value is not a list',
    ]);
  });

  it("finds cycles and names them", () => {
    const plan = [task("a", { dependsOn: ["c"] }), task("b", { dependsOn: ["a"] }), task("c", { dependsOn: ["b"] }), task("d")];
    expect(findCycle(plan)).toEqual(["a", "c", "b", "a"]);
    expect(validatePlan(plan, rules)).toContain("the dependencies form a cycle: a → c → b → a");
  });

  it("refuses an empty plan and one over the size limit", () => {
    expect(validatePlan([], rules)).toEqual(["the plan has no subtasks"]);
    const big = Array.from({ length: 51 }, (_, index) => task(`s${index}`));
    expect(validatePlan(big, rules)).toEqual(["the plan has 51 subtasks; at most 50 are allowed"]);
    expect(validatePlan(big.slice(0, 50), rules)).toEqual([]);
  });
});
