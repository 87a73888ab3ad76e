import { completable } from "@modelcontextprotocol/sdk/server/completable.js";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { ErrorCode, type GetPromptResult, McpError } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { isTroupeError } from "../../core/errors.js";
import { EXAMPLES } from "../../core/example-tasks.js";
import { LIMITS } from "../../core/limits.js";
import { fillTaskTemplate, type TaskTemplate, type TaskTemplateArgument } from "../../core/task-template.js";
import { completeListItem, type Completions, startingWith } from "./mcp-completions.js";

/** What a prompt puts before the host's model: hand the task to troupe's run_task tool, with what the person chose. */
function taskMessage(task: string, options: { threadId?: string | undefined; tools?: readonly string[] | undefined } = {}): GetPromptResult {
  const how = [
    options.threadId ? `on the thread "${options.threadId}" (thread_id), continuing its conversation` : undefined,
    options.tools && options.tools.length > 0 ? `with only these tools: ${options.tools.join(", ")} (tools)` : undefined,
  ].filter(Boolean);
  const text = `Use troupe's run_task tool for this task${how.length > 0 ? `, ${how.join(" and ")}` : ""}. Tell me its answer, and what it asks if it waits for me.\n\nTask: ${task}`;
  return { messages: [{ role: "user", content: { type: "text", text } }] };
}

/** A comma-separated list of names, as the person wrote it. */
function listOf(value: string | undefined): string[] | undefined {
  const items = (value ?? "")
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
  return items.length > 0 ? items : undefined;
}

/** A template's argument as the prompt's (a string, as MCP prompt arguments are), completed from its values or its source. */
function argumentSchema(argument: TaskTemplateArgument, completions: Completions): z.ZodType<string | undefined> {
  const base = argument.values
    ? z.enum(argument.values as [string, ...string[]])
    : z
        .string()
        .trim()
        .min(argument.required ? 1 : 0)
        .max(argument.maxLength);
  const described = argument.description ? base.describe(argument.description) : base;
  const values = argument.values;
  const source = argument.complete;
  const typed = (argument.required ? described : described.optional()) as z.ZodType<string | undefined>;
  if (values) return completable(typed, (value) => startingWith(values, String(value ?? "")));
  if (source) return completable(typed, (value) => completions.of(source, String(value ?? "")));
  return typed;
}

/**
 * troupe's prompts (`prompts/list`, `prompts/get`), each a message that hands a task to run_task:
 * - `task`: any task, with an optional thread of the caller's (`thread_id`, completed from its own
 *   threads) and the tools it may use (`tools`, a comma-separated list, completed from the tools);
 * - `example_tools`, `example_planning`, `example_code`: troupe's example tasks;
 * - one per task template of the config file (`taskTemplates`): its arguments filled into its task,
 *   each completed from its values or its source (the caller's threads or runs, the agents, the tools).
 */
export function registerPrompts(server: McpServer, completions: Completions, templates: readonly TaskTemplate[]): void {
  server.registerPrompt(
    "task",
    {
      title: "Hand troupe a task",
      description: "troupe plans the task as subtasks, runs them on its agents with tools, reviews the work and answers.",
      argsSchema: {
        task: z.string().trim().min(1).max(LIMITS.taskMaxChars).describe("what to do, in words (1-5,000 characters)"),
        thread_id: completable(z.string().max(128).optional().describe("a thread of yours to continue (default: a new one)"), (value) => completions.threads(value ?? "")),
        tools: completable(z.string().max(4_000).optional().describe("the tools the run may use, comma-separated (default: every tool)"), (value) => completeListItem(value ?? "", completions.toolNames())),
      },
    },
    ({ task, thread_id: threadId, tools }) => taskMessage(task, { threadId: threadId?.trim() || undefined, tools: listOf(tools) }),
  );

  for (const example of EXAMPLES) {
    server.registerPrompt(`example_${example.name}`, { title: example.title, description: `troupe's example task: ${example.task}` }, () => taskMessage(example.task));
  }

  for (const template of templates) {
    const argsSchema = Object.fromEntries(template.arguments.map((argument) => [argument.name, argumentSchema(argument, completions)]));
    server.registerPrompt(template.name, { ...(template.title ? { title: template.title } : {}), description: template.description, argsSchema }, (values: Record<string, string | undefined>) => {
      try {
        return taskMessage(fillTaskTemplate(template, values), { tools: template.tools });
      } catch (error) {
        // A filled task over the limit is the arguments' fault: invalid params, with troupe's code.
        if (isTroupeError(error)) throw new McpError(ErrorCode.InvalidParams, `${error.code}: ${error.message}`);
        throw error;
      }
    });
  }
}
