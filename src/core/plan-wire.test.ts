import { describe, expect, it } from "vitest";
import { PlanOutput } from "./plan.js";
import { planReadContext } from "./plan-read.js";
import { fromPlanWire, planWireSchema, readPlanAnswer, toPlanWire } from "./plan-wire.js";
import { reviewWireSchema } from "./review-wire.js";
import { isStrictCompatible, wireJsonSchema } from "./wire-schema.js";

const schema = planWireSchema({ agents: ["research", "code", "execute"], tools: ["file_list", "text_stats"], maxSubtasks: 3 });
/** research runs a tool step the plan names no agent for (it is the first that has the tool). */
const context = planReadContext(
  [
    { name: "research", tools: ["file_list", "text_stats"] },
    { name: "execute", tools: ["file_list", "text_stats"] },
  ],
  ["file_list", "text_stats"],
);

/** A folder listed by a direct tool step, then each file counted: refs, a tool, a map. */
const legacy = {
  subtasks: [
    { id: "A", label: "List data/", agent: "execute", tool: "file_list", dependsOn: [], args: { path: { value: "data" }, recursive: { value: false } }, reads: ["data"] },
    { id: "B", label: "Count each file's lines", agent: "research", tool: "text_stats", dependsOn: ["A"], mapOver: "path", args: { path: { ref: "A", path: "$.entries[*].path" } } },
  ],
};

/** The same plan on the lean wire: the first step in the full shape (its agent is not the default, it declares a read), the second a tool step whose agent and label code fills in. */
const wire = {
  steps: [
    { id: "A", agent: "execute", do: "List data/", tool: "file_list", args: [{ name: "path", value: "data" }, { name: "recursive", value: false }], tools: null, after: [], reads: ["data"], writes: [], capability: null },
    { id: "B", tool: "text_stats", args: [{ name: "path", each: "A", path: "$.entries[*].path" }] },
  ],
  answer: null,
  question: null,
};

function errorOf(answer: unknown): string {
  const read = readPlanAnswer(answer, schema, context);
  if (read.success) throw new Error("expected the answer to be refused");
  return read.error;
}

describe("the plan's JSON wire shape", () => {
  it("reads the wire shape and the internal shape as the same plan, filling in what the wire leaves out", () => {
    const fromWire = readPlanAnswer(wire, schema, context);
    expect(fromWire.success).toBe(true);
    const steps = fromWire.success ? fromWire.data.subtasks : [];
    expect(steps[0]).toEqual(PlanOutput.parse(legacy).subtasks[0]);
    // A tool step: its agent is the first that has the tool, its label the call, its dependsOn its references.
    expect(steps[1]).toEqual({ id: "B", label: 'text_stats(path: each $A.entries[*].path)', agent: "research", tool: "text_stats", dependsOn: ["A"], mapOver: "path", args: { path: { ref: "A", path: "$.entries[*].path" } } });
    expect(readPlanAnswer(legacy, schema, context)).toEqual({ success: true, data: PlanOutput.parse(legacy) });
  });

  it("keeps a question and an answer, and the worker's tools: [] none, null all its agent's", () => {
    expect(readPlanAnswer({ steps: [], answer: null, question: "Which folder?" }, schema, context)).toEqual({ success: true, data: { subtasks: [], question: "Which folder?" } });
    const worker = { id: "C", agent: "execute", do: "Summarise the counts", tool: null, args: [{ name: "counts", ref: "B", path: "$.results[*].output" }], tools: [], after: [], reads: [], writes: [], capability: null };
    const read = fromPlanWire({ steps: [worker], answer: "The counts: {C}", question: null }, context);
    expect(read).toEqual({ subtasks: [{ id: "C", label: "Summarise the counts", agent: "execute", dependsOn: ["B"], args: { counts: { ref: "B", path: "$.results[*].output" } }, tools: [] }], answer: "The counts: {C}" });
    expect(fromPlanWire({ steps: [{ ...worker, tools: null }], answer: null, question: null }, context).subtasks[0]).not.toHaveProperty("tools");
  });

  it("carries the tools a worker needs and a capability, each an enum of what exists", () => {
    const withCapabilities = planWireSchema({ agents: ["research", "execute"], tools: ["file_list", "text_stats"], maxSubtasks: 3, capabilities: ["search", "compute"] });
    const full = { id: "C", agent: "execute", do: "Count", tool: null, args: [], tools: ["text_stats"], after: [], reads: [], writes: [], capability: "compute" };
    const read = readPlanAnswer({ steps: [full], answer: null, question: null }, withCapabilities, context);
    expect(read.success && read.data.subtasks[0]).toMatchObject({ tools: ["text_stats"], capability: "compute" });
    const unknown = readPlanAnswer({ steps: [{ ...full, tools: ["rm_rf"], capability: "flying" }], answer: null, question: null }, withCapabilities, context);
    expect(unknown.success).toBe(false);
    expect(isStrictCompatible(wireJsonSchema(withCapabilities))).toBe(true);
  });

  it("sends a step as one of two closed shapes and an argument as one of five, each with only the fields it uses", () => {
    const json = wireJsonSchema(schema) as { properties: { steps: { items: { anyOf: Array<{ required: string[]; properties: Record<string, { items?: { anyOf?: Array<{ required: string[] }> } }> }> } } } };
    const steps = json.properties.steps.items.anyOf;
    expect(steps.map((step) => step.required)).toEqual([
      ["id", "agent", "do", "tool", "args", "tools", "after", "reads", "writes", "capability"],
      ["id", "tool", "args"],
    ]);
    expect(steps[1]?.properties.args?.items?.anyOf?.map((shape) => shape.required)).toEqual([
      ["name", "value"],
      ["name", "items"],
      ["name", "ref", "path"],
      ["name", "each", "path"],
      ["name", "ref", "path", "format"],
    ]);
  });

  it("round-trips an internal plan, each step in its leanest shape; objects travel as JSON text", () => {
    const plan = PlanOutput.parse(legacy);
    expect(fromPlanWire(toPlanWire(plan, context), context)).toEqual(plan);
    // A tool step labelled by its call and run by its tool's first agent goes in the tool-step shape.
    const lean = { ...plan.subtasks[1]!, label: "text_stats(path: each $A.entries[*].path)" };
    expect(toPlanWire({ subtasks: [lean] }, context).steps[0]).toEqual({ id: "B", tool: "text_stats", args: [{ name: "path", each: "A", path: "$.entries[*].path" }] });
    const objects = toPlanWire({ subtasks: [{ id: "s1", label: "Fetch", agent: "research", dependsOn: [], args: { headers: { value: { accept: "text/plain" } }, ids: { value: [1, 2] }, rows: { value: [{ a: 1 }] } } }] }, context);
    expect(objects.steps[0]?.args).toEqual([
      { name: "headers", value: '{"accept":"text/plain"}' },
      { name: "ids", value: [1, 2] },
      { name: "rows", value: '[{"a":1}]' },
    ]);
    expect(schema.safeParse(objects).success).toBe(true);
    const mapped = toPlanWire({ subtasks: [{ id: "s1", label: "Square each", agent: "execute", dependsOn: [], args: { n: { value: [1, 2, 3] } }, mapOver: "n" }] }, context);
    expect(mapped.steps[0]?.args).toEqual([{ name: "n", items: [1, 2, 3] }]);
    expect(fromPlanWire(mapped, context).subtasks[0]).toMatchObject({ args: { n: { value: [1, 2, 3] } }, mapOver: "n" });
  });

  it("names the field and the allowed values when a wire answer names an unknown agent or tool", () => {
    const error = errorOf({ ...wire, steps: [{ ...wire.steps[0], agent: "ok agent", tool: "rm_rf" }] });
    expect(error).toContain("→ at steps[0].agent");
    expect(error).toContain('"research"|"code"|"execute"');
    expect(error).toContain("→ at steps[0].tool");
  });

  it("refuses an argument with both a value and a reference, a name given twice, and two maps", () => {
    const error = errorOf({ ...wire, steps: [{ id: "B", tool: "text_stats", args: [{ name: "path", value: "data", ref: "A", path: "$" }] }] });
    expect(error).toContain('"path" has both a value and a reference');
    const twice = errorOf({ ...wire, steps: [{ id: "A", tool: "file_list", args: [{ name: "n", value: 1 }, { name: "n", value: 2 }] }] });
    expect(twice).toContain('argument "n" is given more than once');
    const maps = errorOf({ ...wire, steps: [{ id: "A", tool: "file_list", args: [{ name: "a", items: [1] }, { name: "b", each: "A", path: "$" }] }] });
    expect(maps).toContain('the step would run over "a" and "b"; it runs over one list at most');
    expect(maps).toContain("→ at steps[0].args[1]");
  });

  it("refuses an id, a name or an instruction past its length, and a worker's step that says nothing", () => {
    const long = errorOf({ ...wire, steps: [{ id: "x".repeat(65), tool: "file_list", args: [{ name: "", value: 1 }] }] });
    expect(long).toContain("a step id is 1 to 64 characters");
    expect(long).toContain("→ at steps[0].id");
    expect(long).toContain("an argument's name is 1 to 64 characters");
    expect(errorOf({ ...wire, steps: [{ ...wire.steps[0], tool: null, do: " " }] })).toContain("a worker's step says what to do");
  });

  it("refuses more steps than the plan limit, and an object where a value must be a scalar or a list", () => {
    const many = { ...wire, steps: [0, 1, 2, 3].map((index) => ({ ...wire.steps[1], id: `s${index}` })) };
    expect(errorOf(many)).toContain("→ at steps");
    const object = { ...wire, steps: [{ id: "A", tool: "file_list", args: [{ name: "headers", value: { accept: "x" } }] }] };
    expect(errorOf(object)).toContain("→ at steps[0]");
  });

  it("reports an internal-shape answer's errors in its own terms", () => {
    const error = errorOf({ subtasks: [{ id: "s1", agent: "research", args: { q: { value: 1 } } }] });
    expect(error).toContain("→ at subtasks[0].label");
    expect(error).not.toContain("args[");
  });

  it("is one schema object per set of agents, tools and limit", () => {
    expect(planWireSchema({ agents: ["research", "code", "execute"], tools: ["file_list", "text_stats"], maxSubtasks: 3 })).toBe(schema);
    expect(planWireSchema({ agents: ["research"], tools: [], maxSubtasks: 3 })).not.toBe(schema);
  });

  it("fits strict mode as JSON schema, where the internal shape does not", () => {
    expect(isStrictCompatible(wireJsonSchema(schema))).toBe(true);
    expect(isStrictCompatible(wireJsonSchema(planWireSchema({ agents: [], tools: [], maxSubtasks: 50 })))).toBe(true);
    expect(isStrictCompatible(wireJsonSchema(PlanOutput))).toBe(false);
  });
});

describe("the critic's wire shape", () => {
  const review = reviewWireSchema(["s1", "s2"]);
  const scores = { accuracy: 0.5, completeness: 0.5, relevance: 1, logic: 1 };

  it("takes redo ids of the plan only", () => {
    expect(review.safeParse({ scores, issues: ["s2 is wrong"], redo: ["s2"], replan: false }).success).toBe(true);
    const unknown = review.safeParse({ scores, issues: [], redo: ["s9"], replan: false });
    expect(unknown.success).toBe(false);
    expect(JSON.stringify(unknown.error?.issues)).toContain('"path":["redo",0]');
  });

  it("reads a review that leaves out issues, redo and replan as none", () => {
    expect(review.parse({ scores })).toEqual({ scores, issues: [], redo: [], replan: false });
  });

  it("has no redo ids to offer for a plan without subtasks", () => {
    const empty = reviewWireSchema([]);
    expect(empty.safeParse({ scores, redo: ["s1"] }).success).toBe(false);
    const json = wireJsonSchema(empty) as { properties: { redo: Record<string, unknown> } };
    expect(json.properties.redo.maxItems).toBe(0);
    expect(isStrictCompatible(wireJsonSchema(review))).toBe(true);
  });
});
