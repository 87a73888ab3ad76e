import { HumanMessage, SystemMessage } from "@langchain/core/messages";
import { errorMessage } from "../core/errors.js";
import { roleLine, SECTIONS, STRUCTURED_OUTPUT, section } from "../core/prompt-protocol.js";
import { truncate } from "../core/text.js";
import { type DecisionResult, tallyVotes, type VoteRecord, voteSchema } from "../core/vote.js";
import { choiceId, type ModelRoute } from "../providers/registry.js";
import { type CallOptions, type ModelUsage, UsageMeter } from "./model-call.js";
import { invokeStructured } from "./structured-output.js";

/** One voter: a name, the model it votes with, its weight, and the role it votes in (an agent's). */
export interface Voter {
  name: string;
  route: ModelRoute;
  weight: number;
  /** The agent it speaks for, when it is one: its description and instructions frame its judgement. */
  persona?: { agent: string; description: string; instructions: string; capabilities: readonly string[] };
}

export interface DecideInput {
  question: string;
  options: readonly string[];
  voters: readonly Voter[];
  threshold: number;
  signal?: AbortSignal;
}

/** What `decide` returns: the decision and the model calls it took. */
export type Decision = DecisionResult & { usage: ModelUsage };

/** Why the offline model never votes. */
export const OFFLINE_CANNOT_VOTE =
  "troupe's offline rule-based model cannot judge an open question; a vote needs a language model (--provider, or a voter's model in the config)";

export function voterPrompt(): string {
  return [
    roleLine("voter"),
    "Decide the question by choosing exactly one of the options. Judge it on its merits, from what the question says and what you know.",
    "If the question lacks something you would need, choose the option that is best on what is given and lower your confidence.",
    "Give your confidence from 0 (a guess) to 1 (certain) and the reason in one or two sentences.",
    `Answer by calling ${STRUCTURED_OUTPUT.vote}.`,
  ].join("\n");
}

function voteMessage(input: DecideInput, voter: Voter, index: number): string {
  const parts = [section(SECTIONS.question, truncate(input.question, 5_000)), section(SECTIONS.options, input.options.map((option) => `- ${option}`).join("\n"))];
  if (voter.persona) {
    const capabilities = voter.persona.capabilities.length > 0 ? `\nCapabilities: ${voter.persona.capabilities.join(", ")}` : "";
    parts.push(section("Your role", truncate(`You vote as the ${voter.persona.agent} agent: ${voter.persona.description}${capabilities}\n${voter.persona.instructions}`, 2_000)));
  }
  parts.push(section(SECTIONS.panel, `You are voter ${index + 1} of ${input.voters.length}; vote on your own judgement. The votes are combined, and the decision needs ${Math.round(input.threshold * 100)}% of them.`));
  return parts.join("\n\n");
}

/**
 * One voter's vote through structured output (`choice` an enum of the options, strict where the
 * provider has it). The offline model is left out of the voter's route: it cannot judge an open
 * question, so a voter with nothing else abstains, saying so — it never makes up a vote. A voter
 * whose call fails abstains with the reason.
 */
export async function castVote(input: DecideInput, voter: Voter, index: number, options: CallOptions): Promise<VoteRecord> {
  const candidates = voter.route.candidates.filter((candidate) => candidate.choice.provider !== "offline");
  const first = candidates[0];
  const base = { voter: voter.name, weight: voter.weight };
  if (!first) return { ...base, model: voter.route.candidates[0] ? choiceId(voter.route.candidates[0].choice) : "offline", choice: null, confidence: 0, reason: OFFLINE_CANNOT_VOTE, abstained: true };
  const model = choiceId(first.choice);
  try {
    const answer = await invokeStructured(
      {
        route: { ...voter.route, candidates },
        schema: voteSchema(input.options),
        name: STRUCTURED_OUTPUT.vote,
        description: "Submit your vote: the option you choose, your confidence and your reason.",
        messages: [new SystemMessage(voterPrompt()), new HumanMessage(voteMessage(input, voter, index))],
      },
      options,
    );
    return { ...base, model, choice: answer.choice, confidence: Math.round(answer.confidence * 1000) / 1000, reason: answer.reason };
  } catch (error) {
    if (options.signal?.aborted) throw error;
    return { ...base, model, choice: null, confidence: 0, reason: `the vote could not be cast: ${errorMessage(error).split("\n")[0]}`, abstained: true };
  }
}

/**
 * A collaborative decision: every voter votes at once, and the votes are counted by
 * `tallyVotes` — the (weighted) share of the leading option against the threshold; a tie or a
 * share below it is no decision, reported as such.
 */
export async function decide(input: DecideInput): Promise<Decision> {
  const meter = new UsageMeter();
  const options: CallOptions = { meter, ...(input.signal ? { signal: input.signal } : {}) };
  const votes = await Promise.all(input.voters.map((voter, index) => castVote(input, voter, index, options)));
  return { ...tallyVotes(input.question, input.options, votes, input.threshold), usage: { ...meter.usage } };
}
