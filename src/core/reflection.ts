import type { CriticVerdict } from "./review.js";

/**
 * Reflection statistics (seed 001 §3.1): every critic verdict counted by type, with its outcome
 * and confidence. The type says what the review looked at: `validation`, the first review of a
 * plan's work; `correction`, a review after the critic sent named subtasks back to be redone;
 * `improvement`, a review after it asked for a different plan.
 */
export const REFLECTION_TYPES = ["validation", "correction", "improvement"] as const;
export type ReflectionType = (typeof REFLECTION_TYPES)[number];

/** The type of a verdict, from the run's verdict before it (none: the first review). */
export function reflectionTypeOf(previous: Pick<CriticVerdict, "replan" | "passed"> | undefined): ReflectionType {
  if (!previous) return "validation";
  return previous.replan ? "improvement" : "correction";
}

export interface ReflectionCounts {
  total: number;
  passed: number;
  failed: number;
  passRate: number;
  avgConfidence: number;
}

/** `troupe audit stats`'s and /metrics' reflection figures: totals and the same by type. */
export interface ReflectionStats extends ReflectionCounts {
  byType: Record<ReflectionType, ReflectionCounts>;
}

/** Counts from sums: rates and averages rounded to 3 places, 0 when there is nothing. */
export function reflectionCounts(total: number, passed: number, confidenceSum: number): ReflectionCounts {
  const round = (value: number): number => Math.round(value * 1000) / 1000;
  return { total, passed, failed: total - passed, passRate: total > 0 ? round(passed / total) : 0, avgConfidence: total > 0 ? round(confidenceSum / total) : 0 };
}
