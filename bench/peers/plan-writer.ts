import { dependenciesOf } from "./solution.js";
import type { PeerTask, Step, StepInput } from "./tasks.js";

/**
 * The oracle's plan for troupe, on the wire troupe's planner asked for: the compact wire (a step a
 * line, when the planner's system prompt gives that format and binds no plan function), or the
 * JSON wire (the `submit_plan` tool's parameters: each step in the shape of the schema's variants
 * that has the fields it needs), or — with neither — troupe's internal shape. Each step comes
 * from the task's solution; the answer is the task's answer template (what a planner that knows
 * the answer's shape writes). Everything that depends on troupe's plan wire is in this file.
 */

type Schema = Record<string, unknown>;

/**
 * How the oracle plays troupe's planner: `offered` plans what troupe's plan offers — a direct tool
 * step wherever a step decides nothing, and a direct combination step (a calculation over
 * references, a write of a referenced value) — and its answer template; `workers` makes every
 * step a worker's subtask (and gives no template: the synthesizer words the answer).
 */
export type PlanStyle = "workers" | "offered";

/** The JSONPath into a troupe subtask's result that an input takes: a mapped subtask's result is a report whose items' outputs are the values. */
export function troupePath(input: Extract<StepInput, { ref: string }>): string {
  const field = input.field === undefined ? "" : `.${input.field}`;
  return input.each ? `$.results[*].output${field}` : `$${field}`;
}

/** A step as planned: direct (its tool and arguments), or a worker's (its role, label and inputs). */
interface PlannedStep {
  step: Step;
  direct: boolean;
  args: Record<string, StepInput>;
}

function planned(step: Step, style: PlanStyle): PlannedStep {
  const args = style === "offered" ? (step.directArgs ?? step.combinedArgs) : undefined;
  return { step, direct: args !== undefined, args: args ?? step.inputs };
}

/** An input as the compact wire writes it: JSON, or `$s1.path` (with `as "format"`), `each` before the list the step runs over. */
function compactInput(input: StepInput, each: boolean): string {
  const prefix = each ? "each " : "";
  if ("value" in input) return `${prefix}${JSON.stringify(input.value)}`;
  const format = input.format !== undefined ? ` as ${JSON.stringify(input.format)}` : "";
  return `${prefix}$${input.ref}${troupePath(input).slice(1)}${format}`;
}

/** The plan on the compact wire. */
export function writeCompactPlan(task: PeerTask, style: PlanStyle): string {
  const lines = task.steps.map((step) => {
    const { direct, args } = planned(step, style);
    const written = Object.entries(args).map(([name, input]) => `${name}: ${compactInput(input, step.mapOver === name)}`);
    if (direct) return `${step.id} = ${step.tool}(${written.join(", ")})`;
    return `${step.id} = @${step.role}(${[JSON.stringify(step.label), ...written].join(", ")}) tools=[${step.tool}]`;
  });
  if (style === "offered") lines.push(`answer: ${task.template}`);
  return lines.join("\n");
}

const propertiesOf = (schema: Schema | undefined): Record<string, Schema> => (schema?.properties ?? {}) as Record<string, Schema>;
const variantsOf = (schema: Schema): Schema[] => (Array.isArray(schema.anyOf) ? (schema.anyOf as Schema[]) : Array.isArray(schema.oneOf) ? (schema.oneOf as Schema[]) : [schema]);
const requiredOf = (schema: Schema): string[] => (Array.isArray(schema.required) ? (schema.required as string[]) : Object.keys(propertiesOf(schema)));

/** The variant of a union whose required fields are exactly `fields`, or failing that the first that has them all. */
function variantWith(schema: Schema, fields: readonly string[]): Schema | undefined {
  const variants = variantsOf(schema);
  const same = (variant: Schema) => {
    const required = requiredOf(variant);
    return required.length === fields.length && fields.every((field) => required.includes(field));
  };
  return variants.find(same) ?? variants.find((variant) => fields.every((field) => field in propertiesOf(variant)));
}

/** An argument in the JSON wire's shape for it: a literal, a literal list run over, a reference, one run over, or one made text. */
function jsonArg(name: string, input: StepInput, each: boolean): Record<string, unknown> {
  if ("value" in input) return each && Array.isArray(input.value) ? { name, items: input.value } : { name, value: input.value };
  if (each) return { name, each: input.ref, path: troupePath(input) };
  return input.format !== undefined ? { name, ref: input.ref, path: troupePath(input), format: input.format } : { name, ref: input.ref, path: troupePath(input) };
}

/** An object with every property a variant lists: the known values, and for the rest what is empty (null, or []). */
function fill(variant: Schema, known: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(propertiesOf(variant)).map(([name, property]) => [name, name in known ? known[name] : variantsOf(property).some((branch) => branch.type === "null") ? null : []]),
  );
}

/** The plan in the shape of the JSON wire's schema (`parameters`: what troupe's planner sent as the plan function's). */
function writeJsonPlan(task: PeerTask, parameters: Schema, style: PlanStyle): Record<string, unknown> {
  const stepSchema = (propertiesOf(parameters).steps?.items ?? {}) as Schema;
  const steps = task.steps.map((step) => {
    const { direct, args } = planned(step, style);
    const wireArgs = Object.entries(args).map(([name, input]) => jsonArg(name, input, step.mapOver === name));
    const file = step.tool === "write_file" ? (step.inputs.path as { value?: unknown } | undefined)?.value : undefined;
    if (direct) return fill(variantWith(stepSchema, ["id", "tool", "args"]) ?? stepSchema, { id: step.id, tool: step.tool, args: wireArgs });
    const known = { id: step.id, agent: step.role, do: step.label, args: wireArgs, tools: [step.tool], tool: null, after: [], reads: [], writes: typeof file === "string" ? [file] : [] };
    const variant = typeof file === "string" ? variantWith(stepSchema, ["id", "agent", "do", "tool", "args", "tools", "after", "reads", "writes", "capability"]) : variantWith(stepSchema, ["id", "agent", "do", "args", "tools"]);
    return fill(variant ?? stepSchema, known);
  });
  return { steps, answer: style === "offered" ? task.template : null, question: null };
}

/** The plan in troupe's internal shape (what a planner without a schema writes). */
function writeInternalPlan(task: PeerTask, style: PlanStyle): Record<string, unknown> {
  const internal = (input: StepInput): Record<string, unknown> => {
    if ("value" in input) return { value: input.value };
    return input.format !== undefined ? { ref: input.ref, path: troupePath(input), format: input.format } : { ref: input.ref, path: troupePath(input) };
  };
  const subtasks = task.steps.map((step) => {
    const { direct, args } = planned(step, style);
    return {
      id: step.id,
      label: step.label,
      agent: step.role,
      dependsOn: dependenciesOf(step),
      args: Object.fromEntries(Object.entries(args).map(([name, input]) => [name, internal(input)])),
      ...(direct ? { tool: step.tool } : { tools: [step.tool] }),
      ...(step.mapOver !== undefined ? { mapOver: step.mapOver } : {}),
    };
  });
  return { subtasks, ...(style === "offered" ? { answer: task.template } : {}) };
}

/**
 * The plan for a task in the shape of `parameters` (the JSON schema troupe's planner sent for its
 * plan function), or, without a schema, in troupe's internal shape.
 */
export function writePlan(task: PeerTask, parameters: Schema | undefined, style: PlanStyle): Record<string, unknown> {
  return parameters && propertiesOf(parameters).steps ? writeJsonPlan(task, parameters, style) : writeInternalPlan(task, style);
}
