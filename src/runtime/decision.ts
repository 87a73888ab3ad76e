import type { AgentDefinition, AgentRegistry } from "../agents/define-agent.js";
import type { Voter } from "../agents/voter.js";
import type { TroupeConfig } from "../config/config-file.js";
import { InputError } from "../core/errors.js";
import { LIMITS } from "../core/limits.js";
import type { DecideRequest } from "../core/vote.js";
import { type ModelRoute, type ModelSet, routeFor, routeForModel } from "../providers/registry.js";

/** What voters are made from. */
export interface VoterSources {
  agents: AgentRegistry;
  models: ModelSet;
  config: TroupeConfig;
  /** A model's route by `provider:model` (an ad hoc voter's), or undefined when it cannot be made. */
  routeOf: (model: string) => ModelRoute | undefined;
  /** The `provider:model` the config's model spec resolved to. */
  resolved: Record<string, string>;
}

function agentVoter(name: string, agent: AgentDefinition, sources: VoterSources, weight: number): Voter {
  return {
    name,
    route: routeForModel(sources.models, agent.model, agent.role ?? "worker"),
    weight,
    persona: { agent: agent.name, description: agent.description, instructions: agent.instructions, capabilities: agent.capabilities ?? [] },
  };
}

/** Names made unique by a suffix (`research`, `research#2`). */
function uniqueNames(voters: Voter[]): Voter[] {
  const seen = new Map<string, number>();
  return voters.map((voter) => {
    const count = (seen.get(voter.name) ?? 0) + 1;
    seen.set(voter.name, count);
    return count === 1 ? voter : { ...voter, name: `${voter.name}#${count}` };
  });
}

/**
 * The voters of a decision. A list names them: an agent votes in its role with its model, a
 * `provider:model` votes as itself. A number asks for that many: the first of the config's
 * `decide.voters` when it has enough, else samples of the critic's model (the judging role).
 * Nothing given: the config's voters, else three samples. Weights come from the request (by
 * position or by name), then the config.
 */
export function resolveVoters(request: DecideRequest, sources: VoterSources): Voter[] {
  const configured = sources.config.decide?.voters ?? [];
  const fromConfig = (entry: (typeof configured)[number]): Voter => {
    const agent = entry.agent !== undefined ? sources.agents.get(entry.agent) : undefined;
    if (entry.agent !== undefined && !agent) throw new InputError("unknown_agent", `decide.voters: ${entry.name}: unknown agent "${entry.agent}"; agents: ${sources.agents.names().join(", ")}`);
    const model = entry.model !== undefined ? (sources.resolved[entry.model] ?? entry.model) : undefined;
    const voter = agent ? agentVoter(entry.name, model !== undefined ? { ...agent, model } : agent, sources, entry.weight) : { name: entry.name, route: routeForModel(sources.models, model, "critic"), weight: entry.weight };
    return voter;
  };
  const samples = (count: number): Voter[] => Array.from({ length: count }, (_, index) => ({ name: `voter-${index + 1}`, route: routeFor(sources.models, "critic"), weight: 1 }));
  let voters: Voter[];
  if (Array.isArray(request.voters)) {
    voters = request.voters.map((name) => {
      const agent = sources.agents.get(name);
      if (agent) return agentVoter(name, agent, sources, 1);
      if (name.includes(":")) {
        const route = sources.routeOf(name);
        if (!route) throw new InputError("unknown_voter", `voter "${name}": that model cannot be made here (is its provider configured?)`);
        return { name, route, weight: 1 };
      }
      throw new InputError("unknown_voter", `voter "${name}" is neither an agent (${sources.agents.names().join(", ")}) nor a provider:model`);
    });
  } else if (typeof request.voters === "number") {
    voters = configured.length >= request.voters ? configured.slice(0, request.voters).map(fromConfig) : samples(request.voters);
  } else {
    voters = configured.length > 0 ? configured.map(fromConfig) : samples(LIMITS.votersDefault);
  }
  voters = uniqueNames(voters);
  const weights = request.weights;
  if (Array.isArray(weights)) {
    if (weights.length !== voters.length) throw new InputError("invalid_weights", `${weights.length} weight${weights.length === 1 ? "" : "s"} for ${voters.length} voters: give one per voter, in order`);
    voters = voters.map((voter, index) => ({ ...voter, weight: weights[index] as number }));
  } else if (weights) {
    const unknown = Object.keys(weights).filter((name) => !voters.some((voter) => voter.name === name));
    if (unknown.length > 0) throw new InputError("invalid_weights", `weights name no voter: ${unknown.join(", ")} (voters: ${voters.map((voter) => voter.name).join(", ")})`);
    voters = voters.map((voter) => ({ ...voter, weight: weights[voter.name] ?? voter.weight }));
  }
  if (voters.every((voter) => voter.weight === 0)) throw new InputError("invalid_weights", "every voter's weight is 0");
  return voters;
}
