/**
 * Which agents can take a subtask, and which of them gets it. An agent fits a subtask when it can
 * reach every tool the subtask needs — its direct `tool`, the `tools` the plan names for its
 * worker, a tool that writes files when it declares `writes`, one that reads them when it
 * declares `reads` — and, when the subtask asks for a capability, has that capability. When a
 * subtask asks for a capability and several agents fit, the least busy one in the run gets it.
 */

/** What of a subtask decides which agents fit it (a plan's `PlannedSubtask` is one). */
export interface SubtaskNeeds {
  tool?: string | undefined;
  tools?: readonly string[] | undefined;
  writes?: readonly string[] | undefined;
  reads?: readonly string[] | undefined;
  capability?: string | undefined;
  /** The planner's own pick, preferred among equally busy agents. */
  agent?: string | undefined;
}

/** What the plan check and the dispatcher know of an agent. */
export interface AgentProfile {
  name: string;
  /** The tools it can reach (under the permission policy and the run's allowed tools). */
  tools: readonly string[];
  capabilities: readonly string[];
}

/** Which tools touch workspace files, by what they declare (`resources`). */
export interface FileTools {
  readers: readonly string[];
  writers: readonly string[];
}

/** Why this agent cannot run this subtask, one sentence each; empty when it fits. */
export function missingFor(agent: AgentProfile, subtask: SubtaskNeeds, files: FileTools): string[] {
  const problems: string[] = [];
  const has = (tool: string): boolean => agent.tools.includes(tool);
  if (subtask.tool !== undefined && !has(subtask.tool)) problems.push(`cannot use ${subtask.tool}`);
  const lacking = (subtask.tools ?? []).filter((tool) => !has(tool));
  if (lacking.length > 0) problems.push(`cannot use ${lacking.join(", ")}`);
  if (subtask.tool === undefined) {
    // A worker that declares files it writes (or reads) needs a tool that does.
    if ((subtask.writes ?? []).length > 0 && files.writers.length > 0 && !files.writers.some(has)) problems.push(`declares writes but has no tool that writes files (${files.writers.join(", ")})`);
    if ((subtask.reads ?? []).length > 0 && files.readers.length > 0 && !files.readers.some(has)) problems.push(`declares reads but has no tool that reads files (${files.readers.join(", ")})`);
  }
  if (subtask.capability !== undefined && !agent.capabilities.includes(subtask.capability)) problems.push(`does not have the capability "${subtask.capability}"`);
  return problems;
}

/** The agents that fit a subtask, in the order given. */
export function fittingAgents(agents: readonly AgentProfile[], subtask: SubtaskNeeds, files: FileTools): AgentProfile[] {
  return agents.filter((agent) => missingFor(agent, subtask, files).length === 0);
}

/** How busy an agent is in the run: its subtasks running now, and its subtasks so far. */
export interface AgentLoad {
  running: number;
  assigned: number;
}

/** The agent a subtask goes to, and the candidates it was chosen from with their load then. */
export interface Assignment {
  agent: string;
  capability: string;
  candidates: Array<{ agent: string } & AgentLoad>;
}

/**
 * The least busy of the fitting agents: fewest running subtasks, then fewest assigned in the run
 * so far, then the planner's own pick, then the order the agents are listed in. Undefined when
 * no agent fits.
 */
export function chooseAgent(candidates: readonly AgentProfile[], subtask: SubtaskNeeds, loadOf: (agent: string) => AgentLoad): Assignment | undefined {
  if (candidates.length === 0 || subtask.capability === undefined) return undefined;
  const loads = candidates.map((candidate, order) => ({ agent: candidate.name, order, ...loadOf(candidate.name) }));
  const ranked = [...loads].sort(
    (a, b) => a.running - b.running || a.assigned - b.assigned || Number(b.agent === subtask.agent) - Number(a.agent === subtask.agent) || a.order - b.order,
  );
  const chosen = ranked[0] as (typeof ranked)[number];
  return { agent: chosen.agent, capability: subtask.capability, candidates: loads.map(({ agent, running, assigned }) => ({ agent, running, assigned })) };
}
