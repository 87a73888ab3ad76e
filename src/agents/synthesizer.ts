import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { HumanMessage, SystemMessage } from "@langchain/core/messages";
import { roleLine, SECTIONS, section } from "../core/prompt-protocol.js";
import type { OutcomeView } from "./critic.js";
import { type CallOptions, callModel } from "./model-call.js";

export interface SynthesizerInput {
  model: BaseChatModel;
  task: string;
  context?: string;
  outcomes: OutcomeView[];
  /** Issues the critic found and that remain. */
  issues: string[];
  /** A person's feedback on an earlier answer. */
  feedback: string[];
}

export function synthesizerPrompt(): string {
  return [
    roleLine("synthesizer"),
    "Write the final answer to the task from the subtask outcomes. Be direct and complete; use Markdown where it helps.",
    "Use only what the outcomes show. If issues remain, state them plainly at the end under 'Known issues'.",
    "Do not describe your private reasoning.",
  ].join("\n");
}

/** Writes the answer text. The decision trace beside it is built by code, not by the model. */
export async function runSynthesizer(input: SynthesizerInput, options: CallOptions): Promise<string> {
  const parts = [section(SECTIONS.task, input.task)];
  if (input.context) parts.push(section(SECTIONS.context, input.context));
  parts.push(section(SECTIONS.outcomes, JSON.stringify(input.outcomes, null, 2)));
  parts.push(section(SECTIONS.review, JSON.stringify(input.issues)));
  if (input.feedback.length > 0) parts.push(section(SECTIONS.feedback, input.feedback.map((line) => `- ${line}`).join("\n")));
  const response = await callModel(input.model, [new SystemMessage(synthesizerPrompt()), new HumanMessage(parts.join("\n\n"))], options);
  return (typeof response.content === "string" ? response.content : response.text).trim();
}
