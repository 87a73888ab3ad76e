import { describe, expect, it } from "vitest";
import { findCriticalPath, longestPath, type TimedSubtask } from "./critical-path.js";

/** A subtask that ran from `start` to `end` (ms after 10,000). */
function ran(id: string, start: number, end: number, dependsOn: string[] = []): TimedSubtask {
  return { id, dependsOn, startedAt: 10_000 + start, endedAt: 10_000 + end };
}

describe("the critical path by actual times", () => {
  it("is the long subtask when a chain of four short ones runs beside it", () => {
    const timing = findCriticalPath([ran("s1", 0, 100), ran("s2", 101, 201, ["s1"]), ran("s3", 202, 302, ["s2"]), ran("s4", 303, 403, ["s3"]), ran("s5", 0, 410)]);
    expect(timing).toEqual({ startedAt: 10_000, endedAt: 10_410, makespanMs: 410, criticalPath: ["s5"], criticalPathMs: 410 });
  });

  it("is the chain when the chain ends last", () => {
    const timing = findCriticalPath([ran("s1", 0, 100), ran("s2", 100, 200, ["s1"]), ran("s3", 200, 300, ["s2"]), ran("s4", 300, 400, ["s3"]), ran("s5", 5, 350)]);
    expect(timing?.criticalPath).toEqual(["s1", "s2", "s3", "s4"]);
    expect(timing?.criticalPathMs).toBe(400);
    expect(timing?.makespanMs).toBe(400);
  });

  it("walks back through the dependency that ended last in a skewed diamond", () => {
    const timing = findCriticalPath([ran("a", 0, 50), ran("short", 50, 100, ["a"]), ran("long", 50, 650, ["a"]), ran("join", 650, 700, ["short", "long"]), ran("after", 100, 200, ["short"])]);
    expect(timing?.criticalPath).toEqual(["a", "long", "join"]);
    expect(timing?.criticalPathMs).toBe(700);
  });

  it("counts only the chain's work: gaps (a slot, a person, a review round) stay in the makespan", () => {
    const timing = findCriticalPath([ran("s1", 0, 100), ran("s2", 400, 450, ["s1"])]);
    expect(timing).toMatchObject({ makespanMs: 450, criticalPath: ["s1", "s2"], criticalPathMs: 150 });
  });

  it("leaves out subtasks that have not ended (running, pending, skipped) and dependencies that never ran", () => {
    const subtasks: TimedSubtask[] = [
      ran("s1", 0, 100),
      { id: "s2", dependsOn: ["s1"], startedAt: 10_100 },
      { id: "s3", dependsOn: ["s2"] },
      ran("s4", 20, 90, ["gone"]),
    ];
    expect(findCriticalPath(subtasks)).toEqual({ startedAt: 10_000, endedAt: 10_100, makespanMs: 100, criticalPath: ["s1"], criticalPathMs: 100 });
    expect(findCriticalPath([{ id: "s1", dependsOn: [] }])).toBeUndefined();
    expect(findCriticalPath([])).toBeUndefined();
  });

  it("settles ties by the earlier start, then by the order given", () => {
    expect(findCriticalPath([ran("late", 50, 100), ran("early", 0, 100)])?.criticalPath).toEqual(["early"]);
    expect(findCriticalPath([ran("x", 0, 100), ran("y", 0, 100)])?.criticalPath).toEqual(["x"]);
    expect(findCriticalPath([ran("p", 0, 100), ran("q", 0, 100), ran("r", 100, 150, ["q", "p"])])?.criticalPath).toEqual(["q", "r"]);
  });

  it("never loops on a dependency cycle in what it is given", () => {
    expect(findCriticalPath([ran("a", 0, 10, ["b"]), ran("b", 10, 20, ["a"])])?.criticalPath).toEqual(["a", "b"]);
  });
});

describe("the longest path by planned durations", () => {
  const plan = [
    { id: "s1", dependsOn: [] },
    { id: "s2", dependsOn: ["s1"] },
    { id: "s3", dependsOn: ["s2"] },
    { id: "s4", dependsOn: ["s3"] },
    { id: "s5", dependsOn: [] },
  ];

  it("picks the longer of a chain and a lone subtask", () => {
    const latency: Record<string, number> = { s1: 100, s2: 100, s3: 100, s4: 100, s5: 400 };
    expect(longestPath(plan, (id) => latency[id] ?? 0)).toEqual({ path: ["s1", "s2", "s3", "s4"], ms: 400 });
    latency.s5 = 401;
    expect(longestPath(plan, (id) => latency[id] ?? 0)).toEqual({ path: ["s5"], ms: 401 });
  });

  it("follows the heavier branch of a diamond", () => {
    const diamond = [
      { id: "a", dependsOn: [] },
      { id: "b", dependsOn: ["a"] },
      { id: "c", dependsOn: ["a"] },
      { id: "d", dependsOn: ["b", "c"] },
    ];
    const latency: Record<string, number> = { a: 10, b: 20, c: 300, d: 5 };
    expect(longestPath(diamond, (id) => latency[id] ?? 0)).toEqual({ path: ["a", "c", "d"], ms: 315 });
  });

  it("is empty for an empty plan and refuses a cycle", () => {
    expect(longestPath([], () => 1)).toEqual({ path: [], ms: 0 });
    expect(() => longestPath([{ id: "a", dependsOn: ["b"] }, { id: "b", dependsOn: ["a"] }], () => 1)).toThrow(/cycle/);
  });
});
