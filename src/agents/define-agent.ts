/** A worker agent: what the planner is told about it, the tools it may use, and its instructions. */
export interface AgentDefinition {
  name: string;
  description: string;
  tools: readonly string[];
  instructions: string;
}

export function defineAgent(definition: AgentDefinition): AgentDefinition {
  if (!/^[a-z][a-z0-9_-]{0,31}$/.test(definition.name)) {
    throw new Error(`invalid agent name "${definition.name}": lower-case letters, digits, '_' or '-'`);
  }
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
