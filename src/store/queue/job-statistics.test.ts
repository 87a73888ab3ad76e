import { describe, expect, it } from "vitest";
import { MIN_CHANGES, statisticsStale } from "./job-statistics.js";

describe("statisticsStale", () => {
  it("is stale once the rows changed since the last statistics pass twice the waiting jobs the planner counts on", () => {
    expect(statisticsStale({ changedSinceAnalyze: 20_000, estimatedWaiting: 2 })).toBe(true);
    expect(statisticsStale({ changedSinceAnalyze: 20_000, estimatedWaiting: 9_000 })).toBe(true);
    expect(statisticsStale({ changedSinceAnalyze: 20_000, estimatedWaiting: 10_000 })).toBe(true);
    expect(statisticsStale({ changedSinceAnalyze: 20_000, estimatedWaiting: 10_001 })).toBe(false);
  });

  it("never analyzes for a handful of changes, whatever the planner believes", () => {
    expect(statisticsStale({ changedSinceAnalyze: MIN_CHANGES - 1, estimatedWaiting: 0 })).toBe(false);
    expect(statisticsStale({ changedSinceAnalyze: MIN_CHANGES, estimatedWaiting: 0 })).toBe(true);
  });
});
