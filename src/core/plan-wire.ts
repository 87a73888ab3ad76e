import { z } from "zod";
import { isArgRef, type PlannedSubtask, PlanOutput, type SubtaskArg } from "./plan.js";
import { FORMAT_MAX_CHARS } from "./ref-format.js";

/**
 * The plan as the planner model answers it ("the wire shape"), built per call from the agents
 * and tools it was told about, so strict structured output keeps the model to what can run:
 * `agent`, `tool`, `tools` and `capability` are enums, every property is required (absent values
 * are null or []), and `args` is a list of arguments each of which is one of three closed shapes —
 * a literal `{ name, value }`, a literal list the subtask runs over `{ name, items }`, or a
 * reference `{ name, ref, path, each, format }` — so an argument with both a value and a reference
 * cannot be written, and a map is the argument it runs over (`items`, or `each` on a
 * reference), never a free name. `fromPlanWire` turns it into the internal `PlanOutput`;
 * `readPlanAnswer` also accepts the internal shape itself.
 */

/** What a literal argument can be on the wire: a scalar or a list of scalars (objects go as JSON text). */
const WireScalar = z.union([z.string(), z.number(), z.boolean(), z.null()]);
export const WireValue = z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(WireScalar)]);
export type WireValue = z.infer<typeof WireValue>;

const ArgName = z.string().min(1).max(64);

/** A literal argument: its value as written. */
export const WireLiteral = z.strictObject({
  name: ArgName,
  value: WireValue.describe("an object as JSON text"),
});
/** A literal list the subtask runs over: once per item, the argument set to the item. */
export const WireItems = z.strictObject({
  name: ArgName,
  items: z.array(WireScalar).describe("runs once per item"),
});
/** A reference into an earlier subtask's result; with `each`, the subtask runs once per item of the list it selects. */
export const WireReference = z.strictObject({
  name: ArgName,
  ref: z.string().min(1).describe("an earlier subtask, also in dependsOn"),
  path: z.string().min(1).describe("JSONPath into its result; $: all"),
  each: z.boolean().describe("true: runs once per item of that list"),
  format: z.string().min(1).max(FORMAT_MAX_CHARS).nullable().describe("null, or the value as text, a line per item: {} the item, {field} its field"),
});

/** Why an argument fits none of the shapes, as the repair round says it. */
function argProblem(input: unknown): string {
  const shapes = "a literal {name, value}, a list to run over {name, items}, or a reference {name, ref, path, each, format}";
  if (typeof input !== "object" || input === null || Array.isArray(input)) return `an argument is an object: ${shapes}`;
  const keys = Object.keys(input);
  const name = typeof (input as { name?: unknown }).name === "string" ? `"${(input as { name: string }).name}"` : "an argument";
  if (keys.includes("ref") && (keys.includes("value") || keys.includes("items"))) return `${name} has both a value and a ref: it is ${shapes}`;
  return `${name} is none of ${shapes}`;
}

const WireArg = z.union([WireLiteral, WireItems, WireReference], { error: (issue) => (issue.code === "invalid_union" ? argProblem(issue.input) : undefined) });
type WireArg = z.infer<typeof WireArg>;

export interface PlanWireOptions {
  /** The agent names the planner was told about. */
  agents: readonly string[];
  /** The tools a subtask may run directly or name for its worker (the run's allowed tools, or every registered one). */
  tools: readonly string[];
  /** The most subtasks a plan may have. */
  maxSubtasks: number;
  /** The capabilities the agents declare (a subtask may ask for one instead of its agent). */
  capabilities?: readonly string[];
}

function isReference(arg: WireArg): arg is z.infer<typeof WireReference> {
  return "ref" in arg;
}

/** Whether the subtask runs once per item of this argument. */
function isMapped(arg: WireArg): boolean {
  return "items" in arg || ("each" in arg && arg.each);
}

function buildPlanWire({ agents, tools, maxSubtasks, capabilities = [] }: PlanWireOptions) {
  const agent = agents.length > 0 ? z.enum(agents as [string, ...string[]]) : z.string().min(1);
  const toolName = tools.length > 0 ? z.enum(tools as [string, ...string[]]) : undefined;
  const tool = toolName ? toolName.nullable() : z.null();
  const capability = capabilities.length > 0 ? z.enum(capabilities as [string, ...string[]]).nullable() : z.null();
  const WireSubtask = z.strictObject({
    id: z.string().min(1).max(64).describe("s1, s2, …"),
    label: z.string().min(1).max(500),
    agent: agent,
    dependsOn: z.array(z.string().min(1)),
    args: z.array(WireArg),
    tool: tool,
    tools: (toolName ? z.array(toolName) : z.array(z.string()).max(0)).nullable().describe("null: all its agent's"),
    capability: capability,
    reads: z.array(z.string().min(1)),
    writes: z.array(z.string().min(1)),
  });
  return z
    .strictObject({
      subtasks: z.array(WireSubtask).max(maxSubtasks).describe("[] only when asking a question"),
      question: z.string().min(1).nullable().describe("null, unless asking the person"),
    })
    .superRefine((plan, context) => {
      plan.subtasks.forEach((subtask, index) => {
        const names = new Set<string>();
        const mapped = subtask.args.filter(isMapped);
        subtask.args.forEach((arg, position) => {
          const at = ["subtasks", index, "args", position];
          if (names.has(arg.name)) context.addIssue({ code: "custom", path: [...at, "name"], message: `argument "${arg.name}" is given more than once` });
          names.add(arg.name);
          if (isMapped(arg) && mapped.length > 1) {
            context.addIssue({ code: "custom", path: at, message: `the subtask would run over ${mapped.map((other) => `"${other.name}"`).join(" and ")}; it runs over one list at most` });
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
  const key = JSON.stringify([options.agents, options.tools, options.maxSubtasks, options.capabilities ?? []]);
  let schema = built.get(key);
  if (!schema) {
    schema = buildPlanWire(options);
    if (built.size >= BUILT_KEPT) built.delete(built.keys().next().value as string);
    built.set(key, schema);
  }
  return schema;
}

/** A wire plan as the internal PlanOutput: args as a record, the map as `mapOver`, nulls and empty lists left out. */
export function fromPlanWire(wire: PlanWire): PlanOutput {
  const subtasks = wire.subtasks.map((subtask) => {
    const args = Object.fromEntries(
      subtask.args.map((arg): [string, SubtaskArg] => [
        arg.name,
        isReference(arg) ? { ref: arg.ref, path: arg.path, ...(arg.format !== null ? { format: arg.format } : {}) } : { value: "items" in arg ? arg.items : arg.value },
      ]),
    );
    const planned: PlannedSubtask = { id: subtask.id, label: subtask.label, agent: subtask.agent, dependsOn: subtask.dependsOn, args };
    if (subtask.tool !== null) planned.tool = subtask.tool;
    const mapped = subtask.args.find(isMapped);
    if (mapped) planned.mapOver = mapped.name;
    if (subtask.reads.length > 0) planned.reads = subtask.reads;
    if (subtask.writes.length > 0) planned.writes = subtask.writes;
    // [] is "the worker needs no tool", null "every tool its agent has"; a direct step's tools are its own.
    if (subtask.tool === null && subtask.tools !== null) planned.tools = [...new Set(subtask.tools)];
    if (subtask.capability !== null) planned.capability = subtask.capability;
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
      args: Object.entries(subtask.args).map(([name, arg]): WireArg => {
        const each = subtask.mapOver === name;
        if (isArgRef(arg)) return { name, ref: arg.ref, path: arg.path, each, format: arg.format ?? null };
        const value = wireValueOf(arg.value);
        return each && Array.isArray(value) ? { name, items: value } : { name, value };
      }),
      tool: subtask.tool ?? null,
      tools: subtask.tools ?? null,
      capability: subtask.capability ?? null,
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
    return Array.isArray(fields.args) || fields.tool === null || fields.capability === null;
  });
}

export type ReadResult<T> = { success: true; data: T } | { success: false; error: string };

/**
 * Reads the planner's answer: the wire shape (checked against the enums it was sent with) or
 * the internal shape (a record of args, absent fields — as scripted plans are written), either
 * way as the internal PlanOutput. Otherwise the errors, as zod words them (each with the field
 * it is at), of the shape the answer was meant in.
 */
export function readPlanAnswer(answer: unknown, wire: PlanWireSchema): ReadResult<PlanOutput> {
  const parsed = wire.safeParse(answer);
  if (parsed.success) return { success: true, data: fromPlanWire(parsed.data) };
  const internal = PlanOutput.safeParse(answer);
  if (internal.success) return { success: true, data: internal.data };
  return { success: false, error: z.prettifyError(looksLikeWire(answer) ? parsed.error : internal.error) };
}
