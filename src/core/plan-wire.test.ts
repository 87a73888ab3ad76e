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
        { name: "path", value: "data", ref: null, path: null },
        { name: "recursive", value: false, ref: null, path: null },
      ],
      tool: "file_list",
      tools: [],
      capability: null,
      mapOver: null,
      reads: ["data"],
      writes: [],
    },
    {
      id: "B",
      label: "Count each file's lines",
      agent: "execute",
      dependsOn: ["A"],
      args: [{ name: "path", value: null, ref: "A", path: "$.entries[*].path" }],
      tool: "text_stats",
      tools: [],
      capability: null,
      mapOver: "path",
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
    const plan = fromPlanWire({ subtasks: [{ ...wire.subtasks[1]!, tool: null, mapOver: null, writes: ["out.txt"] }], question: null });
    expect(plan).toEqual({ subtasks: [{ id: "B", label: "Count each file's lines", agent: "execute", dependsOn: ["A"], args: { path: { ref: "A", path: "$.entries[*].path" } }, writes: ["out.txt"], tools: [] }] });
    // null: the worker is offered every tool of its agent, as when the plan names none.
    const open = fromPlanWire({ subtasks: [{ ...wire.subtasks[1]!, tool: null, tools: null }], question: null });
    expect(open.subtasks[0]).not.toHaveProperty("tools");
  });

  it("carries the tools a worker needs and a capability, each an enum of what exists", () => {
    const withCapabilities = planWireSchema({ agents: ["research", "execute"], tools: ["file_list", "text_stats"], maxSubtasks: 3, capabilities: ["search", "compute"] });
    const worker = { ...wire.subtasks[1]!, tool: null, mapOver: null, tools: ["text_stats"], capability: "compute" };
    const read = readPlanAnswer({ subtasks: [worker], question: null }, withCapabilities);
    expect(read.success && read.data.subtasks[0]).toMatchObject({ tools: ["text_stats"], capability: "compute" });
    const unknown = readPlanAnswer({ subtasks: [{ ...worker, tools: ["rm_rf"], capability: "flying" }], question: null }, withCapabilities);
    expect(unknown.success).toBe(false);
    expect(!unknown.success && unknown.error).toContain("→ at subtasks[0].tools[0]");
    expect(!unknown.success && unknown.error).toContain("→ at subtasks[0].capability");
    expect(isStrictCompatible(wireJsonSchema(withCapabilities))).toBe(true);
  });

  it("takes a ref without a path as the whole result", () => {
    const answer = { ...wire, subtasks: [wire.subtasks[0], { ...wire.subtasks[1], args: [{ name: "path", value: null, ref: "A", path: null }] }] };
    const read = readPlanAnswer(answer, schema);
    expect(read.success && read.data.subtasks[1]?.args).toEqual({ path: { ref: "A", path: "$" } });
  });

  it("round-trips an internal plan; objects travel as JSON text", () => {
    expect(fromPlanWire(toPlanWire(PlanOutput.parse(legacy)))).toEqual(PlanOutput.parse(legacy));
    const objects = toPlanWire({ subtasks: [{ id: "s1", label: "Fetch", agent: "research", dependsOn: [], args: { headers: { value: { accept: "text/plain" } }, ids: { value: [1, 2] }, rows: { value: [{ a: 1 }] } } }] });
    expect(objects.subtasks[0]?.args).toEqual([
      { name: "headers", value: '{"accept":"text/plain"}', ref: null, path: null },
      { name: "ids", value: [1, 2], ref: null, path: null },
      { name: "rows", value: '[{"a":1}]', ref: null, path: null },
    ]);
    expect(schema.safeParse(objects).success).toBe(true);
  });

  it("names the field and the allowed values when a wire answer names an unknown agent or tool", () => {
    const answer = { ...wire, subtasks: [{ ...wire.subtasks[0], agent: "ok agent", tool: "rm_rf" }] };
    const error = errorOf(answer);
    expect(error).toContain("→ at subtasks[0].agent");
    expect(error).toContain('"research"|"code"|"execute"');
    expect(error).toContain("→ at subtasks[0].tool");
  });

  it("refuses an argument with both a value and a ref, a path without a ref, and a name given twice", () => {
    const args = [
      { name: "path", value: "data", ref: "A", path: "$" },
      { name: "limit", value: 2, ref: null, path: "$.x" },
      { name: "limit", value: 3, ref: null, path: null },
    ];
    const error = errorOf({ ...wire, subtasks: [wire.subtasks[0], { ...wire.subtasks[1], args }] });
    expect(error).toContain('argument "path" has both a value and a ref; a reference takes value null');
    expect(error).toContain("→ at subtasks[1].args[0].value");
    expect(error).toContain('argument "limit" has a path but no ref');
    expect(error).toContain('argument "limit" is given more than once');
  });

  it("refuses more subtasks than the plan limit, and an object where a value must be a scalar or a list", () => {
    const many = { ...wire, subtasks: [0, 1, 2, 3].map((index) => ({ ...wire.subtasks[0], id: `s${index}` })) };
    expect(errorOf(many)).toContain("→ at subtasks");
    const object = { ...wire, subtasks: [{ ...wire.subtasks[0], args: [{ name: "headers", value: { accept: "x" }, ref: null, path: null }] }] };
    expect(errorOf(object)).toContain("→ at subtasks[0].args[0].value");
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
