import { describe, expect, it } from "vitest";
import type { RunEvent, StoredEvent } from "./events.js";
import { liveSubtasks, withLiveResults } from "./live-results.js";

/** Events stored at the given times (ms). */
function stored(...entries: Array<[number, RunEvent]>): StoredEvent[] {
  return entries.map(([at, event], index) => ({ ...event, at, seq: index + 1, runId: "run-1" }));
}

const start = (subtaskId: string, attempt = 1): RunEvent => ({ type: "subtask-start", subtaskId, label: subtaskId, agent: "research", attempt });
const end = (subtaskId: string, status: "done" | "failed" = "done", summary = `result of ${subtaskId}`): RunEvent => ({ type: "subtask-end", subtaskId, status, durationMs: 0, summary });

describe("a running run's subtasks by its events", () => {
  it("gives the subtasks that ended with their times and those still running with their start", () => {
    const live = liveSubtasks(stored([10, start("s1")], [12, start("s2")], [110, end("s1")], [111, start("s3")], [112, { type: "plan-ready", attempt: 1, subtasks: [] }]));
    expect(live.ended).toEqual({ s1: { status: "done", attempts: 1, startedAt: 10, endedAt: 110, summary: "result of s1" } });
    expect(live.runningSince).toEqual({ s2: 12, s3: 111 });
  });

  it("counts a map's items, keeps its failed ones, and skips", () => {
    const live = liveSubtasks(
      stored(
        [10, start("m")],
        [11, { type: "map-item", subtaskId: "m", index: 0, total: 3, status: "success", durationMs: 1 }],
        [12, { type: "map-item", subtaskId: "m", index: 1, total: 3, status: "error", durationMs: 1, error: "bad input" }],
        [13, { type: "map-item", subtaskId: "m", index: 2, total: 3, status: "success", durationMs: 1 }],
        [14, end("m", "done", "2/3 items succeeded")],
        [15, { type: "subtask-skip", subtaskId: "after", reason: "not run: x failed" }],
      ),
    );
    expect(live.ended.m?.map).toEqual({ overallStatus: "PARTIAL_SUCCESS", total: 3, succeeded: 2, failed: 1, failures: [{ index: 1, input: "item 2", error: "bad input" }] });
    expect(live.ended.after).toEqual({ status: "skipped", attempts: 0, error: "not run: x failed" });
    expect(live.runningSince).toEqual({});
  });

  it("forgets what ended before a review: a subtask sent back is pending until it starts again", () => {
    const verdict: RunEvent = { type: "critic-verdict", verdict: { iteration: 1, passed: false, confidence: 0.4, scores: { accuracy: 0.4, completeness: 0.4, relevance: 0.4, logic: 0.4 }, issues: [], redo: ["s1"], replan: false } };
    const live = liveSubtasks(stored([10, start("s1")], [20, end("s1")], [30, verdict], [40, start("s1", 2)]));
    expect(live.ended).toEqual({});
    expect(live.runningSince).toEqual({ s1: 40 });
  });

  it("keeps what ran before a streamed plan was complete, and forgets what was dropped with an invalid one", () => {
    const kept = liveSubtasks(stored([10, start("s1")], [20, end("s1")], [30, { type: "plan-ready", attempt: 1, subtasks: [] }]));
    expect(Object.keys(kept.ended)).toEqual(["s1"]);
    const dropped = liveSubtasks(
      stored([10, start("s1")], [20, end("s1")], [21, start("s2")], [30, { type: "subtask-skip", subtaskId: "s1", reason: "dropped: the plan is not valid" }], [30, { type: "subtask-skip", subtaskId: "s2", reason: "dropped: the plan is not valid" }]),
    );
    expect(dropped).toEqual({ ended: {}, runningSince: {} });
    const invalid = liveSubtasks(stored([10, start("s1")], [20, end("s1")], [25, start("s2")], [30, { type: "plan-invalid", attempt: 1, errors: ["cycle"] }]));
    expect(invalid).toEqual({ ended: {}, runningSince: {} });
  });

  it("fills in only what the state still has as pending", () => {
    const live = liveSubtasks(stored([10, start("s1")], [20, end("s1")], [10, start("s2")], [30, end("s2", "failed")]));
    const merged = withLiveResults({ s1: { status: "pending", attempts: 0 }, s2: { status: "done", attempts: 1, startedAt: 9, endedAt: 29 } }, live);
    expect(merged.s1).toMatchObject({ status: "done", startedAt: 10, endedAt: 20 });
    expect(merged.s2).toEqual({ status: "done", attempts: 1, startedAt: 9, endedAt: 29 });
  });
});
