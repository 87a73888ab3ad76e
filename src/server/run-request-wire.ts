import { z } from "zod";
import type { Budget } from "../core/budget.js";
import { CONVERSATION_LIMITS } from "../core/conversation.js";
import { LIMITS } from "../core/limits.js";
import { type RunRequest, type RunRequestInput, TaskText } from "../core/run.js";
import { OPERATOR_RUN_OPTIONS, type RunOptionName, RunOptions } from "../core/run-options.js";

/**
 * The one run-request codec of the server's doors: the wire (snake_case) form of core's
 * RunRequest, derived from its field list, and the conversions both ways. REST's body, MCP's
 * `run_task`, A2A's `metadata.troupe`, the Agent Protocol's run settings, a schedule's body and a
 * fork's thread are subsets of it declared below by name (`omit`/`pick`), never retyped: a field
 * added to RunRequest is on each of them, and in /openapi.json, with no other edit.
 */

type SnakeCase<S extends string> = S extends `${infer Head}${infer Tail}` ? `${Head extends Uppercase<Head> ? (Head extends Lowercase<Head> ? Head : `_${Lowercase<Head>}`) : Head}${SnakeCase<Tail>}` : S;
type RunRequestKey = "task" | RunOptionName;
type WireKey<K extends RunRequestKey = RunRequestKey> = SnakeCase<K>;

/** A RunRequest field's wire name: `maxIterations` → `max_iterations`. */
export function wireName<K extends RunRequestKey>(key: K): WireKey<K> {
  return key.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`) as WireKey<K>;
}

export const ThreadId = z
  .string()
  .regex(/^[A-Za-z0-9._:-]{1,128}$/, { error: "a thread id is 1-128 letters, digits, '.', '_', ':' or '-'" });

/** The task text; its limits are stated for /openapi.json (the transform hides them from the generator). */
export const Task = TaskText.meta({ minLength: 1, maxLength: LIMITS.taskMaxChars, description: "what to do, in words (1-5,000 characters)" });

const contextBytes = (value: unknown): number => Buffer.byteLength(typeof value === "string" ? value : JSON.stringify(value), "utf8");

/** What the planner should know: on the wire a string or a JSON object, in core a string (the object as JSON). */
export const Context = z
  .union([z.string(), z.record(z.string(), z.unknown())], { error: "context must be a string or a JSON object" })
  .refine((value) => contextBytes(value) <= LIMITS.contextMaxBytes, {
    error: `the context is larger than ${LIMITS.contextMaxBytes / 1024} KB`,
    params: { code: "context_too_large" },
  })
  .describe("what the planner should know: a string, or a JSON object (at most 10 KB once serialised)");

/** A budget on the wire: snake_case, the time in seconds (core's Budget counts milliseconds). */
const WireBudget = z
  .object({
    max_model_calls: z.number().int().positive().optional(),
    max_tokens: z.number().int().positive().optional(),
    max_cost_usd: z.number().positive().optional(),
    max_time_seconds: z.number().positive().optional().describe("seconds of running (not of waiting for a person)"),
  })
  .strict();
type WireBudget = z.infer<typeof WireBudget>;

function budgetOfWire(wire: WireBudget): Budget | undefined {
  const budget: Budget = {};
  if (wire.max_model_calls !== undefined) budget.maxModelCalls = wire.max_model_calls;
  if (wire.max_tokens !== undefined) budget.maxTokens = wire.max_tokens;
  if (wire.max_cost_usd !== undefined) budget.maxCostUsd = wire.max_cost_usd;
  if (wire.max_time_seconds !== undefined) budget.maxWallTimeMs = Math.round(wire.max_time_seconds * 1000);
  return Object.keys(budget).length > 0 ? budget : undefined;
}

function wireOfBudget(budget: Budget): WireBudget {
  const wire: WireBudget = {};
  if (budget.maxModelCalls !== undefined) wire.max_model_calls = budget.maxModelCalls;
  if (budget.maxTokens !== undefined) wire.max_tokens = budget.maxTokens;
  if (budget.maxCostUsd !== undefined) wire.max_cost_usd = budget.maxCostUsd;
  if (budget.maxWallTimeMs !== undefined) wire.max_time_seconds = budget.maxWallTimeMs / 1000;
  return wire;
}

/** Fields whose wire form is not core's: the schema on the wire, and the conversion each way. */
const WIRE_FORMS = {
  task: { schema: Task, toCore: (task: string) => task, toWire: (task: string) => task },
  context: { schema: Context.optional(), toCore: (context: string | Record<string, unknown>) => (typeof context === "string" ? context : JSON.stringify(context)), toWire: (context: string) => context },
  budget: { schema: WireBudget.optional(), toCore: budgetOfWire, toWire: wireOfBudget },
} as const;
type WireForms = typeof WIRE_FORMS;

/**
 * What /openapi.json says of each field (the wire's words: snake_case names, HTTP codes). A field
 * without one here shows core's own `.describe()`, if it has one.
 */
const DESCRIPTIONS: Partial<Record<RunRequestKey, string>> = {
  tools: "the tools the run may use (default: every registered tool); an unknown name is refused",
  maxIterations: `review rounds, ${LIMITS.maxIterationsMin}-${LIMITS.maxIterationsMax} (default ${LIMITS.maxIterationsDefault})`,
  approvePlan: "pause for a person to approve the plan",
  approveAnswer: "pause for a person to approve the answer",
  reviewers: `reviewers on the critic's panel, 1-${LIMITS.reviewersMax}: their verdicts are combined by vote (default 1)`,
  review: "when the critic reviews the outcomes: auto (skipped when every outcome is a verified direct tool result), always, or never (default: the config's review, else auto)",
  threadId: "the thread to run on (default: a new one); a thread of the caller's continues its conversation",
  historyBudget: `prompt tokens the thread's earlier turns may take in the planner's prompt, 0-${CONVERSATION_LIMITS.historyBudgetMax} (default 2000; 0: none)`,
  onBusy:
    "when thread_id's run is running or waiting: reject (409 thread_busy), enqueue (the default: run after it), interrupt (stop it at its next step and run on its state), rollback (discard it and run from the state before it)",
  webhook: "where the task's end (and waits for a person) are POSTed, signed with HMAC-SHA256 (default: the config's webhooks.default)",
  outputSchema: "a JSON Schema the answer must match: the answer is written as JSON (the run's `output`), or the run fails with the validation errors",
  budget: "limits on model calls, tokens, cost and running time; the run stops cleanly (budget_exhausted) at the first one reached",
};

type WireField<K extends RunRequestKey> = K extends keyof WireForms ? WireForms[K]["schema"] : K extends RunOptionName ? (typeof RunOptions.shape)[K] : never;
type WireShape = { [K in RunRequestKey as WireKey<K>]: WireField<K> };

const RUN_REQUEST_KEYS: readonly RunRequestKey[] = ["task", ...(Object.keys(RunOptions.shape) as RunOptionName[])];

function wireFieldOf(key: RunRequestKey): z.ZodType {
  const field: z.ZodType = key in WIRE_FORMS ? WIRE_FORMS[key as keyof WireForms].schema : RunOptions.shape[key as RunOptionName];
  const description = DESCRIPTIONS[key];
  return description === undefined ? field : field.describe(description);
}

/** Every RunRequest field on the wire, in RunRequest's order: the task required, the rest optional. */
export const RunRequestWire = z.object(Object.fromEntries(RUN_REQUEST_KEYS.map((key) => [wireName(key), wireFieldOf(key)])) as WireShape).strict();
export type RunRequestWire = z.infer<typeof RunRequestWire>;

/** A mask of RunRequest names as the same mask of wire names, for `omit`/`pick` on RunRequestWire. */
function wireMask<K extends RunRequestKey>(mask: { readonly [P in K]: true }): { [P in K as WireKey<P>]: true } {
  return Object.fromEntries(Object.keys(mask).map((key) => [wireName(key as K), true])) as { [P in K as WireKey<P>]: true };
}

// The doors' subsets, by name. Each door's reason is beside it.

/** POST /execute: every option but those the operator sets (core/run-options.ts). */
export const ExecuteBody = RunRequestWire.omit(wireMask(OPERATOR_RUN_OPTIONS)).strict();
export type ExecuteBody = z.infer<typeof ExecuteBody>;

/** MCP's `run_task`: REST's body but the webhook (an MCP client follows its call, and is told by notifications). */
export const McpRunInput = ExecuteBody.omit(wireMask({ webhook: true })).strict();
export type McpRunInput = z.infer<typeof McpRunInput>;

/**
 * A2A's `message.metadata.troupe`: REST's options but the task (the message's text), the thread
 * (its contextId), the context (its data parts) and the webhook (A2A has push notifications).
 */
export const A2aRunOptions = ExecuteBody.omit(wireMask({ task: true, threadId: true, context: true, webhook: true })).strict();
export type A2aRunOptions = z.infer<typeof A2aRunOptions>;

/**
 * The Agent Protocol's run settings (`context`, `config.configurable`): REST's options but those
 * the protocol has its own fields for — the task (input), thread (the path), on_busy
 * (multitask_strategy) and webhook.
 */
export const AgentProtocolRunSettings = ExecuteBody.omit(wireMask({ task: true, threadId: true, onBusy: true, webhook: true })).strict();

/** POST /schedules: the options a schedule stores with its task (core's ScheduledRequest omits the same operator options). */
export const ScheduleRunOptions = ExecuteBody.omit(wireMask({ task: true })).strict();

/** POST /tasks/:id/fork: a fork re-runs its task's request; it may only name its own thread. */
export const ForkRunOptions = RunRequestWire.pick(wireMask({ threadId: true }));

/** A wire request (or any subset of it) as core's RunRequest input: wire names to core names, wire forms to core's. */
export function runRequestOfWire<T extends Partial<RunRequestWire>>(wire: T & { task: string }): RunRequestInput;
export function runRequestOfWire(wire: Partial<RunRequestWire>): Partial<RunRequestInput>;
export function runRequestOfWire(wire: Partial<RunRequestWire>): Partial<RunRequestInput> {
  const input: Record<string, unknown> = {};
  const values = wire as Record<string, unknown>;
  for (const key of RUN_REQUEST_KEYS) {
    const value = values[wireName(key)];
    if (value === undefined) continue;
    const converted = key in WIRE_FORMS ? (WIRE_FORMS[key as keyof WireForms].toCore as (value: unknown) => unknown)(value) : value;
    if (converted !== undefined) input[key] = converted;
  }
  return input as Partial<RunRequestInput>;
}

/** Core's request (or its options) in wire form: what a client would send for it. */
export function wireOfRunRequest(request: Partial<RunRequest> | Partial<RunRequestInput>): Partial<RunRequestWire> {
  const wire: Record<string, unknown> = {};
  const values = request as Record<string, unknown>;
  for (const key of RUN_REQUEST_KEYS) {
    const value = values[key];
    if (value === undefined) continue;
    wire[wireName(key)] = key in WIRE_FORMS ? (WIRE_FORMS[key as keyof WireForms].toWire as (value: unknown) => unknown)(value) : value;
  }
  return wire as Partial<RunRequestWire>;
}

/**
 * A schema as MCP lists it, whose parse lets every value through: the SDK would otherwise refuse a
 * bad argument with its own words before troupe could name the field and the problem
 * (`task_too_long: …`). The handler parses with the real schema; the listing shows its rules.
 */
export function advertisedShape(schema: z.ZodObject): Record<string, z.ZodType> {
  return Object.fromEntries(
    Object.entries(schema.shape).map(([name, field]) => {
      const { $schema: _dialect, ...rules } = z.toJSONSchema(field as z.ZodType, { io: "input", unrepresentable: "any" });
      const optional = (field as z.ZodType).safeParse(undefined).success;
      return [name, optional ? z.unknown().optional().meta(rules) : z.unknown().meta(rules)];
    }),
  );
}
