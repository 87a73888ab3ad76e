import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createBuiltinTools } from "./builtin/index.js";
import { callRisk, defineTool } from "./define-tool.js";
import { riskOf } from "./tool-powers.js";

describe("a tool's risk follows from what it can do", () => {
  it("gives every built-in tool the risk of its riskiest power", () => {
    const risks = Object.fromEntries(createBuiltinTools().map((tool) => [tool.name, [tool.riskLevel, tool.powers ? riskOf(tool.powers).why : "(declared)"]]));
    expect(risks).toEqual({
      calculator: ["low", "computes from its arguments only"],
      json: ["low", "computes from its arguments only"],
      file_read: ["low", "reads workspace files"],
      file_list: ["low", "reads workspace files"],
      text_stats: ["low", "reads workspace files"],
      file_write: ["medium", "creates or overwrites workspace files"],
      file_append: ["medium", "creates or overwrites workspace files"],
      file_move: ["medium", "creates or overwrites workspace files"],
      file_copy: ["medium", "creates or overwrites workspace files"],
      // The two that can destroy a workspace file are alike: code_run was medium while it could do what file_delete does.
      file_delete: ["high", "deletes workspace files"],
      code_run: ["high", "runs code that can change or delete any workspace file"],
      http_fetch: ["medium", "reaches the network (what a request names leaves the machine); sends data over the network"],
      web_search: ["low", "reads workspace files"],
      board_post: ["low", "posts to this run's shared board"],
      board_read: ["low", "reads what this run or thread holds"],
      // Declared above its power (a write): its point is that a person approves each diff before it is applied.
      propose_edit: ["high", "(declared)"],
      memory_search: ["low", "reads long-term memory"],
      memory_save: ["medium", "writes long-term memory"],
      memory_forget: ["high", "deletes long-term memory"],
      thread_result: ["low", "reads what this run or thread holds"],
    });
  });

  it("judges one call by what it can do: code_run by its language and the workspace it gets", () => {
    const codeRun = createBuiltinTools().find((tool) => tool.name === "code_run");
    if (!codeRun) throw new Error("no code_run");
    const risk = (args: Record<string, unknown>, context: Record<string, unknown> = {}) => callRisk(codeRun, args, { workspace: "/tmp", agent: "execute", ...context }).level;
    expect(risk({ language: "javascript", code: "1" })).toBe("low");
    expect(risk({ language: "python", code: "1" })).toBe("medium");
    expect(risk({ language: "python", code: "1" }, { writes: ["out/"] })).toBe("medium");
    expect(risk({ language: "python", code: "1", writes: true })).toBe("high");
    // A person calling directly may change anything (and needs no approval).
    expect(risk({ language: "python", code: "1" }, { agent: "operator" })).toBe("high");
  });

  it("refuses a declared risk below what the powers make it, and a tool that says neither", () => {
    const base = { name: "wipe", description: "", schema: z.object({}), permission: "WRITE" as const, idempotent: false, timeoutMs: 1_000, execute: async () => null };
    expect(() => defineTool({ ...base, powers: ["workspace.delete"], riskLevel: "low" })).toThrow(/declares risk low, below the high its powers make it \(deletes workspace files\)/);
    expect(() => defineTool(base)).toThrow(/declares neither its powers nor its risk/);
    expect(defineTool({ ...base, powers: ["workspace.read"], riskLevel: "high" }).riskLevel).toBe("high");
  });
});
