import { z } from "zod";
import { type AgentProfile, type Assignment, type FileTools, fittingAgents, missingFor } from "./agent-fit.js";
import { pathProblem } from "./json-path.js";
import { FORMAT_MAX_CHARS, formatProblem } from "./ref-format.js";
import { LIMITS } from "./limits.js";
import type { OverallStatus } from "./map-report.js";
import type { Label } from "./provenance.js";

/** The built-in worker agents. Custom agents add their names to the registry the planner validates against. */
export const BUILTIN_AGENTS = ["research", "code", "execute", "memory", "cleanup"] as const;

/** A subtask argument: a literal value, or a reference into an earlier subtask's result. */
export const ArgValue = z.object({ value: z.unknown() }).strict();
export type ArgValue = z.infer<typeof ArgValue>;
export const ArgRef = z
  .object({
    ref: z.string().min(1).describe("id of the subtask whose result this argument takes"),
    path: z.string().min(1).default("$").describe("JSONPath into that result; $ is the whole result"),
    format: z
      .string()
      .min(1)
      .max(FORMAT_MAX_CHARS)
      .optional()
      .describe('the selected value as text, one line per item: {} is the item, {field} a field of it (e.g. "{item}: {price}")'),
  })
  .strict();
export type ArgRef = z.infer<typeof ArgRef>;
export const SubtaskArg = z.union([ArgValue, ArgRef]);
export type SubtaskArg = z.infer<typeof SubtaskArg>;

export function isArgRef(arg: SubtaskArg): arg is ArgRef {
  return typeof (arg as ArgRef).ref === "string";
}

/** A subtask as the planner writes it. */
export const PlannedSubtask = z.object({
  id: z.string().min(1).max(64).describe("short unique id such as s1"),
  label: z.string().min(1).max(500).describe("what this subtask does, as an instruction to the worker"),
  agent: z.string().min(1).describe("the worker that runs it: research, code or execute"),
  dependsOn: z.array(z.string()).default([]).describe("ids of subtasks that must finish first"),
  args: z.record(z.string(), SubtaskArg).default({}).describe("named inputs: {value} or {ref, path}"),
  tool: z.string().optional().describe("run this tool directly with the resolved args, without a model call"),
  mapOver: z
    .string()
    .optional()
    .describe("name of a list argument: the subtask runs once per item (that argument set to the item) and reports per-item results"),
  reads: z.array(z.string().min(1)).optional().describe("workspace paths this subtask reads (files or folders)"),
  writes: z.array(z.string().min(1)).optional().describe("workspace paths this subtask creates, changes or deletes"),
  tools: z.array(z.string().min(1)).optional().describe("the tools its worker needs: it is offered these (and find_tools for more); absent: its agent's tools"),
  capability: z.string().min(1).optional().describe("a capability the subtask needs: the least busy agent that has it (and the tools) runs it"),
});
export type PlannedSubtask = z.infer<typeof PlannedSubtask>;

/** What the planner returns: subtasks (and, when the plan can state its answer, an answer template), or a question when the task cannot be planned without a person. */
export const PlanOutput = z.object({
  subtasks: z.array(PlannedSubtask).describe("the subtasks; empty only when asking a question"),
  question: z.string().optional().describe("a question for the person, when the task is ambiguous"),
  answer: z.string().min(1).optional().describe("the answer with {s1} / {s1.path} for results, filled by code once they are verified (src/core/answer-template.ts)"),
});
export type PlanOutput = z.infer<typeof PlanOutput>;

export type SubtaskStatus = "pending" | "running" | "done" | "failed" | "skipped";

/**
 * Why a subtask is not done: it failed (`error`), its worker could not do this kind of work
 * (`unable`, e.g. it needs a language model), it finished without the value its dependents need
 * (`empty`), a person rejected one of its tool calls (`rejected`), its model refused the work
 * (`refused`: asking the same model again would only ask it to change its mind), a file it wrote is missing or
 * differs from its source (`artifact`), or the run's budget ran out (`budget`).
 */
export const FAILURE_KINDS = ["error", "unable", "empty", "rejected", "refused", "artifact", "budget"] as const;
export type FailureKind = (typeof FAILURE_KINDS)[number];

/**
 * A workspace file a subtask's tool calls changed, as checked on disk right after the call:
 * its size and SHA-256 (absent when it was deleted), and — when what was written came from an
 * earlier result — that source's size and whether the file holds it byte for byte.
 */
export interface Artifact {
  path: string;
  tool: string;
  action: "written" | "deleted";
  bytes?: number;
  sha256?: string;
  /**
   * What the file was meant to hold: a value handed on by reference (`byReference`, so it must
   * be identical) or the text the subtask was given, which a model retyped.
   */
  source?: { from: string; bytes: number; identical: boolean; byReference: boolean };
  /** Set when the file could not be checked. */
  problem?: string;
}

/** A file a subtask could not write: why, and the content it was to hold, kept in the stash (seed 000 §1.5: not lost). */
export interface UnwrittenFile {
  path: string;
  tool: string;
  reason: string;
  /** The stash handle of the content. */
  ref?: string;
  bytes: number;
}

/**
 * A mapped subtask's per-item outcome as the graph state keeps it: counts and a few failed
 * items (bounded previews). The full report lives in the stash.
 */
export interface MapTally {
  overallStatus: OverallStatus;
  total: number;
  succeeded: number;
  failed: number;
  /** The first failed items: index, input preview, error (at most `LIMITS.mapFailuresKept`). */
  failures: Array<{ index: number; input: string; error: string }>;
}

/** The files a mapped subtask's items were to make and the workspace does not hold: how many items, and the first paths. */
export interface MissingFiles {
  items: number;
  paths: string[];
}

/**
 * The outcome of one subtask attempt, as kept in the graph state: a handle to the result in the
 * stash, its size and a bounded summary — never the result itself.
 */
export interface SubtaskResult {
  status: SubtaskStatus;
  attempts: number;
  /** Where the result downstream references select from is stashed. */
  ref?: string;
  /** Size of the stashed result (JSON, bytes). */
  bytes?: number;
  /** A bounded, human-readable summary of the result. */
  summary?: string;
  /** Per-item counts of a mapped subtask. */
  map?: MapTally;
  /** Set when the critic sent a partly failed map back: the next attempt runs only the failed items. */
  retryFailedItems?: boolean;
  error?: string;
  /** Set when the status is `failed`: why. */
  failureKind?: FailureKind;
  /** Workspace files its tool calls wrote or deleted (at most `LIMITS.artifactsKept`). */
  artifacts?: Artifact[];
  /** Files it meant to write and could not: the reason, and where the content it meant them to hold is kept (the answer carries it). */
  unwritten?: UnwrittenFile[];
  /** A map whose items were to make files the workspace does not hold: the review cannot pass while it has these. */
  missingFiles?: MissingFiles;
  /** How it was assigned to an agent by capability and load (the plan's agent runs it otherwise). */
  assignment?: Assignment;
  /** The tools its worker was offered, and why (only when fewer than its agent's tools). */
  offer?: ToolOffer;
  startedAt?: number;
  endedAt?: number;
  llmCalls?: number;
  toolCalls?: number;
  /** Where its result came from, when that is untrusted (absent: trusted). See src/core/provenance.ts. */
  provenance?: Label;
}

/** A subtask with its current status, as shown to users (`--json` plan, `runs show`). */
export interface SubtaskView extends PlannedSubtask {
  status: SubtaskStatus;
  attempts: number;
  summary?: string;
  error?: string;
  failureKind?: FailureKind;
  artifacts?: Artifact[];
  missingFiles?: MissingFiles;
  durationMs?: number;
  /** Stash handle and size of the result. */
  ref?: string;
  bytes?: number;
  map?: MapTally;
  /** Where its result came from, when that is untrusted. */
  provenance?: Label;
  /** The agent that ran it chosen by capability and load, from these candidates (`agent` is then that one). */
  assignment?: Assignment;
  /** The tools its worker was offered, when fewer than its agent's. */
  offer?: ToolOffer;
}

/** The tools a worker was offered for its subtask, and why: what the plan named, or what retrieval found. */
export interface ToolOffer {
  /** `planned`: the plan named the tools; `retrieval`: the most relevant of more than the threshold. */
  via: "planned" | "retrieval";
  /** How many tools its agent could use. */
  total: number;
  offered: Array<{ name: string; why: string }>;
  /** Tools added later by find_tools, with the query that found them. */
  found: Array<{ query: string; names: string[] }>;
}

export interface PlanRules {
  agents: readonly string[];
  tools?: readonly string[];
  maxSubtasks?: number;
  /** The agents with the tools they can reach and their capabilities: a subtask's agent must have what it needs. */
  profiles?: readonly AgentProfile[];
  /** The tools that read and write workspace files (a worker that declares paths needs one). */
  files?: FileTools;
  /** The model calls the run's budget leaves for the plan's workers (`maxModelCalls`), when it has that limit. */
  modelCallsLeft?: number;
  /** Why a direct step's arguments do not fit its tool (each naming the step), given the steps before it by id; absent: not checked. */
  argumentProblems?: (subtask: PlannedSubtask, steps: ReadonlyMap<string, PlannedSubtask>) => string[];
}

/**
 * The fewest model calls a plan's workers make: one per subtask without a direct tool, one per
 * item of such a subtask mapped over a literal list (a list from a reference counts once).
 */
export function workerModelCalls(subtasks: readonly PlannedSubtask[]): number {
  let calls = 0;
  for (const subtask of subtasks) {
    if (subtask.tool !== undefined) continue;
    const mapped = subtask.mapOver !== undefined ? subtask.args[subtask.mapOver] : undefined;
    calls += mapped && !isArgRef(mapped) && Array.isArray(mapped.value) ? mapped.value.length : 1;
  }
  return calls;
}

/**
 * Every reason a plan cannot run, as sentences the planner can act on.
 * An empty list means the plan is valid.
 *
 * With `prefix`, the subtasks are the start of a plan still streaming in, and only the reasons
 * that the rest of the plan cannot take away are given: too many subtasks, a repeated id, an
 * unknown agent or tool, an agent without the tools it needs, a reference outside `dependsOn`, a
 * bad path or `mapOver`, a direct step's arguments its tool does not take, a cycle among them,
 * more worker calls than the budget leaves. A
 * dependency on a subtask not yet arrived may still come.
 */
export function validatePlan(subtasks: readonly PlannedSubtask[], rules: PlanRules, options: { prefix?: boolean } = {}): string[] {
  const errors: string[] = [];
  const prefix = options.prefix === true;
  const maxSubtasks = rules.maxSubtasks ?? LIMITS.maxSubtasks;
  if (subtasks.length === 0 && !prefix) errors.push("the plan has no subtasks");
  if (subtasks.length > maxSubtasks) {
    errors.push(
      prefix
        ? `the plan has more than ${maxSubtasks} subtasks (stopped at subtask ${subtasks[maxSubtasks]?.id ?? subtasks.length}, number ${maxSubtasks + 1}); at most ${maxSubtasks} are allowed`
        : `the plan has ${subtasks.length} subtasks; at most ${maxSubtasks} are allowed`,
    );
  }
  const ids = new Set<string>();
  for (const subtask of subtasks) {
    if (ids.has(subtask.id)) errors.push(`subtask id "${subtask.id}" is used more than once`);
    ids.add(subtask.id);
  }
  const others = (id: string): string => listed([...ids].filter((other) => other !== id));
  const byId = new Map(subtasks.map((subtask) => [subtask.id, subtask]));
  for (const subtask of subtasks) {
    if (!rules.agents.includes(subtask.agent)) {
      errors.push(`subtask ${subtask.id}: unknown agent "${subtask.agent}" (known: ${rules.agents.join(", ")})`);
    }
    if (subtask.tool !== undefined && rules.tools !== undefined && !rules.tools.includes(subtask.tool)) {
      errors.push(`subtask ${subtask.id}: unknown tool "${subtask.tool}" (known: ${listed(rules.tools)})`);
    }
    const unknownTools = (subtask.tools ?? []).filter((tool) => rules.tools !== undefined && !rules.tools.includes(tool));
    if (unknownTools.length > 0) {
      errors.push(`subtask ${subtask.id}: unknown tool${unknownTools.length > 1 ? "s" : ""} ${unknownTools.map((tool) => `"${tool}"`).join(", ")} in tools (known: ${listed(rules.tools ?? [])})`);
    }
    // A tool the run may not use is an unknown tool, not a gap in who may use it.
    const toolUnknown = subtask.tool !== undefined && rules.tools !== undefined && !rules.tools.includes(subtask.tool);
    if (rules.profiles && unknownTools.length === 0 && !toolUnknown) errors.push(...fitProblems(subtask, rules.profiles, rules.files ?? { readers: [], writers: [] }));
    for (const dependency of subtask.dependsOn) {
      if (dependency === subtask.id) errors.push(`subtask ${subtask.id} depends on itself (dependsOn may name: ${others(subtask.id)})`);
      else if (!ids.has(dependency) && !prefix) errors.push(`subtask ${subtask.id} depends on "${dependency}", which is not in the plan (dependsOn may name: ${others(subtask.id)})`);
    }
    for (const [name, arg] of Object.entries(subtask.args)) {
      if (!isArgRef(arg)) continue;
      if (arg.ref === subtask.id || (!ids.has(arg.ref) && !prefix)) {
        errors.push(`subtask ${subtask.id}: argument "${name}" refers to "${arg.ref}", which ${arg.ref === subtask.id ? "is this subtask" : "is not in the plan"} (its ref may name: ${others(subtask.id)})`);
      } else if (!subtask.dependsOn.includes(arg.ref)) {
        errors.push(`subtask ${subtask.id}: argument "${name}" refers to "${arg.ref}", which is not in its dependsOn (add "${arg.ref}" to dependsOn)`);
      }
      const problem = pathProblem(arg.path);
      if (problem !== undefined) errors.push(`subtask ${subtask.id}: argument "${name}" has path "${arg.path}"; ${problem}`);
      const unformattable = arg.format !== undefined ? formatProblem(arg.format) : undefined;
      if (unformattable !== undefined) errors.push(`subtask ${subtask.id}: argument "${name}": ${unformattable}`);
    }
    if (rules.argumentProblems && !toolUnknown && subtask.tool !== undefined) errors.push(...rules.argumentProblems(subtask, byId));
    if (subtask.mapOver !== undefined) {
      const mapped = subtask.args[subtask.mapOver];
      if (mapped === undefined) {
        errors.push(`subtask ${subtask.id}: mapOver names "${subtask.mapOver}", which is not one of its args (${listed(Object.keys(subtask.args))})`);
      } else if (!isArgRef(mapped) && !Array.isArray(mapped.value)) {
        errors.push(`subtask ${subtask.id}: mapOver names "${subtask.mapOver}", whose value is not a list`);
      }
    }
  }
  if (rules.modelCallsLeft !== undefined) {
    const needed = workerModelCalls(subtasks);
    if (needed > rules.modelCallsLeft) {
      errors.push(
        `the plan's workers need at least ${needed} model calls${prefix ? " so far" : ""} (one per subtask without a tool, one per item of a mapped one), and the run's budget leaves ${Math.max(0, rules.modelCallsLeft)}; plan fewer worker subtasks, or direct tool steps`,
      );
    }
  }
  const cycle = findCycle(subtasks);
  if (cycle) errors.push(`the dependencies form a cycle: ${cycle.join(" → ")}`);
  return errors;
}

/** Names for an error message: at most 30, then how many more. */
function listed(names: readonly string[]): string {
  if (names.length === 0) return "none";
  return names.length <= 30 ? names.join(", ") : `${names.slice(0, 30).join(", ")}, … ${names.length - 30} more`;
}

/** The words that mark a plan error as a gap in the configuration (no agent may use a tool the task needs), not a planning mistake. */
export const CONFIGURATION_GAP = "a configuration gap";

/** Whether a plan error says the configuration lacks something (see CONFIGURATION_GAP). */
export function isConfigurationGap(error: string): boolean {
  return error.includes(CONFIGURATION_GAP);
}

/** Why a subtask's agent cannot run it (or, when it asks for a capability, why no agent can). */
export function fitProblems(subtask: PlannedSubtask, profiles: readonly AgentProfile[], files: FileTools): string[] {
  const unreachable = [...(subtask.tool !== undefined ? [subtask.tool] : []), ...(subtask.tools ?? [])].filter((tool) => !profiles.some((profile) => profile.tools.includes(tool)));
  if (unreachable.length > 0) {
    const tools = [...new Set(unreachable)];
    const names = tools.join(", ");
    return [
      `subtask ${subtask.id}: no agent may use ${names} — ${CONFIGURATION_GAP}, not a planning mistake: grant ${tools.length > 1 ? "them" : "it"} to an agent in the config file's tools.permissions (roles.<agent> or grants, e.g. {"agent": "${subtask.agent}", "tool": "${tools[0]}", "level": "WRITE"})`,
    ];
  }
  if (subtask.capability !== undefined) {
    const holders = profiles.filter((profile) => profile.capabilities.includes(subtask.capability as string));
    if (holders.length === 0) {
      const known = [...new Set(profiles.flatMap((profile) => profile.capabilities))];
      return [`subtask ${subtask.id}: no agent has the capability "${subtask.capability}" (known: ${known.join(", ") || "none"})`];
    }
    if (fittingAgents(holders, subtask, files).length > 0) return [];
    const why = holders.map((holder) => `${holder.name} ${missingFor(holder, subtask, files).join(" and ")}`);
    return [`subtask ${subtask.id}: no agent with the capability "${subtask.capability}" has the tools it needs: ${why.join("; ")}`];
  }
  const profile = profiles.find((candidate) => candidate.name === subtask.agent);
  if (!profile) return [];
  const problems = missingFor(profile, subtask, files);
  if (problems.length === 0) return [];
  const others = fittingAgents(profiles, subtask, files).map((other) => other.name);
  const hint = others.length > 0 ? `; agents that can: ${others.join(", ")}` : "";
  return [`subtask ${subtask.id}: agent "${subtask.agent}" ${problems.join(" and ")} (its tools: ${profile.tools.join(", ") || "none"})${hint}`];
}

/** A dependency cycle as a list of ids (first id repeated at the end), or undefined. */
export function findCycle(subtasks: readonly PlannedSubtask[]): string[] | undefined {
  const byId = new Map(subtasks.map((subtask) => [subtask.id, subtask]));
  const state = new Map<string, "visiting" | "done">();
  const stack: string[] = [];
  const visit = (id: string): string[] | undefined => {
    const mark = state.get(id);
    if (mark === "done") return undefined;
    if (mark === "visiting") return [...stack.slice(stack.indexOf(id)), id];
    state.set(id, "visiting");
    stack.push(id);
    for (const dependency of byId.get(id)?.dependsOn ?? []) {
      if (!byId.has(dependency)) continue;
      const found = visit(dependency);
      if (found) return found;
    }
    stack.pop();
    state.set(id, "done");
    return undefined;
  };
  for (const subtask of subtasks) {
    const found = visit(subtask.id);
    if (found) return found;
  }
  return undefined;
}

/** The length of the longest dependency chain (1 for a plan without dependencies). Assumes no cycle. */
export function planDepth(subtasks: readonly PlannedSubtask[]): number {
  const byId = new Map(subtasks.map((subtask) => [subtask.id, subtask]));
  const memo = new Map<string, number>();
  const depth = (id: string): number => {
    const known = memo.get(id);
    if (known !== undefined) return known;
    memo.set(id, 1);
    const deps = byId.get(id)?.dependsOn ?? [];
    const value = 1 + Math.max(0, ...deps.filter((dep) => byId.has(dep)).map(depth));
    memo.set(id, value);
    return value;
  };
  return Math.max(0, ...subtasks.map((subtask) => depth(subtask.id)));
}
