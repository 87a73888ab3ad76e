import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { HumanMessage, SystemMessage } from "@langchain/core/messages";
import { LIMITS } from "../core/limits.js";
import { PlanOutput } from "../core/plan.js";
import { roleLine, SECTIONS, STRUCTURED_OUTPUT, section } from "../core/prompt-protocol.js";
import type { ToolRegistry } from "../tools/registry.js";
import type { AgentDefinition } from "./define-agent.js";
import { type CallOptions, invokeStructured } from "./model-call.js";

export interface PlannerInput {
  model: BaseChatModel;
  task: string;
  context?: string;
  agents: AgentDefinition[];
  tools: ToolRegistry;
  /** A person's feedback or the critic's issues with an earlier plan. */
  feedback: string[];
  /** Why the previous attempt was invalid. */
  errors: string[];
  /** Answers a person gave to the planner's questions. */
  humanAnswers: string[];
  maxSubtasks: number;
  /** The tools the run may use, when it is restricted. */
  allowedTools?: readonly string[];
}

export function plannerPrompt(agents: AgentDefinition[], tools: ToolRegistry, maxSubtasks: number, allowedTools?: readonly string[]): string {
  const usable = (name: string): boolean => allowedTools?.includes(name) ?? true;
  const agentLines = agents.map((agent) => `- ${agent.name}: ${agent.description} (tools: ${agent.tools.filter(usable).join(", ") || "none"})`);
  const toolLines = tools
    .list()
    .filter((tool) => usable(tool.name))
    .map((tool) => `- ${tool.name}: ${tool.description}`);
  return [
    roleLine("planner"),
    "Break the task into subtasks that workers can carry out, as a dependency graph.",
    "",
    "Agents:",
    ...agentLines,
    "",
    "Tools the agents use:",
    ...toolLines,
    "",
    "Rules:",
    `- At most ${maxSubtasks} subtasks, ids like s1, s2, … Each label is a complete instruction for its worker.`,
    "- dependsOn lists the subtasks that must finish first. Independent subtasks have no dependency, so they run in parallel.",
    '- args are the subtask\'s named inputs: {"value": …} for a literal, or {"ref": "s1", "path": "$"} to take an earlier subtask\'s result',
    "  (path is a JSONPath into it; $ is the whole result). Every ref must also be in dependsOn.",
    "- A subtask's result is its worker's final answer (parsed as JSON when it is JSON).",
    "- Prefer few, well-shaped subtasks. Do not add a subtask for writing the final answer; a synthesizer does that.",
    `- If the task cannot be planned without more information, return no subtasks and ask one question.`,
    `Answer by calling ${STRUCTURED_OUTPUT.plan}.`,
  ].join("\n");
}

function plannerMessage(input: PlannerInput): string {
  const parts = [section(SECTIONS.task, input.task)];
  if (input.context) parts.push(section(SECTIONS.context, input.context));
  if (input.humanAnswers.length > 0) parts.push(section("Answers from the person", input.humanAnswers.map((answer) => `- ${answer}`).join("\n")));
  if (input.feedback.length > 0) parts.push(section(SECTIONS.feedback, input.feedback.map((line) => `- ${line}`).join("\n")));
  if (input.errors.length > 0) parts.push(section(SECTIONS.errors, input.errors.map((line) => `- ${line}`).join("\n")));
  return parts.join("\n\n");
}

/** Asks the model for a plan (structured output). Validation of the plan is the caller's. */
export async function runPlanner(input: PlannerInput, options: CallOptions): Promise<PlanOutput> {
  return invokeStructured(
    {
      model: input.model,
      schema: PlanOutput,
      name: STRUCTURED_OUTPUT.plan,
      description: "Submit the plan: subtasks with their agents, dependencies and arguments.",
      messages: [
        new SystemMessage(plannerPrompt(input.agents, input.tools, Math.min(input.maxSubtasks, LIMITS.maxSubtasks), input.allowedTools)),
        new HumanMessage(plannerMessage(input)),
      ],
    },
    options,
  );
}
