import { z } from "zod";
import { CRITIC_WEIGHTS, LIMITS } from "./limits.js";
import { type DecisionResult, describeDecision, tallyVotes, type VoteRecord } from "./vote.js";

const score = z.number().min(0).max(1);

/** The critic's four scores, each between 0 and 1. */
export type CriticScores = z.infer<typeof CriticScores>;
export const CriticScores = z
  .object({
    accuracy: score,
    completeness: score,
    relevance: score,
    logic: score,
  });

/** What the critic model returns. Confidence and pass/fail are computed by code from the scores. */
export const CriticOutput = z.object({
  scores: CriticScores,
  issues: z.array(z.string()).default([]).describe("concrete problems found, one sentence each"),
  redo: z.array(z.string()).default([]).describe("ids of subtasks to run again"),
  replan: z.boolean().default(false).describe("true when the plan itself is wrong and needs to be made again"),
});
export type CriticOutput = z.infer<typeof CriticOutput>;

export interface CriticVerdict extends CriticOutput {
  iteration: number;
  confidence: number;
  passed: boolean;
  /** With a panel of reviewers: each one's verdict as a vote (pass, redo, replan) and what the vote came to. */
  panel?: DecisionResult;
}

/** Weighted confidence (0.4 accuracy, 0.3 completeness, 0.2 relevance, 0.1 logic), rounded to 3 places. */
export function confidenceOf(scores: CriticOutput["scores"]): number {
  const total =
    scores.accuracy * CRITIC_WEIGHTS.accuracy +
    scores.completeness * CRITIC_WEIGHTS.completeness +
    scores.relevance * CRITIC_WEIGHTS.relevance +
    scores.logic * CRITIC_WEIGHTS.logic;
  return Math.round(total * 1000) / 1000;
}

export function toVerdict(output: CriticOutput, iteration: number): CriticVerdict {
  const confidence = confidenceOf(output.scores);
  return { ...output, iteration, confidence, passed: confidence >= LIMITS.passThreshold };
}

/** What each reviewer of a panel votes: its verdict passes, sends subtasks back, or asks for a new plan. */
export const PANEL_CHOICES = ["pass", "redo", "replan"] as const;
export type PanelChoice = (typeof PANEL_CHOICES)[number];

/** One reviewer's part in a panel: its verdict, or why it gave none. */
export interface PanelReview {
  reviewer: string;
  model?: string;
  verdict?: CriticVerdict;
  error?: string;
}

export function panelChoiceOf(verdict: CriticVerdict): PanelChoice {
  if (verdict.passed) return "pass";
  return verdict.replan ? "replan" : "redo";
}

const unique = (items: string[]): string[] => [...new Set(items)];

/**
 * A panel's verdicts combined by vote (`tallyVotes`, every reviewer's weight 1, a reviewer that
 * failed abstains): the scores are the reviewers' means, and what the vote decided is done —
 * pass; redo the subtasks the reviewers who voted redo named; or re-plan. Without a decision (a
 * tie, a share below the threshold) the work does not pass: the subtasks any reviewer named are
 * redone, or, when none were named and some asked for it, a new plan is made.
 */
export function combinePanel(reviews: readonly PanelReview[], iteration: number, threshold: number = LIMITS.consensusThreshold): CriticVerdict {
  const votes: VoteRecord[] = reviews.map((review) => {
    const base = { voter: review.reviewer, weight: 1, ...(review.model ? { model: review.model } : {}) };
    if (!review.verdict) return { ...base, choice: null, confidence: 0, reason: `gave no verdict: ${review.error ?? "unknown"}`, abstained: true };
    const { verdict } = review;
    const reason = verdict.issues[0] ?? (verdict.passed ? "the work passes" : "the work does not pass");
    return { ...base, choice: panelChoiceOf(verdict), confidence: verdict.confidence, reason };
  });
  const panel = tallyVotes("Does the work pass the review?", PANEL_CHOICES, votes, threshold);
  const verdicts = reviews.flatMap((review) => (review.verdict ? [review.verdict] : []));
  const mean = (key: keyof CriticScores): number => (verdicts.length === 0 ? 0 : Math.round((verdicts.reduce((sum, verdict) => sum + verdict.scores[key], 0) / verdicts.length) * 1000) / 1000);
  const scores = { accuracy: mean("accuracy"), completeness: mean("completeness"), relevance: mean("relevance"), logic: mean("logic") };
  const by = (choice: PanelChoice) => verdicts.filter((verdict) => panelChoiceOf(verdict) === choice);
  const issuesOf = (group: CriticVerdict[]): string[] => unique(group.flatMap((verdict) => verdict.issues));
  const redoOf = (group: CriticVerdict[]): string[] => unique(group.flatMap((verdict) => verdict.redo));
  const confidence = confidenceOf(scores);
  const base = { scores, iteration, confidence, panel };
  switch (panel.decision) {
    case "pass":
      return { ...base, issues: issuesOf(by("pass")), redo: [], replan: false, passed: true };
    case "redo":
      return { ...base, issues: issuesOf(by("redo")), redo: redoOf(by("redo")), replan: false, passed: false };
    case "replan":
      return { ...base, issues: issuesOf(by("replan")), redo: [], replan: true, passed: false };
    default: {
      const failing = verdicts.filter((verdict) => !verdict.passed);
      const redo = redoOf(by("redo"));
      const issues = [`the review panel did not agree (${describeDecision(panel)}), so the work does not pass`, ...issuesOf(failing)];
      return { ...base, issues, redo, replan: redo.length === 0 && by("replan").length > 0, passed: false };
    }
  }
}
