import { describe, expect, it } from "vitest";
import { emptyExecutionGraph, type ExecutionGraph, type ExecutionGraphNode } from "../core/execution-graph.js";
import { GANTT_WIDTH, ganttLines } from "./gantt.js";

function node(id: string, status: ExecutionGraphNode["status"], startedAt?: number, endedAt?: number): ExecutionGraphNode {
  return {
    id,
    label: id,
    agent: "research",
    tool: null,
    status,
    summary: "",
    durationMs: startedAt !== undefined && endedAt !== undefined ? endedAt - startedAt : null,
    items: null,
    ...(startedAt !== undefined ? { startedAt } : {}),
    ...(endedAt !== undefined ? { endedAt } : {}),
  };
}

/** The bar between the two rules of a row. */
const barOf = (line: string): string => line.slice(line.indexOf("│") + 1, line.lastIndexOf("│"));

describe("the text Gantt strip", () => {
  it("scales each subtask's bar over the makespan and marks the critical path", () => {
    const graph: ExecutionGraph = {
      ...emptyExecutionGraph(),
      nodes: [node("s1", "SUCCESS", 1_000, 1_100), node("s2", "SUCCESS", 1_100, 1_200), node("long", "FAILED", 1_000, 1_480), node("s4", "SKIPPED")],
      criticalPath: ["long"],
      criticalPathMs: 480,
      makespanMs: 480,
    };
    const lines = ganttLines(graph, 99_999);
    expect(lines[0]).toBe("timeline: 480 ms from the first subtask start to the last end (█ done, ▓ partial, ▒ failed, ░ running):");
    expect(lines.slice(1, 5).map((line) => line.slice(0, 9))).toEqual(["    s1   ", "    s2   ", "  * long ", "    s4   "]);
    // 100 ms of 480 is 10 of 48 characters; the second starts where the first ends.
    expect(barOf(lines[1] ?? "")).toBe(`${"█".repeat(10)}${" ".repeat(38)}`);
    expect(barOf(lines[2] ?? "")).toBe(`${" ".repeat(10)}${"█".repeat(10)}${" ".repeat(28)}`);
    expect(barOf(lines[3] ?? "")).toBe("▒".repeat(GANTT_WIDTH));
    expect(lines[1]).toMatch(/│ +\+0 ms +100 ms$/);
    expect(lines[2]).toMatch(/│ +\+100 ms +100 ms$/);
    expect(lines[3]).toMatch(/│ +\+0 ms +480 ms {2}failed$/);
    expect(lines[4]).toBe(`    s4    │${" ".repeat(GANTT_WIDTH)}│  skipped`);
    expect(lines[5]).toBe("critical path (*): long · 480 ms of work in a makespan of 480 ms");
  });

  it("grows a running subtask's bar to now, and draws nothing before a subtask starts", () => {
    const graph: ExecutionGraph = { ...emptyExecutionGraph(), nodes: [node("s1", "SUCCESS", 0, 250), node("s2", "RUNNING", 250)], criticalPath: ["s1"], criticalPathMs: 250, makespanMs: 250 };
    const lines = ganttLines(graph, 1_000);
    expect(lines[0]).toMatch(/^timeline: 1\.0 s from the first subtask start to now/);
    expect(barOf(lines[2] ?? "")).toBe(`${" ".repeat(12)}${"░".repeat(36)}`);
    expect(lines[2]).toMatch(/\+250 ms +750 ms {2}running$/);
    expect(lines.at(-1)).toBe("critical path (*): s1 · 250 ms of work in a makespan of 250 ms so far");
    expect(ganttLines({ ...emptyExecutionGraph(), nodes: [node("s1", "PENDING")] })).toEqual([]);
  });

  it("gives a subtask too short to see one character", () => {
    const graph: ExecutionGraph = { ...emptyExecutionGraph(), nodes: [node("a", "SUCCESS", 0, 1_000), node("b", "SUCCESS", 1_000, 1_000)], criticalPath: ["a", "b"], criticalPathMs: 1_000, makespanMs: 1_000 };
    expect(barOf(ganttLines(graph)[2] ?? "")).toBe(`${" ".repeat(GANTT_WIDTH - 1)}█`);
  });
});
