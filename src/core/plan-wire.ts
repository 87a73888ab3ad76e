import { z } from "zod";
import { isArgRef, type PlannedSubtask, PlanOutput, type SubtaskArg } from "./plan.js";
import { callLabel, type PlanReadContext, referencedIds } from "./plan-read.js";
import { FORMAT_MAX_CHARS } from "./ref-format.js";

/**
 * The plan as a planner answers it through strict structured output (the JSON wire), built per
 * call from the agents and tools it was told about, so strict decoding keeps the model to what
 * can run: `agent`, `tool`, `tools` and `capability` are enums. Strict mode (OpenAI, Anthropic)
 * makes every property of an object required, so a lean plan is one whose objects have only the
 * properties a step uses: a step is one of two closed shapes — a direct tool step
 * `{ id, tool, args }` (the plan's usual step, and the one whose tokens count most), or the full
 * shape for a worker's step and the rare tool step that needs an agent of its own, an order
 * without a data dependency (`after`) or declared paths — and an argument one of five: a literal
 * `{ name, value }`, a literal list the step runs over `{ name, items }`, a reference
 * `{ name, ref, path }`, a reference it runs over `{ name, each, path }`, or a reference made text
 * `{ name, ref, path, format }`. What code can work out is left out: `dependsOn` (the references,
 * and `after`), a direct step's agent and label. Strict mode refuses `$ref`, so a shape used twice
 * is sent twice: two step shapes (not three) keep the schema in the prompt small, and bounds on
 * lengths are checked when the answer is read rather than spelled out in it. `fromPlanWire` turns it into the internal
 * `PlanOutput`; `readPlanAnswer` also accepts the internal shape itself. The compact wire
 * (plan-compact.ts) carries the same plan as lines of text.
 */

/** What a literal argument can be on the wire: a scalar or a list of scalars (objects go as JSON text). */
const WireScalar = z.union([z.string(), z.number(), z.boolean(), z.null()]);
export const WireValue = z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(WireScalar)]);
export type WireValue = z.infer<typeof WireValue>;

// Lengths are checked when the answer is read (`checkLengths`), not sent: strict mode would spell each bound out in every copy of the shape.
const ArgName = z.string();
const StepId = z.string();

/** A literal argument: its value as written. */
export const WireLiteral = z.strictObject({ name: ArgName, value: WireValue.describe("an object as JSON text") });
/** A literal list the step runs over: once per item, the argument set to the item. */
export const WireItems = z.strictObject({ name: ArgName, items: z.array(WireScalar).describe("runs once per item") });
/** A reference into an earlier step's result. */
export const WireReference = z.strictObject({ name: ArgName, ref: StepId.describe("an earlier step"), path: z.string().min(1).describe("JSONPath into its result; $: all") });
/** A reference to a list the step runs over, once per item. */
export const WireEach = z.strictObject({ name: ArgName, each: StepId.describe("an earlier step: runs once per item of the list the path selects"), path: z.string().min(1) });
/** A reference made text, one line per item. */
export const WireFormatted = z.strictObject({
  name: ArgName,
  ref: StepId,
  path: z.string().min(1),
  format: z.string().describe("the value as text, a line per item: {} the item, {field} its field"),
});

/** Why an argument fits none of the shapes, as the repair round says it. */
function argProblem(input: unknown): string {
  const shapes = "a literal {name, value}, a list to run over {name, items}, a reference {name, ref, path}, one to run over {name, each, path}, or one made text {name, ref, path, format}";
  if (typeof input !== "object" || input === null || Array.isArray(input)) return `an argument is an object: ${shapes}`;
  const keys = Object.keys(input);
  const name = typeof (input as { name?: unknown }).name === "string" ? `"${(input as { name: string }).name}"` : "an argument";
  if ((keys.includes("ref") || keys.includes("each")) && (keys.includes("value") || keys.includes("items"))) return `${name} has both a value and a reference: it is ${shapes}`;
  return `${name} is none of ${shapes}`;
}

const WireArg = z.union([WireLiteral, WireItems, WireReference, WireEach, WireFormatted], { error: (issue) => (issue.code === "invalid_union" ? argProblem(issue.input) : undefined) });
type WireArg = z.infer<typeof WireArg>;

export interface PlanWireOptions {
  /** The agent names the planner was told about. */
  agents: readonly string[];
  /** The tools a step may run directly or name for its worker (the run's allowed tools, or every registered one). */
  tools: readonly string[];
  /** The most steps a plan may have. */
  maxSubtasks: number;
  /** The capabilities the agents declare (a step may ask for one instead of its agent). */
  capabilities?: readonly string[];
}

/** Whether the step runs once per item of this argument. */
function isMapped(arg: WireArg): boolean {
  return "items" in arg || "each" in arg;
}

function buildPlanWire({ agents, tools, maxSubtasks, capabilities = [] }: PlanWireOptions) {
  const agent = agents.length > 0 ? z.enum(agents as [string, ...string[]]) : z.string().min(1);
  const toolName = tools.length > 0 ? z.enum(tools as [string, ...string[]]) : undefined;
  const workerTools = (toolName ? z.array(toolName) : z.array(z.string()).max(0)).nullable().describe("null: all its agent's");
  const args = z.array(WireArg);
  const direct = toolName ? z.strictObject({ id: StepId.describe("s1, s2, …"), tool: toolName.describe("run directly with args, no model"), args }) : undefined;
  const full = z.strictObject({
    id: StepId,
    agent,
    do: z.string().describe("a worker's instruction (for a tool step: what it does, or empty)"),
    tool: (toolName ? toolName.nullable() : z.null()).describe("null: a worker's step"),
    args,
    tools: workerTools,
    after: z.array(StepId).describe("steps it waits for without taking their result"),
    reads: z.array(z.string()),
    writes: z.array(z.string()),
    capability: capabilities.length > 0 ? z.enum(capabilities as [string, ...string[]]).nullable() : z.null(),
  });
  // The full shape first: a schema-following model that takes the first branch writes a worker's step, which needs no arguments.
  const shapes: z.ZodType[] = [full, ...(direct ? [direct] : [])];
  const Step = z.union(shapes as unknown as [z.ZodType<WireStep>, ...Array<z.ZodType<WireStep>>]);
  const schema = z
    .strictObject({
      steps: z.array(Step).max(maxSubtasks).describe("[] only when asking a question"),
      answer: z.string().nullable().describe("the answer with {s1} / {s1.field} for results, when no model is needed to word it; else null"),
      question: z.string().min(1).nullable().describe("null, unless asking the person"),
    })
    .superRefine((plan, context) => {
      checkLengths(plan, context);
      plan.steps.forEach((step, index) => {
        const names = new Set<string>();
        const mapped = step.args.filter(isMapped);
        step.args.forEach((arg, position) => {
          const at = ["steps", index, "args", position];
          if (names.has(arg.name)) context.addIssue({ code: "custom", path: [...at, "name"], message: `argument "${arg.name}" is given more than once` });
          names.add(arg.name);
          if (isMapped(arg) && mapped.length > 1) {
            context.addIssue({ code: "custom", path: at, message: `the step would run over ${mapped.map((other) => `"${other.name}"`).join(" and ")}; it runs over one list at most` });
          }
        });
      });
    });
  stepShapes.set(schema, { direct, full });
  return schema;
}

/** The bounds on lengths the schema leaves unsaid: ids and names 1 to 64 characters, an instruction at most 500, a format at most FORMAT_MAX_CHARS, paths not empty. */
function checkLengths(plan: { steps: WireStep[]; answer: string | null }, context: z.RefinementCtx): void {
  const bound = (value: string, max: number, path: Array<string | number>, what: string): void => {
    if (value.length === 0 || value.length > max) context.addIssue({ code: "custom", path, message: `${what} is 1 to ${max} characters` });
  };
  plan.steps.forEach((step, index) => {
    const at = ["steps", index];
    bound(step.id, 64, [...at, "id"], "a step id");
    if (step.do !== undefined && step.do.length > 500) context.addIssue({ code: "custom", path: [...at, "do"], message: "an instruction is at most 500 characters" });
    if (step.tool == null && (step.do ?? "").trim() === "") context.addIssue({ code: "custom", path: [...at, "do"], message: "a worker's step says what to do" });
    for (const [key, list] of [["reads", step.reads], ["writes", step.writes], ["after", step.after]] as const) (list ?? []).forEach((item, position) => bound(item, key === "after" ? 64 : 4_096, [...at, key, position], key === "after" ? "a step id" : "a path"));
    step.args.forEach((arg, position) => {
      bound(arg.name, 64, [...at, "args", position, "name"], "an argument's name");
      if ("path" in arg) bound(arg.path, 4_096, [...at, "args", position, "path"], "a path");
      if ("format" in arg) bound(arg.format, FORMAT_MAX_CHARS, [...at, "args", position, "format"], "a format");
    });
  });
  if (plan.answer !== null && (plan.answer.length === 0 || plan.answer.length > 4_000)) context.addIssue({ code: "custom", path: ["answer"], message: "an answer is 1 to 4000 characters (null when a model is to word it)" });
}

/** Each wire schema's step shapes, to say what is wrong with a step in the terms of the shape it was meant as. */
const stepShapes = new WeakMap<object, { direct: z.ZodType | undefined; full: z.ZodType }>();

/** The shape a step was meant as, by its fields: a tool step (a tool and no agent), or the full one. */
function meantShape(step: unknown, shapes: { direct: z.ZodType | undefined; full: z.ZodType }): z.ZodType {
  const keys = typeof step === "object" && step !== null ? Object.keys(step) : [];
  return keys.includes("tool") && !keys.includes("agent") && shapes.direct ? shapes.direct : shapes.full;
}

/**
 * A wire answer's issues with each step that fits none of the shapes told as the shape it was
 * meant as would tell them (a union says only "invalid input"), each at the field it is at.
 */
function wireIssues(answer: unknown, wire: PlanWireSchema, error: z.ZodError): z.core.$ZodIssue[] {
  const shapes = stepShapes.get(wire);
  const steps = (answer as { steps?: unknown }).steps;
  return error.issues.flatMap((issue) => {
    const [key, index] = issue.path;
    if (!shapes || issue.code !== "invalid_union" || key !== "steps" || typeof index !== "number" || issue.path.length !== 2 || !Array.isArray(steps)) return [issue];
    const again = meantShape(steps[index], shapes).safeParse(steps[index]);
    return again.success ? [issue] : again.error.issues.map((inner) => ({ ...inner, path: [...issue.path, ...inner.path] }));
  });
}

/** A step on the wire, in any of its shapes. */
interface WireStep {
  id: string;
  tool?: string | null;
  agent?: string;
  do?: string;
  args: WireArg[];
  tools?: string[] | null;
  after?: string[];
  reads?: string[];
  writes?: string[];
  capability?: string | null;
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

/** A wire argument as the internal one. */
function internalArg(arg: WireArg): SubtaskArg {
  if ("each" in arg) return { ref: arg.each, path: arg.path };
  if ("format" in arg) return { ref: arg.ref, path: arg.path, format: arg.format };
  if ("ref" in arg) return { ref: arg.ref, path: arg.path };
  return { value: "items" in arg ? arg.items : arg.value };
}

/** A wire plan as the internal PlanOutput: args as a record, the map as `mapOver`, `dependsOn` from the references and `after`, a direct step's agent and label filled in. */
export function fromPlanWire(wire: PlanWire, context: Pick<PlanReadContext, "agentFor">): PlanOutput {
  const subtasks = wire.steps.map((step: WireStep) => {
    const args = Object.fromEntries(step.args.map((arg): [string, SubtaskArg] => [arg.name, internalArg(arg)]));
    const mapped = step.args.find(isMapped)?.name;
    const tool = step.tool ?? undefined;
    const label = step.do !== undefined && step.do.trim() !== "" ? step.do : tool !== undefined ? callLabel(tool, args, mapped) : step.id;
    const planned: PlannedSubtask = {
      id: step.id,
      label,
      agent: step.agent ?? (tool !== undefined ? context.agentFor(tool) : ""),
      dependsOn: [...new Set([...referencedIds(args), ...(step.after ?? [])])],
      args,
    };
    if (tool !== undefined) planned.tool = tool;
    if (mapped !== undefined) planned.mapOver = mapped;
    if ((step.reads ?? []).length > 0) planned.reads = step.reads;
    if ((step.writes ?? []).length > 0) planned.writes = step.writes;
    // [] is "the worker needs no tool", null "every tool its agent has"; a direct step's tools are its own.
    if (tool === undefined && step.tools !== null && step.tools !== undefined) planned.tools = [...new Set(step.tools)];
    if (step.capability !== null && step.capability !== undefined) planned.capability = step.capability;
    return planned;
  });
  return { subtasks, ...(wire.question !== null ? { question: wire.question } : {}), ...(wire.answer !== null ? { answer: wire.answer } : {}) };
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

function wireArg(name: string, arg: SubtaskArg, each: boolean): WireArg {
  if (isArgRef(arg)) {
    if (each) return { name, each: arg.ref, path: arg.path };
    return arg.format !== undefined ? { name, ref: arg.ref, path: arg.path, format: arg.format } : { name, ref: arg.ref, path: arg.path };
  }
  const value = wireValueOf(arg.value);
  return each && Array.isArray(value) ? { name, items: value } : { name, value };
}

/** An internal plan in the wire shape (what the offline model answers), each step in its leanest shape. */
export function toPlanWire(plan: PlanOutput, context: Pick<PlanReadContext, "agentFor">): PlanWire {
  const steps = plan.subtasks.map((subtask): WireStep => {
    const args = Object.entries(subtask.args).map(([name, arg]) => wireArg(name, arg, subtask.mapOver === name));
    const refs = new Set(referencedIds(subtask.args));
    const after = subtask.dependsOn.filter((id) => !refs.has(id));
    const plain = after.length === 0 && subtask.capability === undefined;
    // A tool step whose agent and label code would give it anyway goes without them.
    if (subtask.tool !== undefined && plain && subtask.agent === context.agentFor(subtask.tool) && subtask.label === callLabel(subtask.tool, subtask.args, subtask.mapOver)) return { id: subtask.id, tool: subtask.tool, args };
    return {
      id: subtask.id,
      agent: subtask.agent,
      do: subtask.label,
      tool: subtask.tool ?? null,
      args,
      tools: subtask.tool === undefined ? (subtask.tools ?? null) : null,
      after,
      reads: subtask.reads ?? [],
      writes: subtask.writes ?? [],
      capability: subtask.capability ?? null,
    };
  });
  return { steps, answer: plan.answer ?? null, question: plan.question ?? null } as PlanWire;
}

/** Whether an answer that fits neither shape was meant as the wire shape (so its errors are the wire schema's). */
function looksLikeWire(answer: unknown): boolean {
  return typeof answer === "object" && answer !== null && ("steps" in answer || (answer as { question?: unknown }).question === null);
}

export type ReadResult<T> = { success: true; data: T } | { success: false; error: string };

/**
 * Reads the planner's answer: the wire shape (checked against the enums it was sent with) or
 * the internal shape (a record of args, absent fields — as scripted plans are written), either
 * way as the internal PlanOutput. Otherwise the errors, as zod words them (each with the field
 * it is at), of the shape the answer was meant in.
 */
export function readPlanAnswer(answer: unknown, wire: PlanWireSchema, context: Pick<PlanReadContext, "agentFor">): ReadResult<PlanOutput> {
  const parsed = wire.safeParse(answer);
  if (parsed.success) return { success: true, data: fromPlanWire(parsed.data, context) };
  const internal = PlanOutput.safeParse(answer);
  if (internal.success) return { success: true, data: internal.data };
  return { success: false, error: z.prettifyError(looksLikeWire(answer) ? new z.ZodError(wireIssues(answer, wire, parsed.error)) : internal.error) };
}
