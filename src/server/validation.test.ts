import { describe, expect, it } from "vitest";
import { InputError } from "../core/errors.js";
import { ExecuteBody } from "./run-request-wire.js";
import { ResumeBody, TaskListQuery } from "./schemas.js";
import { parseRequestPart } from "./validation.js";

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(InputError);
    return (error as InputError).code;
  }
}

describe("parseRequestPart", () => {
  it("returns the parsed value: the task normalised, defaults applied", () => {
    expect(parseRequestPart(ExecuteBody, { task: "  hello\r\nworld  " })).toEqual({ task: "hello\nworld" });
    expect(parseRequestPart(TaskListQuery, { limit: "5" })).toEqual({ limit: 5, offset: 0 });
  });

  it("turns problems into <field>_<problem> codes", () => {
    expect(codeOf(() => parseRequestPart(ExecuteBody, {}))).toBe("task_required");
    expect(codeOf(() => parseRequestPart(ExecuteBody, { task: null }))).toBe("task_invalid");
    expect(codeOf(() => parseRequestPart(ExecuteBody, { task: "x".repeat(5001) }))).toBe("task_too_long");
    expect(codeOf(() => parseRequestPart(ExecuteBody, { task: "t", max_iterations: 99 }))).toBe("max_iterations_out_of_range");
    expect(codeOf(() => parseRequestPart(ExecuteBody, { task: "t", tools: ["a", 3] }))).toBe("tools_invalid");
    expect(codeOf(() => parseRequestPart(ExecuteBody, "task"))).toBe("invalid_body");
    expect(codeOf(() => parseRequestPart(ResumeBody, { decision: "answer" }))).toBe("answer_required");
    expect(codeOf(() => parseRequestPart(TaskListQuery, { offset: "-1" }))).toBe("offset_out_of_range");
  });

  it("puts unknown fields first and lists every problem", () => {
    try {
      parseRequestPart(ExecuteBody, { task: "", extra: true });
      expect.unreachable();
    } catch (error) {
      const data = (error as InputError).data as { fields: string[]; issues: Array<{ path: string; code: string }> };
      expect((error as InputError).code).toBe("unknown_field");
      expect((error as InputError).message).toBe("unknown field: extra");
      expect(data.fields).toEqual(["extra"]);
      expect(data.issues).toEqual([
        { path: "", code: "unknown_field", message: "unknown field: extra" },
        { path: "task", code: "task_empty", message: "task: the task is empty" },
      ]);
    }
  });
});
