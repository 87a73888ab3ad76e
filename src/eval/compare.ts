import type { EarlierResults, EvalResults } from "./results.js";

export type CaseChange = "newly passing" | "newly failing" | "still passing" | "still failing" | "new" | "removed";

export interface CaseComparison {
  id: string;
  change: CaseChange;
  /** Prompt + completion tokens now minus before (null when the case is only on one side). */
  tokensDelta: number | null;
  costDelta: number | null;
}

/** What changed between an earlier results file and this eval, per case and in total. */
export interface Comparison {
  /** The earlier file, as given. */
  against: string;
  passRate: { before: number; after: number; delta: number };
  newlyPassing: string[];
  newlyFailing: string[];
  added: string[];
  removed: string[];
  /** Over the cases on both sides, so a new or removed case does not read as a change in cost. */
  tokens: { before: number; after: number; delta: number };
  costUsd: { before: number; after: number; delta: number };
  cases: CaseComparison[];
}

const tokensOf = (metrics: { promptTokens: number; completionTokens: number } | undefined): number => (metrics ? metrics.promptTokens + metrics.completionTokens : 0);
const round = (value: number): number => Math.round(value * 1e6) / 1e6;

/** Compares this eval with an earlier one, case by case (by id). */
export function compareResults(earlier: EarlierResults, now: EvalResults, against: string): Comparison {
  const before = new Map(earlier.cases.map((item) => [item.id, item]));
  const after = new Map(now.cases.map((item) => [item.id, item]));
  const cases: CaseComparison[] = [];
  const totals = { tokensBefore: 0, tokensAfter: 0, costBefore: 0, costAfter: 0 };
  for (const item of now.cases) {
    const old = before.get(item.id);
    if (!old) {
      cases.push({ id: item.id, change: "new", tokensDelta: null, costDelta: null });
      continue;
    }
    const change: CaseChange = old.passed ? (item.passed ? "still passing" : "newly failing") : item.passed ? "newly passing" : "still failing";
    const tokensBefore = tokensOf(old.metrics);
    const tokensAfter = tokensOf(item.metrics);
    const costBefore = old.metrics?.costUsd ?? 0;
    totals.tokensBefore += tokensBefore;
    totals.tokensAfter += tokensAfter;
    totals.costBefore += costBefore;
    totals.costAfter += item.metrics.costUsd;
    cases.push({ id: item.id, change, tokensDelta: old.metrics ? tokensAfter - tokensBefore : null, costDelta: old.metrics ? round(item.metrics.costUsd - costBefore) : null });
  }
  for (const old of earlier.cases) if (!after.has(old.id)) cases.push({ id: old.id, change: "removed", tokensDelta: null, costDelta: null });
  const named = (change: CaseChange): string[] => cases.filter((item) => item.change === change).map((item) => item.id);
  return {
    against,
    passRate: { before: earlier.passRate, after: now.passRate, delta: round(now.passRate - earlier.passRate) },
    newlyPassing: named("newly passing"),
    newlyFailing: named("newly failing"),
    added: named("new"),
    removed: named("removed"),
    tokens: { before: totals.tokensBefore, after: totals.tokensAfter, delta: totals.tokensAfter - totals.tokensBefore },
    costUsd: { before: round(totals.costBefore), after: round(totals.costAfter), delta: round(totals.costAfter - totals.costBefore) },
    cases,
  };
}
