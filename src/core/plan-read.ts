import { isArgRef, type SubtaskArg } from "./plan.js";

/**
 * What reading a plan from a model needs besides its text, for both wires: who runs a direct
 * tool step the plan does not give an agent, and which names are tools and agents. A plan
 * written on a lean wire leaves out what code can work out (a direct step's agent and label,
 * `dependsOn` from its references); this fills it in the same way for every wire.
 */
export interface PlanReadContext {
  /** The agent names the planner was told about. */
  agents: readonly string[];
  /** The tool names it may use. */
  tools: readonly string[];
  /** The agent that runs a direct step of `tool` when the plan names none. */
  agentFor(tool: string): string;
  /** A tool's parameter names in the order its schema lists them (for positional arguments), when known. */
  parametersOf?(tool: string): readonly string[];
}

/** A context from the agents (with the tools each may use) and the tools: a direct step goes to the first agent that has its tool. */
export function planReadContext(agents: ReadonlyArray<{ name: string; tools: readonly string[] }>, tools: readonly string[], parametersOf?: (tool: string) => readonly string[]): PlanReadContext {
  const names = agents.map((agent) => agent.name);
  return {
    agents: names,
    tools,
    agentFor: (tool) => agents.find((agent) => agent.tools.includes(tool))?.name ?? names[0] ?? "execute",
    ...(parametersOf ? { parametersOf } : {}),
  };
}

/** A JSONPath into a step's result as the compact wire writes it after `$id` (`$` → nothing, `$.price` → `.price`). */
export function pathSuffix(path: string): string {
  return path === "$" ? "" : path.slice(1);
}

/** An argument as the compact wire writes it: JSON for a literal, `$id.path` for a reference (with `as "format"`), `each` before the list a step runs over. */
export function compactArg(arg: SubtaskArg, mapped: boolean): string {
  const each = mapped ? "each " : "";
  if (!isArgRef(arg)) return `${each}${JSON.stringify(arg.value ?? null)}`;
  const format = arg.format !== undefined ? ` as ${JSON.stringify(arg.format)}` : "";
  return `${each}$${arg.ref}${pathSuffix(arg.path)}${format}`;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** An argument's name as the compact wire writes it: bare when it is an identifier, quoted otherwise. */
export function compactName(name: string): string {
  return IDENTIFIER.test(name) ? name : JSON.stringify(name);
}

/** The label of a direct step the plan gave none: its call as written on the compact wire, at most 200 characters. */
export function callLabel(tool: string, args: Record<string, SubtaskArg>, mapOver?: string): string {
  const text = `${tool}(${Object.entries(args).map(([name, arg]) => `${compactName(name)}: ${compactArg(arg, name === mapOver)}`).join(", ")})`;
  return text.length <= 200 ? text : `${text.slice(0, 199)}…`;
}

/** The ids a subtask's arguments refer to, in order, each once: the dependencies its data gives it. */
export function referencedIds(args: Record<string, SubtaskArg>): string[] {
  return [...new Set(Object.values(args).flatMap((arg) => (isArgRef(arg) ? [arg.ref] : [])))];
}
