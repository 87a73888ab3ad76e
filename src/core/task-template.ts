import { z } from "zod";
import { fieldErrorCode } from "./error-codes.js";
import { InputError } from "./errors.js";
import { LIMITS } from "./limits.js";

/**
 * Task templates (`taskTemplates` in the config file): a task with `{{argument}}` placeholders,
 * the arguments a person fills in, and where each argument's values come from. MCP serves each as
 * a prompt (with completions for its arguments); the names `task` and `example_*` are troupe's own
 * prompts.
 */

/** Where an argument's completions come from: the caller's threads or runs, the agents, the tools. */
export const TEMPLATE_VALUE_SOURCES = ["threads", "runs", "agents", "tools"] as const;
export type TemplateValueSource = (typeof TEMPLATE_VALUE_SOURCES)[number];

/** The longest value one argument may take, unless it says otherwise. */
const DEFAULT_ARGUMENT_MAX = 1_000;

/** `{{name}}`: no spaces, so the scan is linear whatever the text. */
const PLACEHOLDER = /\{\{([a-z][a-z0-9_]{0,31})\}\}/g;

const RESERVED = /^(task|example_.*)$/;

export const TaskTemplateArgument = z
  .object({
    name: z.string().regex(/^[a-z][a-z0-9_]{0,31}$/, { error: "an argument name is lower-case letters, digits or '_' (at most 32)" }),
    description: z.string().trim().min(1).max(500).optional(),
    /** Whether it must be given (default true). */
    required: z.boolean().default(true),
    /** The only values it takes: offered as completions, any other refused. */
    values: z.array(z.string().min(1).max(200)).min(1).max(100).optional(),
    /** Where its completions come from (its values are not limited to them). */
    complete: z.enum(TEMPLATE_VALUE_SOURCES).optional(),
    /** The most characters its value may have (default 1,000). */
    maxLength: z.number().int().min(1).max(LIMITS.taskMaxChars).default(DEFAULT_ARGUMENT_MAX),
  })
  .strict()
  .refine((argument) => !(argument.values && argument.complete), { error: "an argument has either values or complete, not both" });
export type TaskTemplateArgument = z.infer<typeof TaskTemplateArgument>;

export const TaskTemplate = z
  .object({
    name: z.string().regex(/^[a-z][a-z0-9_-]{0,63}$/, { error: "a template name is lower-case letters, digits, '_' or '-' (at most 64)" }),
    title: z.string().trim().min(1).max(100).optional(),
    description: z.string().trim().min(1).max(1_000),
    /** The task, with `{{argument}}` where an argument's value goes. */
    task: z.string().trim().min(1).max(LIMITS.taskMaxChars),
    arguments: z.array(TaskTemplateArgument).max(20).default([]),
    /** The tools the run may use (default: every tool). */
    tools: z.array(z.string().min(1).max(200)).min(1).max(200).optional(),
  })
  .strict()
  .superRefine((template, context) => {
    if (RESERVED.test(template.name)) {
      context.addIssue({ code: "custom", path: ["name"], message: `"${template.name}" is one of troupe's own prompts (task, example_*): choose another name` });
    }
    const declared = new Set<string>();
    template.arguments.forEach((argument, index) => {
      if (declared.has(argument.name)) context.addIssue({ code: "custom", path: ["arguments", index, "name"], message: `the argument "${argument.name}" is declared twice` });
      declared.add(argument.name);
    });
    const used = placeholdersOf(template.task);
    for (const name of used) {
      if (!declared.has(name)) context.addIssue({ code: "custom", path: ["task"], message: `{{${name}}} is not one of the template's arguments (${[...declared].join(", ") || "it has none"})` });
    }
    template.arguments.forEach((argument, index) => {
      if (!used.has(argument.name)) context.addIssue({ code: "custom", path: ["arguments", index, "name"], message: `the argument "${argument.name}" is not used in the task (write {{${argument.name}}} where it goes)` });
    });
  });
export type TaskTemplate = z.infer<typeof TaskTemplate>;

/** The config's `taskTemplates`: at most 100, each name once. */
export const TaskTemplates = z
  .array(TaskTemplate)
  .max(100)
  .superRefine((templates, context) => {
    const seen = new Set<string>();
    templates.forEach((template, index) => {
      if (seen.has(template.name)) context.addIssue({ code: "custom", path: [index, "name"], message: `the template "${template.name}" is declared twice` });
      seen.add(template.name);
    });
  });
export type TaskTemplates = z.infer<typeof TaskTemplates>;

/** The argument names a template's task uses. */
export function placeholdersOf(task: string): Set<string> {
  return new Set([...task.matchAll(PLACEHOLDER)].map((match) => match[1] as string));
}

/**
 * The task with each placeholder replaced by its argument's value, in one pass (a value that holds
 * `{{…}}` is not filled again); an optional argument left out becomes empty. A task over the
 * task limit once filled is an InputError.
 */
export function fillTaskTemplate(template: TaskTemplate, values: Record<string, string | undefined>): string {
  const task = template.task.replace(PLACEHOLDER, (_whole, name: string) => values[name] ?? "").trim();
  if (task.length === 0) throw new InputError(fieldErrorCode("task", "empty"), `the template "${template.name}" made an empty task`, { template: template.name });
  if (task.length > LIMITS.taskMaxChars) {
    throw new InputError(fieldErrorCode("task", "too_long"), `the template "${template.name}" made a task of ${task.length} characters (at most ${LIMITS.taskMaxChars})`, { template: template.name, length: task.length });
  }
  return task;
}
