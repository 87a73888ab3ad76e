import type { ModelRole } from "../providers/provider.js";
import type { PermissionLevel } from "../tools/define-tool.js";
import { OPERATOR } from "../tools/permissions.js";

/** A role default: a level on a tool or a pattern of tools (`*`, `file_*`, `docs.*`). */
export interface AgentGrant {
  tool: string;
  level: PermissionLevel;
}

/** A capability name: lower-case words joined by '-' (`search`, `write-code`). */
export const CAPABILITY_PATTERN = /^[a-z][a-z0-9-]{0,39}$/;

/**
 * A worker agent: what the planner is told about it (description, capabilities), its role's
 * default permissions, its model and its instructions. `tools` names tools it is granted at the
 * level each needs; `grants` adds patterns with a level. The config file can replace both
 * (`tools.permissions.roles`). In a running engine `tools` holds every tool the agent can reach
 * under the policy. An agent is declared in one file with `defineAgent`, or in the config file's
 * `agents`.
 */
export interface AgentDefinition {
  name: string;
  description: string;
  tools: readonly string[];
  grants?: readonly AgentGrant[];
  instructions: string;
  /** What it is good at, for the planner and for assignment by capability (`search`, `write-code`). */
  capabilities?: readonly string[];
  /** Its own model (`provider:model`, or a model of the main provider); otherwise `role`'s. */
  model?: string;
  /** Whose model it uses when it names none (default: `worker`). */
  role?: ModelRole;
  /** Where it was declared: `builtin`, `config` (the config file), `remote` (an A2A agent in the config file) or `code` (the default). */
  source?: "builtin" | "config" | "code" | "remote";
  /**
   * A remote agent (A2A): its subtasks are sent to it as messages through `tool` (`a2a.<name>`),
   * not worked by a model here. `url` is its card's.
   */
  remote?: { url: string; tool: string };
  /**
   * In a running engine, the tools it names itself (as declared, among those it can reach), as
   * opposed to those a pattern grant reaches: a worker is always offered these.
   */
  coreTools?: readonly string[];
}

export function defineAgent(definition: AgentDefinition): AgentDefinition {
  if (!/^[a-z][a-z0-9_-]{0,31}$/.test(definition.name)) {
    throw new Error(`invalid agent name "${definition.name}": lower-case letters, digits, '_' or '-'`);
  }
  if (definition.name === OPERATOR) throw new Error(`"${OPERATOR}" is reserved for the local person`);
  for (const capability of definition.capabilities ?? []) {
    if (!CAPABILITY_PATTERN.test(capability)) throw new Error(`agent "${definition.name}": invalid capability "${capability}": lower-case letters, digits and '-'`);
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

  /** Every capability an agent declares, once each, in the order first declared. */
  capabilities(): string[] {
    return [...new Set(this.list().flatMap((agent) => agent.capabilities ?? []))];
  }
}
