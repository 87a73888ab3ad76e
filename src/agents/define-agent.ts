import type { PermissionLevel } from "../tools/define-tool.js";
import { OPERATOR } from "../tools/permissions.js";

/** A role default: a level on a tool or a pattern of tools (`*`, `file_*`, `docs.*`). */
export interface AgentGrant {
  tool: string;
  level: PermissionLevel;
}

/**
 * A worker agent: what the planner is told about it, its role's default permissions, and its
 * instructions. `tools` names tools it is granted at the level each needs; `grants` adds
 * patterns with a level. The config file can replace both (`tools.permissions.roles`). In a
 * running engine `tools` holds every tool the agent can reach under the policy.
 */
export interface AgentDefinition {
  name: string;
  description: string;
  tools: readonly string[];
  grants?: readonly AgentGrant[];
  instructions: string;
}

export function defineAgent(definition: AgentDefinition): AgentDefinition {
  if (!/^[a-z][a-z0-9_-]{0,31}$/.test(definition.name)) {
    throw new Error(`invalid agent name "${definition.name}": lower-case letters, digits, '_' or '-'`);
  }
  if (definition.name === OPERATOR) throw new Error(`"${OPERATOR}" is reserved for the local person`);
  return definition;
}

/** Agents by name; a duplicate name throws. */
export class AgentRegistry {
  readonly #agents = new Map<string, AgentDefinition>();

  register(agent: AgentDefinition): this {
    if (this.#agents.has(agent.name)) throw new Error(`an agent named "${agent.name}" is already registered`);
    this.#agents.set(agent.name, agent);
    return this;
  }

  get(name: string): AgentDefinition | undefined {
    return this.#agents.get(name);
  }

  list(): AgentDefinition[] {
    return [...this.#agents.values()];
  }

  names(): string[] {
    return [...this.#agents.keys()];
  }
}
