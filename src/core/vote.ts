import { z } from "zod";
import { InputError } from "./errors.js";
import { LIMITS } from "./limits.js";

/**
 * Collaborative decisions: voters each choose one option with a confidence and a reason, and
 * the decision is the option with the largest (weighted) share of the voters — when that share
 * reaches the threshold and no other option has as much. A tie, a share below the threshold, or
 * nobody able to vote is reported as such, never broken by chance or order.
 */

/** One vote as a voter's model returns it. `choice` is an enum of the options (built per decision). */
export interface VoteAnswer {
  choice: string;
  confidence: number;
  reason: string;
}

const built = new Map<string, z.ZodType<VoteAnswer>>();

/**
 * The vote schema for these options: strict-compatible (every property required, nothing else),
 * `choice` an enum, so a model in strict mode can only name an option. The same options give the
 * same schema object, so its JSON schema and structured runnables are made once.
 */
export function voteSchema(options: readonly string[]): z.ZodType<VoteAnswer> {
  const key = JSON.stringify(options);
  let schema = built.get(key);
  if (!schema) {
    schema = z
      .object({
        choice: z.enum(options as [string, ...string[]]).describe("the option you choose"),
        confidence: z.number().min(0).max(1).describe("how sure you are, from 0 to 1"),
        reason: z.string().min(1).max(1_000).describe("why, in one or two sentences"),
      })
      .strict();
    if (built.size >= 32) built.delete(built.keys().next().value as string);
    built.set(key, schema);
  }
  return schema;
}

/** A voter's vote as the decision reports it; `choice` is null when the voter abstained (it could not judge, or its call failed). */
export const VoteRecord = z.object({
  voter: z.string(),
  /** The model that voted (`provider:model`), when one did. */
  model: z.string().optional(),
  choice: z.string().nullable(),
  confidence: z.number().min(0).max(1),
  reason: z.string(),
  weight: z.number().min(0),
  abstained: z.boolean().optional(),
});
export type VoteRecord = z.infer<typeof VoteRecord>;

export const DECISION_OUTCOMES = ["decided", "tie", "no_consensus", "no_votes"] as const;
export type DecisionOutcome = (typeof DECISION_OUTCOMES)[number];

/** What a vote came to. */
export const DecisionResult = z.object({
  question: z.string(),
  options: z.array(z.string()),
  /** The option decided on; null for a tie, no consensus, or no votes. */
  decision: z.string().nullable(),
  /** The leading option's share of the voters' total weight (abstentions count in the total), 0–1. */
  consensus: z.number(),
  /** Whether the share reached the threshold with no other option level with it. */
  reached: z.boolean(),
  threshold: z.number(),
  outcome: z.enum(DECISION_OUTCOMES),
  /** The option with the most weight, or the options level at the top (a tie); empty when nobody voted. */
  leading: z.array(z.string()),
  votes: z.array(VoteRecord),
  /** Votes per option (every option listed, 0 when none). */
  counts: z.record(z.string(), z.number()),
  /** Weight per option, when voters have weights other than 1. */
  weighted: z.record(z.string(), z.number()),
});
export type DecisionResult = z.infer<typeof DecisionResult>;

/** A voter's weight: relative (2 counts twice 1), so at most 100 — as in the config file — and never a sum that overflows. */
const Weight = z.number().min(0, { error: "a weight cannot be negative" }).max(100, { error: "a weight is at most 100 (weights are relative: 2 counts twice as much as 1)" });

/** The consensus threshold: a share in (0, 1]. */
export const ConsensusThreshold = z
  .number({ error: "the threshold must be a number" })
  .gt(0, { error: "the threshold must be more than 0 and at most 1" })
  .max(1, { error: "the threshold must be more than 0 and at most 1" });

const round = (value: number): number => Math.round(value * 1000) / 1000;

/**
 * Counts the votes. Consensus is the leading option's weight over the total weight of every
 * voter, abstentions included — so a voter that could not vote never raises the share of the
 * others. `reached` when that share is at least `threshold` and no other option ties it.
 */
export function tallyVotes(question: string, options: readonly string[], votes: readonly VoteRecord[], threshold: number = LIMITS.consensusThreshold): DecisionResult {
  const counts = Object.fromEntries(options.map((option) => [option, 0])) as Record<string, number>;
  const weighted = Object.fromEntries(options.map((option) => [option, 0])) as Record<string, number>;
  let total = 0;
  // Summed relative to the largest weight, so no sum of finite weights overflows to Infinity (and a share to NaN).
  const scale = Math.max(0, ...votes.map((vote) => vote.weight)) || 1;
  for (const vote of votes) {
    total += vote.weight / scale;
    if (vote.choice === null || !(vote.choice in counts)) continue;
    counts[vote.choice] = (counts[vote.choice] ?? 0) + 1;
    weighted[vote.choice] = (weighted[vote.choice] ?? 0) + vote.weight / scale;
  }
  const top = Math.max(0, ...Object.values(weighted));
  const leading = top > 0 ? options.filter((option) => weighted[option] === top) : [];
  const consensus = total > 0 ? round(top / total) : 0;
  const base = { question, options: [...options], consensus, threshold, leading, votes: [...votes], counts, weighted: Object.fromEntries(Object.entries(weighted).map(([option, weight]) => [option, round(weight * scale)])) };
  if (leading.length === 0) return { ...base, decision: null, reached: false, outcome: "no_votes" };
  if (leading.length > 1) return { ...base, decision: null, reached: false, outcome: "tie" };
  const reached = consensus >= threshold;
  return { ...base, decision: reached ? (leading[0] as string) : null, reached, outcome: reached ? "decided" : "no_consensus" };
}

/** The result in one line: `decided "yes" (consensus 0.75 ≥ 0.6)`, `tie between a and b (0.5 each)`, … */
export function describeDecision(result: DecisionResult): string {
  switch (result.outcome) {
    case "decided":
      return `decided "${result.decision}" (consensus ${result.consensus} ≥ ${result.threshold})`;
    case "tie":
      return `tie between ${result.leading.map((option) => `"${option}"`).join(" and ")} (${result.consensus} each): no decision`;
    case "no_consensus":
      return `no consensus: "${result.leading[0]}" leads with ${result.consensus}, below the threshold ${result.threshold}`;
    case "no_votes":
      return "no decision: no voter could vote";
  }
}

/** A decision asked of troupe: `troupe decide`, `POST /api/v1/decide`, `Troupe.decide`. */
export const DecideRequest = z
  .object({
    question: z
      .string({ error: "the question must be a string" })
      .trim()
      .min(1, { error: "the question is empty" })
      .max(LIMITS.taskMaxChars, { error: `the question is longer than ${LIMITS.taskMaxChars} characters` }),
    options: z
      .array(z.string().trim().min(1, { error: "an option is empty" }).max(100, { error: "an option is longer than 100 characters" }))
      .min(2, { error: "give at least two options" })
      .max(LIMITS.decideOptionsMax, { error: `give at most ${LIMITS.decideOptionsMax} options` })
      .refine((options) => new Set(options).size === options.length, { error: "the options must differ" }),
    /** How many voters (samples of the voter model, or the config's first N), or which: agent names and `provider:model` ids. */
    voters: z
      .union([
        z.number().int().min(1, { error: `voters must be between 1 and ${LIMITS.votersMax}` }).max(LIMITS.votersMax, { error: `voters must be between 1 and ${LIMITS.votersMax}` }),
        z.array(z.string().trim().min(1)).min(1).max(LIMITS.votersMax, { error: `at most ${LIMITS.votersMax} voters` }),
      ])
      .optional(),
    threshold: ConsensusThreshold.optional(),
    /** Each voter's weight, in the voters' order, or by voter name (1 when not given). */
    weights: z.union([z.array(Weight).min(1), z.record(z.string(), Weight)]).optional(),
  })
  .strict();
export type DecideRequest = z.infer<typeof DecideRequest>;
export type DecideRequestInput = z.input<typeof DecideRequest>;

/** The request checked, as an InputError naming the first problem. */
export function parseDecideRequest(input: unknown): DecideRequest {
  const parsed = DecideRequest.safeParse(input);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? `${issue.path.join(".")}: ` : "";
    throw new InputError("invalid_request", `${where}${issue?.message ?? "invalid request"}`, { path: issue?.path.join(".") });
  }
  return parsed.data;
}
