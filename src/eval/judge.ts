import { HumanMessage, SystemMessage } from "@langchain/core/messages";
import { z } from "zod";
import { type CallOptions, UsageMeter } from "../agents/model-call.js";
import { invokeStructured } from "../agents/structured-output.js";
import { errorMessage } from "../core/errors.js";
import { roleLine, section } from "../core/prompt-protocol.js";
import { truncate } from "../core/text.js";
import { choiceId, type ModelSet, routeFor } from "../providers/registry.js";
import type { JudgeOutcome } from "./results.js";

/** The judge's answer: a strict-compatible object (every property required, nothing else). */
export const JudgeVerdict = z
  .object({
    score: z.number().min(0).max(1).describe("how well the answer meets the rubric, from 0 (not at all) to 1 (fully)"),
    reason: z.string().min(1).max(1_000).describe("why, in one or two sentences that name what the answer does or lacks"),
  })
  .strict();
export type JudgeVerdict = z.infer<typeof JudgeVerdict>;

export const JUDGE_OUTPUT = "submit_judgement";
const ANSWER_MAX_CHARS = 12_000;

export function judgePrompt(): string {
  return [
    roleLine("judge"),
    "Judge whether the answer given to a task meets the rubric. Read only the answer as written; do not redo the task.",
    "Score from 0 (does not meet the rubric at all) to 1 (meets it fully); partial credit in between. Give the reason in one or two sentences.",
    `Answer by calling ${JUDGE_OUTPUT}.`,
  ].join("\n");
}

export interface JudgeInput {
  task: string;
  answer: string | null;
  rubric: string;
  minScore: number;
  signal?: AbortSignal;
}

/** Why the offline model is never asked to judge. */
export const OFFLINE_CANNOT_JUDGE =
  "the critic's model is troupe's offline rule-based model, which cannot judge an answer against a rubric; run the suite with a real provider (--provider) to judge it";

/**
 * Judges an answer against a rubric with the critic's model (and its fallbacks), leaving out
 * the offline model: it checks rules, and a score from it would only pretend to judge. With no
 * other model the outcome is `judged: false`, saying so.
 */
export async function judgeAnswer(models: ModelSet, input: JudgeInput): Promise<JudgeOutcome> {
  const base = { rubric: input.rubric, minScore: input.minScore };
  const route = routeFor(models, "critic");
  const candidates = route.candidates.filter((candidate) => candidate.choice.provider !== "offline");
  const first = candidates[0];
  if (!first) return { ...base, judged: false, reason: OFFLINE_CANNOT_JUDGE };
  if (input.answer === null || input.answer.trim() === "") {
    return { ...base, judged: true, score: 0, passed: false, reason: "the run gave no answer to judge", model: choiceId(first.choice) };
  }
  const messages = [
    new SystemMessage(judgePrompt()),
    new HumanMessage([section("Task", input.task), section("Answer", truncate(input.answer, ANSWER_MAX_CHARS)), section("Rubric", input.rubric)].join("\n\n")),
  ];
  // The judge's calls are metered apart from the run's, and have no budget of their own.
  const meter = new UsageMeter();
  const options: CallOptions = { meter, ...(input.signal ? { signal: input.signal } : {}) };
  const usage = () => ({ ...meter.usage });
  try {
    const verdict = await invokeStructured({ route: { ...route, candidates }, schema: JudgeVerdict, name: JUDGE_OUTPUT, description: "Submit the score and the reason.", messages }, options);
    const score = Math.round(verdict.score * 1000) / 1000;
    return { ...base, judged: true, score, passed: score >= input.minScore, reason: verdict.reason, model: choiceId(first.choice), usage: usage() };
  } catch (error) {
    // A judge that could not answer is a failed expectation, never a pass.
    return { ...base, judged: true, score: 0, passed: false, reason: `the judge could not answer: ${errorMessage(error).split("\n")[0]}`, model: choiceId(first.choice), usage: usage() };
  }
}
