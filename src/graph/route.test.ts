import { describe, expect, it } from "vitest";
import type { Artifact, PlannedSubtask, SubtaskResult } from "../core/plan.js";
import { decideReview, routeOf } from "./route.js";
import { settingsWithDefaults } from "./state.js";

const write = (id: string, writes: string[]): PlannedSubtask => ({ id, label: "write", agent: "execute", dependsOn: [], args: {}, tool: "file_write", writes });
const done = (fields: Partial<SubtaskResult> = {}): SubtaskResult => ({ status: "done", attempts: 1, ...fields });
const written = (file: string): Artifact => ({ path: file, tool: "file_write", action: "written", bytes: 2, sha256: "00" });

function decide(plan: PlannedSubtask[], results: Record<string, SubtaskResult>, files: Record<string, Artifact[]> = {}) {
  return decideReview({ plan, results, reviewDecisions: [], settings: settingsWithDefaults({ review: "auto" }) }, files);
}

describe("review: auto", () => {
  it("skips only a direct step whose declared files were all recorded as written", () => {
    expect(decide([write("s1", ["./out/a.txt"])], { s1: done() }, { s1: [written("out/a.txt")] }).review).toBe("skipped");
    expect(decide([write("s1", ["out"])], { s1: done() }, { s1: [written("out/a.txt")] }).review).toBe("skipped");
    expect(decide([write("s1", ["b.txt"])], { s1: done() }, { s1: [written("a.txt")] })).toMatchObject({ review: "ran", reason: "s1: b.txt was declared but no file was recorded there" });
  });

  it("keeps it for a file that differs from its source, failed map items, and a file that could not be written", () => {
    const differs: Artifact = { ...written("a.txt"), source: { from: "s0 $.text", bytes: 5, identical: false, byReference: true } };
    expect(decide([write("s1", [])], { s1: done() }, { s1: [differs] }).reason).toMatch(/^s1: a.txt \(2 bytes\) differs from its source/);
    expect(decide([write("s1", [])], { s1: done({ map: { overallStatus: "PARTIAL_SUCCESS", total: 3, succeeded: 2, failed: 1, failures: [] } }) }).reason).toBe("1 of s1's items failed");
    expect(decide([write("s1", [])], { s1: done({ unwritten: [{ path: "a.txt", tool: "file_write", reason: "quota", bytes: 2 }] }) }).reason).toBe("s1 could not write a.txt");
    expect(decide([write("s1", [])], { s1: { status: "failed", attempts: 1, error: "boom" } }).reason).toBe("s1 is failed");
  });
});

describe("the route", () => {
  it("is fast for one subtask that is not a map, planned otherwise", () => {
    expect(routeOf([], "auto")).toBeNull();
    expect(routeOf([write("s1", [])], "auto")?.route).toBe("fast");
    expect(routeOf([{ ...write("s1", []), mapOver: "items" }], "auto")).toEqual({ route: "planned", reason: 'its one subtask runs once per item of "items"' });
    expect(routeOf([write("s1", []), write("s2", [])], "never")?.route).toBe("planned");
    expect(routeOf([write("s1", [])], "always")?.route).toBe("planned");
  });

  it("says who words a direct step's result: the plan's answer when it stated one, else the synthesizer", () => {
    expect(routeOf([write("s1", [])], "auto", "wrote {s1.bytes} bytes")?.reason).toMatch(/the plan's answer fills in its result/);
    expect(routeOf([write("s1", [])], "auto")?.reason).toMatch(/the synthesizer words its result$/);
  });
});
