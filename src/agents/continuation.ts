import { AIMessage, type BaseMessage, HumanMessage } from "@langchain/core/messages";
import { choiceId, type ModelCandidate, type ModelRoute } from "../providers/registry.js";
import { type CallOptions, type CallShape, callModel } from "./model-call.js";

/**
 * "Continue where you stopped": an answer cut off at the output limit — on a provider that cannot
 * be asked again with a larger one (Ollama, the offline and scripted models), or cut off even
 * then — is sent back as the model's own turn with a request to write only what comes next.
 * The pieces are joined (a restated overlap dropped) for a bounded number of rounds.
 */

/** Follow-up requests one cut-off answer may take; past them the answer is still cut off. */
export const CONTINUE_ROUNDS = 3;

export const CONTINUE_NUDGE = "Your answer was cut off at the output limit. Continue it exactly where it stopped: write only what comes next, without repeating anything or starting over.";
export const CONTINUE_JSON_NUDGE =
  "Your JSON answer was cut off at the output limit. Continue the JSON text exactly where it stopped: write only the characters that come next, with no fence and nothing before them, so that the two parts joined are one complete JSON value.";

/** The least overlap taken as a restatement rather than a coincidence, and the most looked for. */
const MIN_OVERLAP = 12;
const MAX_OVERLAP = 2_000;

/** `next` after `before`, without the start of `next` that only restates the end of `before` (a model that repeats its last words). */
export function joinContinuation(before: string, next: string): string {
  const most = Math.min(MAX_OVERLAP, before.length, next.length);
  for (let length = most; length >= MIN_OVERLAP; length -= 1) {
    if (before.endsWith(next.slice(0, length))) return before + next.slice(length);
  }
  return before + next;
}

function textOf(message: AIMessage): string {
  return typeof message.content === "string" ? message.content : message.text;
}

export interface ContinuedAnswer {
  text: string;
  /** Still cut off after the last round (or a round that added nothing). */
  cutOff: boolean;
  rounds: number;
}

/**
 * Asks the model to go on from `partial` (the text it wrote before it was cut off), up to
 * CONTINUE_ROUNDS times. Each round is a call of its own (budget, retries, fallbacks), noted in
 * the trace. `json`: the partial is JSON text, continued as text (no forced call); `cutBy`: the
 * model whose answer was cut off.
 */
export async function continueAnswer(
  route: ModelRoute,
  messages: BaseMessage[],
  partial: string,
  options: CallOptions,
  { json = false, shape = {}, cutBy }: { json?: boolean; shape?: CallShape; cutBy: ModelCandidate },
): Promise<ContinuedAnswer> {
  let text = partial;
  let model = choiceId(cutBy.choice);
  for (let round = 1; round <= CONTINUE_ROUNDS; round += 1) {
    options.meter.note({
      kind: "retry",
      role: route.role,
      model,
      attempt: round,
      reason: `the answer was cut off at the output limit after ${text.length} characters; asked to continue where it stopped (round ${round} of ${CONTINUE_ROUNDS})`,
      delayMs: 0,
      ...(options.subtaskId ? { subtaskId: options.subtaskId } : {}),
      at: Date.now(),
    });
    const reply = await callModel(route, [...messages, new AIMessage(text), new HumanMessage(json ? CONTINUE_JSON_NUDGE : CONTINUE_NUDGE)], options, shape);
    model = choiceId(reply.candidate.choice);
    const piece = textOf(reply.message);
    text = joinContinuation(text, piece);
    if (reply.cutOff !== true) return { text, cutOff: false, rounds: round };
    if (piece.trim() === "") return { text, cutOff: true, rounds: round };
  }
  return { text, cutOff: true, rounds: CONTINUE_ROUNDS };
}
