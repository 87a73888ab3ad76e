import { type AgentDefinition, AgentRegistry, defineAgent } from "../agents/define-agent.js";
import { isRemoteAgent, type TroupeConfig } from "../config/config-file.js";
import { ConfigError, errorMessage } from "../core/errors.js";
import type { ProviderRegistry } from "../providers/registry.js";
import type { ToolRegistry } from "../tools/registry.js";

/**
 * The registry with the config file's agents added (each checked like an agent in code: a name
 * already taken is a ConfigError naming it), their models resolved to `provider:model`.
 */
export function withConfigAgents(base: AgentRegistry, config: TroupeConfig, resolved: Record<string, string>): AgentRegistry {
  const declared = config.agents ?? [];
  if (declared.every(isRemoteAgent)) return base;
  const registry = new AgentRegistry();
  for (const agent of base.list()) registry.register(agent);
  declared.forEach((entry, index) => {
    // Remote agents are added by the tool platform once their cards are fetched.
    if (isRemoteAgent(entry)) return;
    try {
      const definition: AgentDefinition = {
        name: entry.name,
        description: entry.description,
        capabilities: entry.capabilities,
        tools: entry.tools,
        ...(entry.grants ? { grants: entry.grants } : {}),
        instructions: entry.prompt,
        ...(entry.model ? { model: resolved[entry.model] ?? entry.model } : {}),
        ...(entry.role ? { role: entry.role } : {}),
        source: "config",
      };
      registry.register(defineAgent(definition));
    } catch (error) {
      throw new ConfigError("invalid_config", `agents.${index} (${entry.name}): ${errorMessage(error)}`, { setting: `agents.${index}` });
    }
  });
  return registry;
}

/** A config agent's `tools`, and a task template's, must name tools that exist (an MCP server's included). */
export function checkAgentTools(config: TroupeConfig, tools: ToolRegistry): void {
  (config.agents ?? []).forEach((agent, index) => {
    if (isRemoteAgent(agent)) return;
    const unknown = agent.tools.filter((name) => !tools.has(name));
    if (unknown.length > 0) throw new ConfigError("invalid_config", `agents.${index} (${agent.name}): unknown tool${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")}`, { setting: `agents.${index}.tools` });
  });
  // A task template's tools too: a run it makes would otherwise be refused only when someone uses it.
  (config.taskTemplates ?? []).forEach((template, index) => {
    const unknown = (template.tools ?? []).filter((name) => !tools.has(name));
    if (unknown.length > 0) {
      throw new ConfigError("invalid_config", `taskTemplates.${index} (${template.name}): unknown tool${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")}`, { setting: `taskTemplates.${index}.tools` });
    }
  });
}

/**
 * A config agent's `model` must name a provider that exists (`provider:model`; a bare name is a
 * model of the main provider): checked where the models are not made, as `troupe agents list`.
 */
export function checkAgentModels(config: TroupeConfig, providers: Pick<ProviderRegistry, "has" | "ids">): void {
  (config.agents ?? []).forEach((agent, index) => {
    if (isRemoteAgent(agent) || !agent.model) return;
    const colon = agent.model.indexOf(":");
    if (colon < 0) return;
    const id = agent.model.slice(0, colon).trim();
    if (!providers.has(id)) {
      throw new ConfigError("invalid_config", `agents.${index} (${agent.name}): model "${agent.model}" names an unknown provider "${id}" (known: ${providers.ids().join(", ")})`, { setting: `agents.${index}.model` });
    }
  });
}
