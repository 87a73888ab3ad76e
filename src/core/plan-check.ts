import type { AgentProfile, FileTools } from "./agent-fit.js";
import { answerTemplateProblems } from "./answer-template.js";
import { itemSchema, type JsonSchema, mapReportSchema, referencedSchema } from "./arg-types.js";
import { InputError } from "./errors.js";
import { isArgRef, type PlannedSubtask, type PlanRules, validatePlan } from "./plan.js";
import { describeAdded, orderByResources, type ResourceUse } from "./resources.js";
import type { ToolSpec } from "./tool-spec.js";

/**
 * The one plan check every entry point applies — the planner node (whole plans, streamed
 * prefixes, a person's edit), a fork's edited plan, `POST /api/v1/plan`, and so the task service
 * and the eval runner, whose runs go through the planner node: validation (`validatePlan`),
 * agent fit (the tools each agent may use in the run, its capabilities), tool availability (the
 * run's allowed tools), a direct step's arguments against its tool's schema (literals, and
 * references whose type the earlier step's tool declares), then resource ordering
 * (`orderByResources`); and a plan's answer template against its steps.
 */

/** An agent as the check sees it (`AgentDefinition` has this shape). */
export interface CatalogAgent {
  name: string;
  tools: readonly string[];
  capabilities?: readonly string[];
}

/** A tool as the check sees it (`ToolDefinition` has this shape). */
export interface CatalogTool {
  name: string;
  permission: string;
  resources?: unknown;
}

/**
 * What a plan is checked against: the agent and tool registries, by the part of their shape the
 * check reads (core imports neither registry).
 */
export interface PlanCatalog {
  agents: { list(): readonly CatalogAgent[]; names(): readonly string[] };
  tools: {
    names(): string[];
    has(name: string): boolean;
    list(): readonly CatalogTool[];
    spec(name: string): ToolSpec;
    resources(name: string, args: Record<string, unknown>): ResourceUse | undefined;
    /** The JSON schema of a tool's value, when it declares one. */
    outputSchema?(name: string): JsonSchema | undefined;
    /** Why these arguments do not fit the tool, each naming the argument and what the tool takes; empty when they fit or cannot be judged. */
    argumentProblems?(name: string, args: Readonly<Record<string, PlannedArgument>>): string[];
  };
}

/**
 * A direct step's argument as the plan check knows it: a literal value, or a reference (`from`
 * names it) with the schema of what it selects when the step it refers to declares one.
 */
export type PlannedArgument = { value: unknown } | { from: string; schema?: JsonSchema };

/** How a plan note says the plan's answer template was left out (the other notes are about order). */
export const ANSWER_LEFT_OUT = "the plan's answer was left out";

/** Literal items of a list a step runs over that are checked (each stands for the argument once). */
const MAPPED_ITEMS_CHECKED = 20;

/** What one run (or one plan request) allows: its tools, its size bound, the model calls its budget leaves the plan's workers. */
export interface PlanLimits {
  /** The tools the run may use; null or absent: every registered tool. */
  allowedTools?: readonly string[] | null;
  maxSubtasks?: number;
  modelCallsLeft?: number;
}

/**
 * A plan as it will run (with the dependencies resource ordering added, and a note for each; its
 * answer template when that reads for these steps), or every reason it cannot.
 */
export type PlanVerdict = { subtasks: PlannedSubtask[]; notes: string[]; answer?: string } | { errors: string[] };

/** The agents as the check and assignment see them: the tools each may use in this run, and its capabilities. */
export function agentProfiles(catalog: Pick<PlanCatalog, "agents">, allowedTools?: readonly string[] | null): AgentProfile[] {
  return catalog.agents.list().map((agent) => ({
    name: agent.name,
    tools: agent.tools.filter((name) => allowedTools?.includes(name) ?? true),
    capabilities: agent.capabilities ?? [],
  }));
}

const fileToolsMade = new WeakMap<object, { count: number; files: FileTools }>();

/** The tools that read and write workspace files, by what each declares for its path arguments (worked out once per registry). */
export function fileTools(catalog: Pick<PlanCatalog, "tools">): FileTools {
  const { tools } = catalog;
  const known = fileToolsMade.get(tools);
  if (known && known.count === tools.names().length) return known.files;
  const readers: string[] = [];
  const writers: string[] = [];
  for (const tool of tools.list()) {
    if (!tool.resources) continue;
    const properties = (tools.spec(tool.name).function.parameters.properties ?? {}) as Record<string, { type?: unknown }>;
    const probe = Object.fromEntries(Object.entries(properties).filter(([, property]) => property.type === "string").map(([name]) => [name, `probe/${name}`]));
    const declared = tools.resources(tool.name, probe);
    // A tool that runs code in the workspace (code_run) may read and write any file there.
    const runsCode = tool.permission === "EXECUTE";
    if (runsCode || (declared?.reads.length ?? 0) > 0) readers.push(tool.name);
    if (runsCode || (declared?.writes.length ?? 0) > 0) writers.push(tool.name);
  }
  const files = { readers, writers };
  fileToolsMade.set(tools, { count: tools.names().length, files });
  return files;
}

/** The schema of a step's result, as later references read it: its tool's value (a map's report around it), unknown for a worker. */
function resultSchema(catalog: Pick<PlanCatalog, "tools">, step: PlannedSubtask | undefined): JsonSchema | undefined {
  if (step?.tool === undefined || !catalog.tools.has(step.tool)) return undefined;
  const value = catalog.tools.outputSchema?.(step.tool);
  return step.mapOver !== undefined ? mapReportSchema(value) : value;
}

/** The check of a direct step's arguments against its tool, for `validatePlan`; undefined when the catalog cannot judge arguments. */
function argumentCheck(catalog: Pick<PlanCatalog, "tools">): PlanRules["argumentProblems"] {
  const problemsOf = catalog.tools.argumentProblems?.bind(catalog.tools);
  if (!problemsOf) return undefined;
  return (subtask, steps) => {
    const tool = subtask.tool;
    if (tool === undefined || !catalog.tools.has(tool)) return [];
    const fixed: Record<string, PlannedArgument> = {};
    let items: unknown[] | undefined;
    for (const [name, arg] of Object.entries(subtask.args)) {
      const mapped = subtask.mapOver === name;
      if (!isArgRef(arg)) {
        if (mapped && Array.isArray(arg.value)) items = arg.value.slice(0, MAPPED_ITEMS_CHECKED);
        else fixed[name] = { value: arg.value };
        continue;
      }
      let schema = arg.format !== undefined ? { type: "string" } : referencedSchema(resultSchema(catalog, steps.get(arg.ref)), arg.path);
      if (mapped) schema = itemSchema(schema);
      fixed[name] = { from: `${arg.ref}${arg.path === "$" ? "" : ` ${arg.path}`}`, ...(schema ? { schema } : {}) };
    }
    const name = subtask.mapOver;
    const calls = items !== undefined && name !== undefined ? items.map((item) => ({ ...fixed, [name]: { value: item } })) : [fixed];
    const problems = [...new Set(calls.flatMap((args) => problemsOf(tool, args)))];
    return problems.map((problem) => `subtask ${subtask.id}: ${problem}`);
  };
}

/** The rules `validatePlan` applies for this catalog and these limits. */
export function planRules(catalog: PlanCatalog, limits: PlanLimits = {}): PlanRules {
  const allowed = limits.allowedTools ?? undefined;
  const argumentProblems = argumentCheck(catalog);
  return {
    agents: catalog.agents.names(),
    tools: allowed ?? catalog.tools.names(),
    ...(limits.maxSubtasks !== undefined ? { maxSubtasks: limits.maxSubtasks } : {}),
    profiles: agentProfiles(catalog, allowed),
    files: fileTools(catalog),
    ...(limits.modelCallsLeft !== undefined ? { modelCallsLeft: limits.modelCallsLeft } : {}),
    ...(argumentProblems ? { argumentProblems } : {}),
  };
}

/**
 * A whole plan judged: valid (`validatePlan`), then ordered by the workspace paths its subtasks
 * read and write — a missing read-after-write or write-after-write dependency is added (and
 * noted), an unclear one is an error for the planner to settle. Its answer template is kept when
 * it reads for these steps, and left out with a note otherwise.
 */
export function checkPlan(subtasks: readonly PlannedSubtask[], catalog: PlanCatalog, limits: PlanLimits = {}, answer?: string): PlanVerdict {
  const errors = validatePlan(subtasks, planRules(catalog, limits));
  if (errors.length > 0) return { errors };
  const ordered = orderByResources(subtasks, (tool, args) => catalog.tools.resources(tool, args));
  if (ordered.errors.length > 0) return { errors: ordered.errors };
  const notes = describeAdded(ordered.added);
  if (answer === undefined) return { subtasks: ordered.subtasks, notes };
  // A template that does not read is left out, not a reason to plan again: the steps stand, and the synthesizer words the answer.
  const problems = answerTemplateProblems(answer, subtasks.map((subtask) => subtask.id));
  if (problems.length > 0) return { subtasks: ordered.subtasks, notes: [...notes, `${ANSWER_LEFT_OUT} (the synthesizer writes it): ${problems.join("; ")}`] };
  return { subtasks: ordered.subtasks, notes, answer };
}

/**
 * The start of a plan streaming in, judged as each subtask arrives: the first that breaks a rule
 * the rest cannot mend refuses it (and every later one), with its `problems`.
 */
export class PrefixCheck {
  readonly #rules: PlanRules;
  readonly #seen: PlannedSubtask[] = [];
  problems: string[] | undefined;

  constructor(catalog: PlanCatalog, limits: PlanLimits = {}) {
    this.#rules = planRules(catalog, limits);
  }

  accept(subtask: PlannedSubtask): boolean {
    if (this.problems) return false;
    this.#seen.push(subtask);
    const problems = validatePlan(this.#seen, this.#rules, { prefix: true });
    if (problems.length > 0) this.problems = problems;
    return this.problems === undefined;
  }
}

/**
 * A streamed subtask as it will run, given those before it, or undefined when it cannot start
 * before the whole plan is judged: the workspace paths it shares with an earlier subtask make the
 * order unclear. It gets the dependencies resource ordering adds (only ever to the later
 * subtask, so the prefix started now is what the whole plan will give).
 */
export function orderStreamed(arrived: readonly PlannedSubtask[], subtask: PlannedSubtask, catalog: Pick<PlanCatalog, "tools">): PlannedSubtask | undefined {
  const ordered = orderByResources([...arrived, subtask], (tool, args) => catalog.tools.resources(tool, args));
  return ordered.errors.length > 0 ? undefined : ordered.subtasks.at(-1);
}

/** Refuses a request naming tools that are not registered (`unknown_tool`): a request's tools narrow what its agents may use, never name new ones. */
export function assertToolsKnown(requested: readonly string[] | undefined, tools: Pick<PlanCatalog["tools"], "has" | "names">): void {
  const unknown = (requested ?? []).filter((name) => !tools.has(name));
  if (unknown.length === 0) return;
  throw new InputError("unknown_tool", `unknown tool${unknown.length > 1 ? "s" : ""}: ${unknown.join(", ")}; available: ${tools.names().join(", ")}`, { tools: unknown });
}
