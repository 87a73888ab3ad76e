import type { Command } from "commander";
import { truncate } from "../../core/text.js";
import { err, out, printJson } from "../io.js";

interface ListFlags {
  json?: boolean;
  config?: string;
}

/** `troupe agents list`: every agent — built in, declared in the config file — with its capabilities, model and the tools it can reach. */
export function registerAgents(program: Command): void {
  const agents = program.command("agents").description("the agents the planner can give work to");
  agents
    .command("list")
    .description("every agent (built-in and from the config file) with its capabilities, its model and the tools it can reach")
    .option("--json", "print the agents as JSON")
    .option("--config <file>", "the config file (default: TROUPE_CONFIG, then ./troupe.config.json or .ts)")
    .action(async (flags: ListFlags) => {
      const { loadConfig, remoteAgentsOf } = await import("../../config/config-file.js");
      const { resolveToolsConfig } = await import("../../config/tools-config.js");
      const { createAgentRegistry } = await import("../../agents/index.js");
      const { createToolPlatform } = await import("../../runtime/tool-platform.js");
      const { checkAgentModels, checkAgentTools, withConfigAgents } = await import("../../runtime/config-agents.js");
      const { registryFor } = await import("../../runtime/model-selection.js");
      const path = await import("node:path");
      const { config, file } = await loadConfig(process.cwd(), flags.config ?? process.env.TROUPE_CONFIG);
      checkAgentModels(config, registryFor(config));
      const toolsConfig = resolveToolsConfig(config.tools, { base: file ? path.dirname(file) : process.cwd(), file });
      const platform = await createToolPlatform({ config: toolsConfig, agents: withConfigAgents(createAgentRegistry(), config, {}), remote: { agents: remoteAgentsOf(config) } });
      try {
        for (const warning of platform.warnings) err(`warning: ${warning}`);
        checkAgentTools(config, platform.tools);
        const list = platform.agents.list().map((agent) => ({
          name: agent.name,
          source: agent.source ?? "code",
          description: agent.description,
          capabilities: [...(agent.capabilities ?? [])],
          model: agent.model ?? `the ${agent.role ?? "worker"} role's`,
          tools: [...agent.tools],
        }));
        if (flags.json) {
          printJson(list);
          return;
        }
        for (const agent of list) {
          out(`${agent.name.padEnd(14)} ${agent.source.padEnd(8)} ${truncate(agent.description, 100)}`);
          out(`${"".padEnd(24)}capabilities: ${agent.capabilities.join(", ") || "none"} · model: ${agent.model}`);
          out(`${"".padEnd(24)}tools (${agent.tools.length}): ${truncate(agent.tools.join(", "), 400) || "none"}`);
        }
      } finally {
        await platform.close();
      }
    });
}
