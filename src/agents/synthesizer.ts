import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { HumanMessage, SystemMessage } from "@langchain/core/messages";
import { LIMITS } from "../core/limits.js";
import { roleLine, SECTIONS, section } from "../core/prompt-protocol.js";
import { type CallOptions, callModel } from "./model-call.js";
import { type OutcomeSource, renderOutcomes, SYNTHESIZER_EXTRACTS } from "./outcomes.js";
import { fitToBudget, scaled } from "./prompt-budget.js";
import { truncate } from "../core/text.js";

export interface SynthesizerInput {
  model: BaseChatModel;
  task: string;
  context?: string;
  outcomes: OutcomeSource[];
  /** Issues the critic found and that remain. */
  issues: string[];
  /** A person's feedback on an earlier answer. */
  feedback: string[];
  /** Prompt tokens the call may use (default LIMITS.promptTokenBudget). */
  promptBudget?: number;
}

export function synthesizerPrompt(): string {
  return [
    roleLine("synthesizer"),
    "Write the final answer to the task from the subtask outcomes. Be direct and complete; use Markdown where it helps.",
    "Use only what the outcomes show. A subtask with items lists them; say which items failed and why.",
    "If issues remain, state them plainly at the end under 'Known issues'.",
    "Do not describe your private reasoning.",
  ].join("\n");
}

/** Writes the answer text. The decision trace beside it is built by code, not by the model. */
export async function runSynthesizer(input: SynthesizerInput, options: CallOptions): Promise<string> {
  const system = new SystemMessage(synthesizerPrompt());
  const render = (detail: number) => {
    const parts = [section(SECTIONS.task, input.task)];
    if (input.context) parts.push(section(SECTIONS.context, truncate(input.context, scaled(LIMITS.contextMaxBytes, detail, 500))));
    parts.push(section(SECTIONS.outcomes, JSON.stringify(renderOutcomes(input.outcomes, detail, SYNTHESIZER_EXTRACTS), null, 2)));
    parts.push(section(SECTIONS.review, JSON.stringify(input.issues.map((issue) => truncate(issue, scaled(500, detail, 120))))));
    if (input.feedback.length > 0) parts.push(section(SECTIONS.feedback, input.feedback.map((line) => `- ${truncate(line, scaled(1_000, detail, 200))}`).join("\n")));
    return [system, new HumanMessage(parts.join("\n\n"))];
  };
  const { messages } = await fitToBudget(render, input.promptBudget ?? LIMITS.promptTokenBudget);
  const response = await callModel(input.model, messages, options);
  return (typeof response.content === "string" ? response.content : response.text).trim();
}
