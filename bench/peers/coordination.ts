import { dependenciesOf, type Observation, type Progress, type ReadyCall, readyFor, reportLine } from "./solution.js";
import type { PeerTask } from "./tasks.js";
import { ROLES, type RoleName, WORLD_TOOLS } from "./world.js";

/**
 * The oracle's decisions outside troupe, the same whichever framework asks: an agent with tools
 * makes every call of its role that is ready (all at once when the framework lets it); one that
 * coordinates hands the work to the role of the first ready call, or to every role with ready
 * calls at once where it delegates by tool calls; when nothing is left, the answer.
 */

/** The role whose tools these are: undefined when they span every role (a single agent with all the tools). */
export function roleOfTools(names: readonly string[]): RoleName | undefined | "none" {
  const roles = new Set(WORLD_TOOLS.filter((tool) => names.includes(tool.name)).map((tool) => tool.role));
  if (roles.size === 0) return "none";
  if (roles.size === ROLES.length) return undefined;
  return [...roles][0];
}

/** The calls an agent of this role makes now, at most one when it may not call tools in parallel. */
export function callsToMake(progress: Progress, role: RoleName | undefined, parallel: boolean): ReadyCall[] {
  const ready = readyFor(progress, role);
  return parallel ? ready : ready.slice(0, 1);
}

/** The role a coordinator hands to next: that of the first ready call. */
export function nextRole(progress: Progress): RoleName | undefined {
  return progress.ready[0]?.step.role;
}

/** The roles with ready calls, in the order of their first ready call. */
export function rolesWithWork(progress: Progress): RoleName[] {
  return [...new Set(progress.ready.map((call) => call.step.role))];
}

/** A delegate's report: one line per result it got. */
export function report(observations: readonly Observation[]): string {
  return observations.length === 0 ? "Nothing to do." : ["Results:", ...observations.map(reportLine)].join("\n");
}

/**
 * What a coordinator tells a delegate that sees only this text (an agent used as a tool): the
 * task, the results of earlier steps the role's remaining steps need, and what to do.
 */
export function delegation(task: PeerTask, progress: Progress, role: RoleName, observations: readonly Observation[]): string {
  const remaining = task.steps.filter((step) => step.role === role && !(step.id in progress.results));
  // Every earlier step the remaining ones rest on, so the delegate can follow the solution to them.
  const needed = new Set<string>();
  const visit = (ids: readonly string[]): void => {
    for (const id of ids) {
      if (needed.has(id)) continue;
      needed.add(id);
      const step = task.steps.find((candidate) => candidate.id === id);
      if (step) visit(dependenciesOf(step));
    }
  };
  visit(remaining.flatMap(dependenciesOf));
  const neededTools = new Set(task.steps.filter((step) => needed.has(step.id)).map((step) => step.tool));
  const facts = observations.filter((observation) => neededTools.has(observation.tool));
  const lines = [`Task: ${task.prompt}`];
  if (facts.length > 0) lines.push("Known results:", ...facts.map(reportLine));
  lines.push(`Your part: ${remaining.map((step) => step.label).join("; ")}.`);
  return lines.join("\n");
}

/** A short instruction a supervisor writes beside its handoff. */
export function handoffNote(progress: Progress, role: RoleName): string {
  return `${role}: ${[...new Set(readyFor(progress, role).map((call) => call.step.label))].join("; ")}.`;
}
