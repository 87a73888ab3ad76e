import { z } from "zod";
import { CRITIC_WEIGHTS, LIMITS } from "./limits.js";

const score = z.number().min(0).max(1);

/** The critic's four scores, each between 0 and 1. */
export const CriticScores = z
  .object({
    accuracy: score.describe("are the results correct, 0..1"),
    completeness: score.describe("does the work cover the whole task, 0..1"),
    relevance: score.describe("does the work address what was asked, 0..1"),
    logic: score.describe("is the reasoning between subtasks consistent, 0..1"),
  })
  .describe("scores between 0 and 1");

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
