import { HumanMessage, SystemMessage } from "@langchain/core/messages";
import { type BudgetStop, describeBudgetStop } from "../core/budget.js";
import { roleLine, SECTIONS, section } from "../core/prompt-protocol.js";
import type { ModelRoute } from "../providers/registry.js";
import type { OutcomeView } from "./critic.js";
import { type CallOptions, callModel } from "./model-call.js";

export interface SynthesizerInput {
  model: ModelRoute;
  task: string;
  context?: string;
  outcomes: OutcomeView[];
  /** Issues the critic found and that remain. */
  issues: string[];
  /** A person's feedback on an earlier answer. */
  feedback: string[];
  /** Each piece of the answer as the model streams it (when its provider streams). */
  onToken?: (text: string) => void;
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
  const { message } = await callModel(input.model, [new SystemMessage(synthesizerPrompt()), new HumanMessage(parts.join("\n\n"))], options, { onToken: input.onToken });
  return (typeof message.content === "string" ? message.content : message.text).trim();
}

/**
 * The best answer a run can give once its budget is spent, written by code so it costs nothing:
 * what each subtask produced, what is missing, and which limit stopped the run.
 */
export function bestAnswerSoFar(task: string, outcomes: OutcomeView[], stop: BudgetStop | null, issues: string[] = []): string {
  const lines = [`The run stopped before it finished: its budget ran out${stop ? ` (${describeBudgetStop(stop)})` : ""}.`, "", `Task: ${task}`, ""];
  const done = outcomes.filter((outcome) => outcome.status === "done");
  if (outcomes.length === 0) lines.push("No plan was made before the budget ran out.");
  else lines.push(`What was done (${done.length} of ${outcomes.length} subtasks):`);
  for (const outcome of outcomes) {
    const detail = outcome.status === "done" ? (outcome.summary ?? "done") : `${outcome.status}${outcome.error ? `: ${outcome.error}` : ""}`;
    lines.push(`- ${outcome.id} ${outcome.label}: ${detail}`);
  }
  if (issues.length > 0) lines.push("", "Known issues:", ...issues.map((issue) => `- ${issue}`));
  lines.push("", "Run the task again with a larger budget for a complete answer.");
  return lines.join("\n");
}
