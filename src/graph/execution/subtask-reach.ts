import type { AgentDefinition } from "../../agents/define-agent.js";
import type { PlannedSubtask } from "../../core/plan.js";
import type { GraphDeps } from "../deps.js";

/** What a subtask can reach: its agent as granted now, and whether its calls may wait for a person. */

/** Whether some call the subtask can make passes `test`: its direct step's tool, or any tool its worker's agent reaches (a map never waits for a person). */
function anyCall(deps: GraphDeps, subtask: PlannedSubtask, allowedTools: readonly string[] | null | undefined, test: (name: string) => boolean): boolean {
  if (subtask.mapOver !== undefined) return false;
  const usable = (name: string): boolean => (allowedTools?.includes(name) ?? true) && test(name);
  if (subtask.tool !== undefined) return usable(subtask.tool);
  return liveAgent(deps, subtask.agent)?.tools.some(usable) ?? false;
}

/**
 * An agent as it stands now: its tools those it was given when troupe started and those a grant
 * given since (troupe grants) lets it reach, so a worker is offered a tool it was just granted.
 */
export function liveAgent(deps: Pick<GraphDeps, "agents" | "tools">, name: string): AgentDefinition | undefined {
  const agent = deps.agents.get(name);
  if (!agent) return undefined;
  const granted = deps.tools.reachable(name).filter((tool) => !agent.tools.includes(tool));
  return granted.length === 0 ? agent : { ...agent, tools: [...agent.tools, ...granted] };
}

/**
 * Whether a subtask may wait for a person: for the approval of a tool call (a direct step of a
 * tool that needs one for its agent, or a worker whose agent reaches such a tool), or for an answer
 * to a tool server's question. A map never waits.
 */
export function subtaskMayPause(deps: GraphDeps, subtask: PlannedSubtask, allowedTools?: readonly string[] | null): boolean {
  // A remote agent may ask for a person's input at any time.
  if (subtask.mapOver === undefined && subtask.tool === undefined && liveAgent(deps, subtask.agent)?.remote) return true;
  // So may a tool whose server puts questions to a person mid-call (MCP elicitation).
  return anyCall(deps, subtask, allowedTools, (name) => deps.tools.needsApproval(name, subtask.agent) || deps.tools.mayAsk(name));
}

/** Whether untrusted data could make one of the subtask's calls wait for a person: the trust policy asks, and the subtask can make a call with an effect. */
export function subtaskMaySteer(deps: GraphDeps, subtask: PlannedSubtask, allowedTools?: readonly string[] | null): boolean {
  return anyCall(deps, subtask, allowedTools, (name) => deps.tools.mayAskTrust(name));
}
