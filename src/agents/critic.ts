import { HumanMessage, SystemMessage } from "@langchain/core/messages";
import { CRITIC_WEIGHTS, LIMITS } from "../core/limits.js";
import type { ModelRoute } from "../providers/registry.js";
import { roleLine, SECTIONS, STRUCTURED_OUTPUT, section } from "../core/prompt-protocol.js";
import { CriticOutput } from "../core/review.js";
import type { CallOptions } from "./model-call.js";
import { invokeStructured } from "./structured-output.js";

/** A subtask outcome as the critic and the synthesizer see it. */
export interface OutcomeView {
  id: string;
  label: string;
  agent: string;
  status: string;
  attempts: number;
  summary?: string;
  error?: string;
}

export interface CriticInput {
  model: ModelRoute;
  task: string;
  outcomes: OutcomeView[];
  iteration: number;
  maxIterations: number;
}

export function criticPrompt(): string {
  const weights = Object.entries(CRITIC_WEIGHTS)
    .map(([name, weight]) => `${name} (${weight})`)
    .join(", ");
  return [
    roleLine("critic"),
    "Review the work done on the task. Score each dimension from 0 to 1: " + `${weights}.`,
    `The work passes when the weighted score is at least ${LIMITS.passThreshold}.`,
    "List concrete issues. To fix them, name the subtasks to redo (only those run again), or set replan when the plan itself is wrong.",
    "Judge only what the outcomes show; do not redo subtasks that succeeded unless their result is wrong.",
    `Answer by calling ${STRUCTURED_OUTPUT.review}.`,
  ].join("\n");
}

/** Asks the model for a verdict (structured output); confidence and pass/fail are computed by code. */
export async function runCritic(input: CriticInput, options: CallOptions): Promise<CriticOutput> {
  const message = [
    section(SECTIONS.task, input.task),
    section(SECTIONS.outcomes, JSON.stringify(input.outcomes, null, 2)),
    section("Review round", `${input.iteration} of at most ${input.maxIterations}`),
  ].join("\n\n");
  return invokeStructured(
    {
      route: input.model,
      schema: CriticOutput,
      name: STRUCTURED_OUTPUT.review,
      description: "Submit the review: scores, issues, subtasks to redo, or a request for a new plan.",
      messages: [new SystemMessage(criticPrompt()), new HumanMessage(message)],
    },
    options,
  );
}
