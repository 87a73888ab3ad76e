import { describe, expect, it } from "vitest";
import { PlanOutput } from "./plan.js";
import { fromPlanWire, planWireSchema, readPlanAnswer, toPlanWire } from "./plan-wire.js";
import { reviewWireSchema } from "./review-wire.js";
import { isStrictCompatible, wireJsonSchema } from "./wire-schema.js";

const schema = planWireSchema({ agents: ["research", "code", "execute"], tools: ["file_list", "text_stats"], maxSubtasks: 3 });

/** A folder listed by a direct tool step, then each file counted: refs, a tool, a map, reads. */
const legacy = {
  subtasks: [
    { id: "A", label: "List data/", agent: "execute", tool: "file_list", dependsOn: [], args: { path: { value: "data" }, recursive: { value: false } }, reads: ["data"] },
    { id: "B", label: "Count each file's lines", agent: "execute", tool: "text_stats", dependsOn: ["A"], mapOver: "path", args: { path: { ref: "A", path: "$.entries[*].path" } } },
  ],
};

const wire = {
  subtasks: [
    {
      id: "A",
      label: "List data/",
      agent: "execute",
      dependsOn: [],
      args: [
        { name: "path", value: "data" },
        { name: "recursive", value: false },
      ],
      tool: "file_list",
      tools: [],
      capability: null,
      reads: ["data"],
      writes: [],
    },
    {
      id: "B",
      label: "Count each file's lines",
      agent: "execute",
      dependsOn: ["A"],
      args: [{ name: "path", ref: "A", path: "$.entries[*].path", each: true, format: null }],
      tool: "text_stats",
      tools: [],
      capability: null,
      reads: [],
      writes: [],
    },
  ],
  question: null,
};

function errorOf(answer: unknown): string {
  const read = readPlanAnswer(answer, schema);
  if (read.success) throw new Error("expected the answer to be refused");
  return read.error;
}

describe("the plan's wire shape", () => {
  it("reads the wire shape and the internal shape as the same plan", () => {
    const fromWire = readPlanAnswer(wire, schema);
    const fromLegacy = readPlanAnswer(legacy, schema);
    expect(fromWire).toEqual({ success: true, data: PlanOutput.parse(legacy) });
    expect(fromLegacy).toEqual(fromWire);
  });

  it("leaves out what the wire says is unused, and keeps a question", () => {
    const read = readPlanAnswer({ subtasks: [], question: "Which folder?" }, schema);
    expect(read).toEqual({ success: true, data: { subtasks: [], question: "Which folder?" } });
    const plan = fromPlanWire({ subtasks: [{ ...wire.subtasks[1]!, tool: null, args: [{ name: "path", ref: "A", path: "$.entries[*].path", each: false, format: null }], writes: ["out.txt"] }], question: null });
    expect(plan).toEqual({ subtasks: [{ id: "B", label: "Count each file's lines", agent: "execute", dependsOn: ["A"], args: { path: { ref: "A", path: "$.entries[*].path" } }, writes: ["out.txt"], tools: [] }] });
    // null: the worker is offered every tool of its agent, as when the plan names none.
    const open = fromPlanWire({ subtasks: [{ ...wire.subtasks[1]!, tool: null, tools: null }], question: null });
    expect(open.subtasks[0]).not.toHaveProperty("tools");
  });

  it("carries the tools a worker needs and a capability, each an enum of what exists", () => {
    const withCapabilities = planWireSchema({ agents: ["research", "execute"], tools: ["file_list", "text_stats"], maxSubtasks: 3, capabilities: ["search", "compute"] });
    const worker = { ...wire.subtasks[1]!, tool: null, tools: ["text_stats"], capability: "compute" };
    const read = readPlanAnswer({ subtasks: [worker], question: null }, withCapabilities);
    expect(read.success && read.data.subtasks[0]).toMatchObject({ tools: ["text_stats"], capability: "compute", mapOver: "path" });
    const unknown = readPlanAnswer({ subtasks: [{ ...worker, tools: ["rm_rf"], capability: "flying" }], question: null }, withCapabilities);
    expect(unknown.success).toBe(false);
    expect(!unknown.success && unknown.error).toContain("→ at subtasks[0].tools[0]");
    expect(!unknown.success && unknown.error).toContain("→ at subtasks[0].capability");
    expect(isStrictCompatible(wireJsonSchema(withCapabilities))).toBe(true);
  });

  it("sends an argument as one of three closed shapes, a literal, a list to run over or a reference, and the map as the argument it runs over", () => {
    const json = wireJsonSchema(schema) as { properties: { subtasks: { items: { properties: Record<string, { items?: { anyOf?: Array<{ properties: object; required: string[] }> } }> } } } };
    const shapes = json.properties.subtasks.items.properties.args?.items?.anyOf ?? [];
    expect(shapes.map((shape) => shape.required)).toEqual([["name", "value"], ["name", "items"], ["name", "ref", "path", "each", "format"]]);
    expect(json.properties.subtasks.items.properties).not.toHaveProperty("mapOver");
  });

  it("round-trips an internal plan; objects travel as JSON text", () => {
    expect(fromPlanWire(toPlanWire(PlanOutput.parse(legacy)))).toEqual(PlanOutput.parse(legacy));
    const objects = toPlanWire({ subtasks: [{ id: "s1", label: "Fetch", agent: "research", dependsOn: [], args: { headers: { value: { accept: "text/plain" } }, ids: { value: [1, 2] }, rows: { value: [{ a: 1 }] } } }] });
    expect(objects.subtasks[0]?.args).toEqual([
      { name: "headers", value: '{"accept":"text/plain"}' },
      { name: "ids", value: [1, 2] },
      { name: "rows", value: '[{"a":1}]' },
    ]);
    expect(schema.safeParse(objects).success).toBe(true);
    const mapped = toPlanWire({ subtasks: [{ id: "s1", label: "Square each", agent: "execute", dependsOn: [], args: { n: { value: [1, 2, 3] } }, mapOver: "n" }] });
    expect(mapped.subtasks[0]?.args).toEqual([{ name: "n", items: [1, 2, 3] }]);
    expect(fromPlanWire(mapped).subtasks[0]).toMatchObject({ args: { n: { value: [1, 2, 3] } }, mapOver: "n" });
  });

  it("names the field and the allowed values when a wire answer names an unknown agent or tool", () => {
    const answer = { ...wire, subtasks: [{ ...wire.subtasks[0], agent: "ok agent", tool: "rm_rf" }] };
    const error = errorOf(answer);
    expect(error).toContain("→ at subtasks[0].agent");
    expect(error).toContain('"research"|"code"|"execute"');
    expect(error).toContain("→ at subtasks[0].tool");
  });

  it("refuses an argument with both a value and a ref, a path without a ref, a name given twice, and two maps", () => {
    const args = [
      { name: "path", value: "data", ref: "A", path: "$", each: false, format: null },
      { name: "limit", value: 2, path: "$.x" },
      { name: "limit", value: 3 },
    ];
    const error = errorOf({ ...wire, subtasks: [wire.subtasks[0], { ...wire.subtasks[1], args }] });
    expect(error).toContain('"path" has both a value and a ref');
    expect(error).toContain("→ at subtasks[1].args[0]");
    expect(error).toContain('Unrecognized key: "path"');
    expect(error).toContain("→ at subtasks[1].args[1]");
    const twice = errorOf({ ...wire, subtasks: [{ ...wire.subtasks[0], args: [{ name: "n", value: 1 }, { name: "n", value: 2 }] }] });
    expect(twice).toContain('argument "n" is given more than once');
    const maps = errorOf({ ...wire, subtasks: [{ ...wire.subtasks[0], args: [{ name: "a", items: [1] }, { name: "b", ref: "A", path: "$", each: true, format: null }] }] });
    expect(maps).toContain('the subtask would run over "a" and "b"; it runs over one list at most');
    expect(maps).toContain("→ at subtasks[0].args[1]");
  });

  it("refuses more subtasks than the plan limit, and an object where a value must be a scalar or a list", () => {
    const many = { ...wire, subtasks: [0, 1, 2, 3].map((index) => ({ ...wire.subtasks[0], id: `s${index}` })) };
    expect(errorOf(many)).toContain("→ at subtasks");
    const object = { ...wire, subtasks: [{ ...wire.subtasks[0], args: [{ name: "headers", value: { accept: "x" } }] }] };
    expect(errorOf(object)).toContain("→ at subtasks[0].args[0]");
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
