import { describe, expect, it } from "vitest";
import { combinePanel, type CriticVerdict, toVerdict } from "./review.js";

const verdict = (score: number, fields: Partial<CriticVerdict> = {}): CriticVerdict => ({ ...toVerdict({ scores: { accuracy: score, completeness: score, relevance: score, logic: score }, issues: [], redo: [], replan: false }, 1), ...fields });

describe("a review panel combined by vote", () => {
  it("passes on a majority of passes, with the reviewers' mean scores", () => {
    const combined = combinePanel([{ reviewer: "r1", verdict: verdict(0.9) }, { reviewer: "r2", verdict: verdict(0.8) }, { reviewer: "r3", verdict: verdict(0.2, { passed: false, issues: ["wrong"], redo: ["s1"] }) }], 1);
    expect(combined).toMatchObject({ passed: true, redo: [], replan: false, panel: { decision: "pass", counts: { pass: 2, redo: 1, replan: 0 } } });
    expect(combined.scores.accuracy).toBeCloseTo(0.633, 3);
  });

  it("redoes what the redo voters named, and replans when that wins", () => {
    const redo = combinePanel([{ reviewer: "r1", verdict: verdict(0.3, { passed: false, issues: ["s1 is off"], redo: ["s1"] }) }, { reviewer: "r2", verdict: verdict(0.3, { passed: false, redo: ["s2"] }) }, { reviewer: "r3", verdict: verdict(0.9) }], 1);
    expect(redo).toMatchObject({ passed: false, redo: ["s1", "s2"], issues: ["s1 is off"], panel: { decision: "redo" } });
    const replan = combinePanel([{ reviewer: "r1", verdict: verdict(0.1, { passed: false, replan: true, issues: ["wrong plan"] }) }, { reviewer: "r2", verdict: verdict(0.1, { passed: false, replan: true }) }], 1);
    expect(replan).toMatchObject({ passed: false, replan: true, issues: ["wrong plan"] });
  });

  it("does not pass without a decision: a tie, or reviewers that failed, who abstain", () => {
    const tie = combinePanel([{ reviewer: "r1", verdict: verdict(0.9) }, { reviewer: "r2", verdict: verdict(0.2, { passed: false, redo: ["s1"], issues: ["s1 is off"] }) }], 1);
    expect(tie).toMatchObject({ passed: false, redo: ["s1"], panel: { outcome: "tie" } });
    expect(tie.issues[0]).toMatch(/^the review panel did not agree \(tie between "pass" and "redo"/);
    const failed = combinePanel([{ reviewer: "r1", verdict: verdict(0.9) }, { reviewer: "r2", error: "timeout" }, { reviewer: "r3", error: "timeout" }], 1);
    expect(failed).toMatchObject({ passed: false, panel: { outcome: "no_consensus", consensus: 0.333 } });
    expect(failed.panel?.votes[1]).toMatchObject({ voter: "r2", choice: null, abstained: true, reason: "gave no verdict: timeout" });
  });
});
