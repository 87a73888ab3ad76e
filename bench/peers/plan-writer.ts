import { valueFromSchema } from "../../src/testing/schema-following-chat-model.js";
import { dependenciesOf } from "./solution.js";
import type { PeerTask, Step, StepInput } from "./tasks.js";

/**
 * The oracle's plan for troupe, written through the plan schema troupe's planner sends with its
 * request (the `submit_plan` tool's parameters): every subtask field the schema asks for is
 * filled from the task's solution by the field's name, and a field this writer does not know
 * gets a value made from its own schema (null where it may be null, [] for a list). The
 * arguments follow the schema's shape for them: a record, or a list whose items are one of
 * several shapes (a literal, a literal list to run over, a reference with `each` for a map). Everything that depends on troupe's plan wire is in this file.
 */

type Schema = Record<string, unknown>;

/**
 * How the oracle plays troupe's planner: `offered` plans what troupe's plan schema offers — a
 * direct tool step wherever a step decides nothing, when subtasks may name a tool, and a direct
 * combination step (a calculation over references, a write of a referenced value) when a
 * reference can also be formatted as text; `workers` makes every step a worker's subtask.
 */
export type PlanStyle = "workers" | "offered";

/** What troupe's plan schema lets a planner write: direct tool steps, and combination steps as well. */
interface Offered {
  direct: boolean;
  combined: boolean;
}

/** A subtask as the solution gives it, before it is put in the wire shape. */
interface AbstractSubtask {
  id: string;
  label: string;
  agent: string;
  dependsOn: string[];
  args: Array<{ name: string; input: StepInput }>;
  tool: string | null;
  tools: string[] | null;
  capability: null;
  mapOver: string | null;
  reads: string[];
  writes: string[];
}

/** The JSONPath into a troupe subtask's result that an input takes: a mapped subtask's result is a report whose items' outputs are the values. */
export function troupePath(input: Extract<StepInput, { ref: string }>): string {
  const field = input.field === undefined ? "" : `.${input.field}`;
  return input.each ? `$.results[*].output${field}` : `$${field}`;
}

/** What a plan schema offers: a subtask's `tool` that takes a tool's name; a reference argument with a `format`. */
function offeredBy(itemSchema: Schema | undefined): Offered {
  if (!itemSchema) return { direct: true, combined: true };
  const properties = propertiesOf(itemSchema);
  const direct = properties.tool !== undefined && variantsOf(properties.tool).some((variant) => variant.type === "string" || Array.isArray(variant.enum));
  const argsSchema = properties.args ?? {};
  const argVariants = argsSchema.type === "array" ? variantsOf((argsSchema.items ?? {}) as Schema) : [];
  const combined = direct && argVariants.some((variant) => "ref" in propertiesOf(variant) && "format" in propertiesOf(variant));
  return { direct, combined };
}

function abstractSubtask(step: Step, style: PlanStyle, offered: Offered): AbstractSubtask {
  const planned = style === "offered" ? (offered.direct ? step.directArgs : undefined) ?? (offered.combined ? step.combinedArgs : undefined) : undefined;
  const direct = planned !== undefined;
  const args = planned ?? step.inputs;
  const file = step.tool === "write_file" ? (step.inputs.path as { value?: unknown } | undefined)?.value : undefined;
  return {
    id: step.id,
    label: step.label,
    agent: step.role,
    dependsOn: dependenciesOf(step),
    args: Object.entries(args).map(([name, input]) => ({ name, input })),
    tool: direct ? step.tool : null,
    tools: direct ? null : [step.tool],
    capability: null,
    mapOver: step.mapOver ?? null,
    reads: [],
    writes: typeof file === "string" ? [file] : [],
  };
}

const propertiesOf = (schema: Schema | undefined): Record<string, Schema> => (schema?.properties ?? {}) as Record<string, Schema>;
const variantsOf = (schema: Schema): Schema[] => (Array.isArray(schema.anyOf) ? (schema.anyOf as Schema[]) : Array.isArray(schema.oneOf) ? (schema.oneOf as Schema[]) : [schema]);

/**
 * One argument in the shape an argument schema asks for: of its variants, the one with the fields
 * this argument needs — a reference (`ref`), a literal list the subtask runs over (`items`), or a
 * literal (`value`). `each` marks the argument the subtask maps over.
 */
function wireArg(schema: Schema, name: string, input: StepInput, each: boolean): Record<string, unknown> {
  const isRef = "ref" in input;
  const mapsLiteral = each && !isRef && Array.isArray(input.value);
  const variants = variantsOf(schema).filter((variant) => variant.type === "object" || variant.properties !== undefined);
  const wanted = isRef ? "ref" : mapsLiteral ? "items" : "value";
  const variant = variants.find((candidate) => wanted in propertiesOf(candidate) && (wanted === "ref" || !("ref" in propertiesOf(candidate)) || variants.length === 1)) ?? variants[0] ?? schema;
  const known: Record<string, unknown> = isRef
    ? { name, value: null, ref: input.ref, path: troupePath(input), each, format: input.format ?? null }
    : mapsLiteral && "items" in propertiesOf(variant)
      ? { name, items: input.value }
      : { name, value: input.value, ref: null, path: null };
  return fill(variant, known);
}

/** An object with every property its schema lists: the known values, and for the rest what the property's own schema allows as empty. */
function fill(schema: Schema, known: Record<string, unknown>): Record<string, unknown> {
  const properties = propertiesOf(schema);
  if (Object.keys(properties).length === 0) return known;
  return Object.fromEntries(Object.entries(properties).map(([name, property]) => [name, name in known ? known[name] : emptyFor(property, name)]));
}

function emptyFor(schema: Schema, name: string): unknown {
  const variants = variantsOf(schema);
  if (variants.some((variant) => variant.type === "null")) return null;
  if (variants.some((variant) => variant.type === "array")) return [];
  return valueFromSchema(schema, name);
}

/** An argument in troupe's internal shape. */
function internalArg(input: StepInput): Record<string, unknown> {
  if (!("ref" in input)) return { value: input.value };
  return input.format !== undefined ? { ref: input.ref, path: troupePath(input), format: input.format } : { ref: input.ref, path: troupePath(input) };
}

function wireSubtask(itemSchema: Schema, subtask: AbstractSubtask): Record<string, unknown> {
  const argsSchema = propertiesOf(itemSchema).args ?? { type: "array" };
  const args =
    argsSchema.type === "object"
      ? Object.fromEntries(subtask.args.map(({ name, input }) => [name, internalArg(input)]))
      : subtask.args.map(({ name, input }) => wireArg((argsSchema.items ?? {}) as Schema, name, input, subtask.mapOver === name));
  return fill(itemSchema, { ...subtask, args });
}

/**
 * The plan for a task in the shape of `parameters` (the JSON schema troupe's planner sent), or,
 * without a schema, in troupe's internal shape.
 */
export function writePlan(task: PeerTask, parameters: Schema | undefined, style: PlanStyle): Record<string, unknown> {
  const itemSchema = propertiesOf(parameters).subtasks?.items as Schema | undefined;
  const subtasks = task.steps.map((step) => abstractSubtask(step, style, offeredBy(itemSchema)));
  if (!parameters || !itemSchema) {
    return {
      // The internal shape leaves out what is unused rather than sending null.
      subtasks: subtasks.map(({ args, ...subtask }) => ({
        ...Object.fromEntries(Object.entries(subtask).filter(([, value]) => value !== null)),
        args: Object.fromEntries(args.map(({ name, input }) => [name, internalArg(input)])),
      })),
    };
  }
  return fill(parameters, { subtasks: subtasks.map((subtask) => wireSubtask(itemSchema, subtask)), question: null });
}
