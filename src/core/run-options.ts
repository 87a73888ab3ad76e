import { z } from "zod";
import { RunRequest } from "./run.js";

/**
 * A run's options as a front door or a stored spec takes them: every field of {@link RunRequest}
 * but the task, each optional and without its default (the run fills the defaults when it starts,
 * so a schedule made today follows tomorrow's default). Derived, never retyped: a field added to
 * RunRequest is an option here.
 */

type RunRequestShape = typeof RunRequest.shape;
type WithoutDefault<T> = T extends z.ZodDefault<infer Inner> ? Inner : T;
type OptionsShape = { [K in Exclude<keyof RunRequestShape, "task">]: z.ZodOptional<WithoutDefault<RunRequestShape[K]>> };

/** The names of a run's options, in RunRequest's order. */
export type RunOptionName = keyof OptionsShape;

function optionOf(field: z.ZodType): z.ZodOptional<z.ZodType> {
  const inner = field instanceof z.ZodDefault ? (field.unwrap() as z.ZodType) : field;
  return inner instanceof z.ZodOptional ? (inner as z.ZodOptional<z.ZodType>) : inner.optional();
}

const optionsShape = Object.fromEntries(
  Object.entries(RunRequest.shape)
    .filter(([name]) => name !== "task")
    .map(([name, field]) => [name, optionOf(field as z.ZodType)]),
) as OptionsShape;

export const RunOptions = z.object(optionsShape).strict();
export type RunOptions = z.infer<typeof RunOptions>;

/**
 * The options that size a process's shared work (subtasks and map items at once, the prompt's
 * token budget): the operator's config sets them, a caller of a shared server does not (one key's
 * run could otherwise take the workers every other key waits for). The server's doors and the
 * schedules' stored spec omit them by this one list.
 */
export const OPERATOR_RUN_OPTIONS = { concurrency: true, mapConcurrency: true, promptBudget: true } as const satisfies Partial<Record<RunOptionName, true>>;
