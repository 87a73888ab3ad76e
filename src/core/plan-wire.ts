import { z } from "zod";
import { isArgRef, type PlannedSubtask, PlanOutput, type SubtaskArg } from "./plan.js";

/**
 * The plan as the planner model answers it ("the wire shape"), built per call from the agents
 * and tools it was told about, so strict structured output can keep the model to them: `agent`
 * and `tool` are enums, every property is required (absent values are null or []), and `args`
 * is a list of `{ name, value, ref, path }` rather than an open record. `fromPlanWire` turns it
 * into the internal `PlanOutput`; `readPlanAnswer` also accepts the internal shape itself.
 */

/** What a literal argument can be on the wire: a scalar or a list of scalars (objects go as JSON text). */
const WireScalar = z.union([z.string(), z.number(), z.boolean(), z.null()]);
export const WireValue = z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(WireScalar)]);
export type WireValue = z.infer<typeof WireValue>;

const WireArg = z.object({
  name: z.string().min(1).max(64).describe("the argument's name"),
  value: WireValue.describe("the literal value: text, a number, true/false, or a list of those (an object or a nested list goes as JSON text); null when the argument takes an earlier result through ref"),
  ref: z.string().min(1).nullable().describe("id of the earlier subtask whose result this argument takes (it must be in dependsOn); null for a literal value"),
  path: z.string().min(1).nullable().describe("JSONPath into that result, $ for the whole result; null for a literal value"),
});

export interface PlanWireOptions {
  /** The agent names the planner was told about. */
  agents: readonly string[];
  /** The tools a subtask may run directly (the run's allowed tools, or every registered one). */
  tools: readonly string[];
  /** The most subtasks a plan may have. */
  maxSubtasks: number;
}

function buildPlanWire({ agents, tools, maxSubtasks }: PlanWireOptions) {
  const agent = agents.length > 0 ? z.enum(agents as [string, ...string[]]) : z.string().min(1);
  const tool = tools.length > 0 ? z.enum(tools as [string, ...string[]]).nullable() : z.null();
  const WireSubtask = z.object({
    id: z.string().min(1).max(64).describe("short unique id such as s1"),
    label: z.string().min(1).max(500).describe("what this subtask does, as a complete instruction to its worker"),
    agent: agent.describe("the worker that runs it"),
    dependsOn: z.array(z.string().min(1)).describe("ids of the subtasks that must finish first; [] when none"),
    args: z.array(WireArg).describe("the subtask's named inputs, each a literal value or a reference to an earlier result; [] when none"),
    tool: tool.describe("a tool to run directly with the args, without a model call, when nothing needs deciding; null when the agent's worker does it"),
    mapOver: z.string().min(1).nullable().describe("name of a list argument: the subtask runs once per item, that argument set to the item; null otherwise"),
    reads: z.array(z.string().min(1)).describe("workspace paths this subtask reads (files or folders); [] when none"),
    writes: z.array(z.string().min(1)).describe("workspace paths this subtask creates, changes or deletes; [] when none"),
  });
  return z
    .object({
      subtasks: z.array(WireSubtask).max(maxSubtasks).describe("the subtasks; [] only when asking a question"),
      question: z.string().min(1).nullable().describe("a question for the person when the task cannot be planned without an answer; null otherwise"),
    })
    .superRefine((plan, context) => {
      plan.subtasks.forEach((subtask, index) => {
        const names = new Set<string>();
        subtask.args.forEach((arg, position) => {
          const at = ["subtasks", index, "args", position];
          if (names.has(arg.name)) context.addIssue({ code: "custom", path: [...at, "name"], message: `argument "${arg.name}" is given more than once` });
          names.add(arg.name);
          if (arg.ref !== null && arg.value !== null) {
            context.addIssue({ code: "custom", path: [...at, "value"], message: `argument "${arg.name}" has both a value and a ref; a reference takes value null` });
          }
          if (arg.ref === null && arg.path !== null) {
            context.addIssue({ code: "custom", path: [...at, "path"], message: `argument "${arg.name}" has a path but no ref; a literal takes path null` });
          }
        });
      });
    });
}

export type PlanWireSchema = ReturnType<typeof buildPlanWire>;
export type PlanWire = z.infer<PlanWireSchema>;

const built = new Map<string, PlanWireSchema>();
const BUILT_KEPT = 32;

/**
 * The wire schema for these agents, tools and limit. The same options give the same schema
 * object, so what is derived from it (its JSON schema, the structured runnables) is made once.
 */
export function planWireSchema(options: PlanWireOptions): PlanWireSchema {
  const key = JSON.stringify([options.agents, options.tools, options.maxSubtasks]);
  let schema = built.get(key);
  if (!schema) {
    schema = buildPlanWire(options);
    if (built.size >= BUILT_KEPT) built.delete(built.keys().next().value as string);
    built.set(key, schema);
  }
  return schema;
}

/** A wire plan as the internal PlanOutput: args as a record, nulls and empty lists left out. */
export function fromPlanWire(wire: PlanWire): PlanOutput {
  const subtasks = wire.subtasks.map((subtask) => {
    const args = Object.fromEntries(subtask.args.map((arg): [string, SubtaskArg] => [arg.name, arg.ref !== null ? { ref: arg.ref, path: arg.path ?? "$" } : { value: arg.value }]));
    const planned: PlannedSubtask = { id: subtask.id, label: subtask.label, agent: subtask.agent, dependsOn: subtask.dependsOn, args };
    if (subtask.tool !== null) planned.tool = subtask.tool;
    if (subtask.mapOver !== null) planned.mapOver = subtask.mapOver;
    if (subtask.reads.length > 0) planned.reads = subtask.reads;
    if (subtask.writes.length > 0) planned.writes = subtask.writes;
    return planned;
  });
  return wire.question !== null ? { subtasks, question: wire.question } : { subtasks };
}

function isScalar(value: unknown): value is string | number | boolean | null {
  return value === null || ["string", "number", "boolean"].includes(typeof value);
}

/** A literal as the wire carries it: scalars and lists of scalars as they are, anything else as JSON text. */
function wireValueOf(value: unknown): WireValue {
  if (value === undefined) return null;
  if (isScalar(value)) return value;
  if (Array.isArray(value) && value.every(isScalar)) return value;
  return JSON.stringify(value);
}

/** An internal plan in the wire shape (what the offline model answers). */
export function toPlanWire(plan: PlanOutput): PlanWire {
  return {
    subtasks: plan.subtasks.map((subtask) => ({
      id: subtask.id,
      label: subtask.label,
      agent: subtask.agent,
      dependsOn: subtask.dependsOn,
      args: Object.entries(subtask.args).map(([name, arg]) => (isArgRef(arg) ? { name, value: null, ref: arg.ref, path: arg.path } : { name, value: wireValueOf(arg.value), ref: null, path: null })),
      tool: subtask.tool ?? null,
      mapOver: subtask.mapOver ?? null,
      reads: subtask.reads ?? [],
      writes: subtask.writes ?? [],
    })),
    question: plan.question ?? null,
  };
}

/** Whether an answer that fits neither shape was meant as the wire shape (so its errors are the wire schema's). */
function looksLikeWire(answer: unknown): boolean {
  if (typeof answer !== "object" || answer === null) return false;
  const { subtasks, question } = answer as { subtasks?: unknown; question?: unknown };
  if (question === null) return true;
  if (!Array.isArray(subtasks)) return false;
  return subtasks.some((subtask) => {
    if (typeof subtask !== "object" || subtask === null) return false;
    const fields = subtask as Record<string, unknown>;
    return Array.isArray(fields.args) || fields.tool === null || fields.mapOver === null;
  });
}

export type ReadResult<T> = { success: true; data: T } | { success: false; error: string };

/**
 * Reads the planner's answer: the wire shape (checked against the enums it was sent with) or
 * the internal shape (a record of args, absent fields — as scripted plans are written), either
 * way as the internal PlanOutput. Otherwise the errors, as zod words them, of the shape the
 * answer was meant in.
 */
export function readPlanAnswer(answer: unknown, wire: PlanWireSchema): ReadResult<PlanOutput> {
  const parsed = wire.safeParse(answer);
  if (parsed.success) return { success: true, data: fromPlanWire(parsed.data) };
  const internal = PlanOutput.safeParse(answer);
  if (internal.success) return { success: true, data: internal.data };
  return { success: false, error: z.prettifyError(looksLikeWire(answer) ? parsed.error : internal.error) };
}
