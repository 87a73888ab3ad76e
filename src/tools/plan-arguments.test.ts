import { describe, expect, it } from "vitest";
import { z } from "zod";
import { checkPlan, type PlanCatalog } from "../core/plan-check.js";
import type { PlannedSubtask } from "../core/plan.js";
import { createBuiltinRegistry } from "./builtin/index.js";
import { defineTool } from "./define-tool.js";
import { shallowValidator } from "./mcp/mcp-schema-check.js";

const tools = createBuiltinRegistry();
const agents = [{ name: "execute", tools: tools.names() }];
const catalog: PlanCatalog = { agents: { list: () => agents, names: () => agents.map((agent) => agent.name) }, tools };
const step = (id: string, tool: string, args: PlannedSubtask["args"], fields: Partial<PlannedSubtask> = {}): PlannedSubtask => ({ id, label: id, agent: "execute", dependsOn: [], args, tool, ...fields });

function errorsOf(subtasks: PlannedSubtask[], using: PlanCatalog = catalog): string[] {
  const verdict = checkPlan(subtasks, using);
  return "errors" in verdict ? verdict.errors : [];
}

describe("a direct step's arguments, checked with the plan", () => {
  it("names the step, the argument and what the tool takes: expr given to the calculator", () => {
    const [error] = errorsOf([step("s1", "calculator", { expr: { value: "2 + 2" } })]);
    expect(error).toContain('subtask s1: calculator needs the argument "expression" (it was given "expr")');
    expect(error).toContain("calculator takes expression (string, required): an arithmetic expression");
  });

  it('refuses an argument a strict tool does not take: {"ok name": …} given to board_post', () => {
    const [error] = errorsOf([step("s1", "board_post", { text: { value: "hello" }, "ok name": { value: 1 } })]);
    expect(error).toContain('subtask s1: board_post does not take the argument "ok name"');
    expect(error).toContain("board_post takes text (string, required)");
  });

  it("checks literals as a run would bring them over: 42 for a path is its text, but yes is no truth value", () => {
    expect(errorsOf([step("s1", "file_write", { path: { value: 42 }, content: { value: "x" } })])).toEqual([]);
    expect(errorsOf([step("s1", "file_list", { path: { value: "data" }, recursive: { value: "yes" } })])[0]).toContain(`file_list's argument "recursive"`);
  });

  it("checks a reference by the type the step it refers to declares, and never blames one of unknown type", () => {
    const list = step("s1", "file_list", { path: { value: "data" } });
    // A listing's entries (a list of objects) are no truth value; a count is not an object's text.
    const wrong = errorsOf([list, step("s2", "file_list", { recursive: { ref: "s1", path: "$.entries" } }, { dependsOn: ["s1"] })]);
    expect(wrong[0]).toContain(`subtask s2: file_list's argument "recursive" takes boolean, and s1 $.entries is list of object {path, type, bytes}`);
    // Text of unknown content is never blamed: "true" would do.
    expect(errorsOf([list, step("s2", "file_list", { recursive: { ref: "s1", path: "$.path" } }, { dependsOn: ["s1"] })])).toEqual([]);
    // A number where text is wanted is its decimal text; a read file's value where text is wanted is its content.
    const calc = step("s1", "calculator", { expression: { value: "1 + 1" } });
    expect(errorsOf([calc, step("s2", "file_write", { path: { value: "a.txt" }, content: { ref: "s1", path: "$" } }, { dependsOn: ["s1"] })])).toEqual([]);
    const read = step("s1", "file_read", { path: { value: "a.txt" } });
    expect(errorsOf([read, step("s2", "file_write", { path: { value: "b.txt" }, content: { ref: "s1", path: "$" } }, { dependsOn: ["s1"] })])).toEqual([]);
    // A worker's result has no declared type: not blamed, whatever the tool takes.
    const worker: PlannedSubtask = { id: "s1", label: "Think", agent: "execute", dependsOn: [], args: {} };
    expect(errorsOf([worker, step("s2", "file_list", { recursive: { ref: "s1", path: "$.deep[0]" } }, { dependsOn: ["s1"] })])).toEqual([]);
  });

  it("checks each literal item a step runs over", () => {
    const errors = errorsOf([step("s1", "file_list", { path: { value: "data" }, recursive: { value: [true, "maybe"] } }, { mapOver: "recursive" })]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain(`"recursive"`);
  });

  it("checks an MCP tool with its shallow, linear check only: required names and top-level types", () => {
    const inputSchema = { type: "object", properties: { query: { type: "string" }, limit: { type: "integer" }, deep: { anyOf: [{ $ref: "#" }, { type: "string", pattern: "^(a+)+$" }] } }, required: ["query"] };
    const validate = shallowValidator(inputSchema);
    const schema = z.record(z.string(), z.unknown()).superRefine((value, context) => {
      if (validate && !validate(value)) for (const issue of validate.errors ?? []) context.addIssue({ code: "custom", message: `${issue.instancePath || "/"} ${issue.message ?? issue.keyword}` });
    });
    const registry = createBuiltinRegistry().register(defineTool({ name: "notes.search", description: "Search notes", schema, parameters: inputSchema, permission: "READ", riskLevel: "low", idempotent: true, timeoutMs: 1_000, execute: async () => ({}) }));
    const mcp: PlanCatalog = { agents: { list: () => [{ name: "execute", tools: registry.names() }], names: () => ["execute"] }, tools: registry };
    // The server's pattern (which backtracks) is never run here: only the shallow check is.
    expect(errorsOf([step("s1", "notes.search", { query: { value: "x" }, deep: { value: `${"a".repeat(40)}!` } })], mcp)).toEqual([]);
    expect(errorsOf([step("s1", "notes.search", { deep: { value: "x" } })], mcp)[0]).toContain('subtask s1: notes.search needs the argument "query"');
    expect(errorsOf([step("s1", "notes.search", { query: { value: "x" }, limit: { value: "many" } })], mcp)[0]).toContain(`notes.search's argument "limit": must be integer`);
  });
});
