import type { Command } from "commander";
import { InputError } from "../../core/errors.js";
import { riskOf } from "../../tools/tool-powers.js";
import { truncate } from "../../core/text.js";
import { addEngineFlags, type EngineFlags } from "../engine-flags.js";
import { EXIT, exitCodeForCode } from "../exit-codes.js";
import { err, out, printJson } from "../io.js";

interface ListFlags {
  json?: boolean;
  config?: string;
}

interface CallFlags extends EngineFlags {
  args?: string;
  as?: string;
  json?: boolean;
  config?: string;
}

export function registerTools(program: Command): void {
  const tools = program.command("tools").description("list and call tools");

  tools
    .command("list")
    .description("the tools agents can use, with the level each needs and the agents that reach it")
    .option("--json", "print the tools with their JSON schemas")
    .option("--config <file>", "the config file (default: TROUPE_CONFIG, then ./troupe.config.json or .ts)")
    .action(async (flags: ListFlags) => {
      const { loadConfig, remoteAgentsOf } = await import("../../config/config-file.js");
      const { resolveToolsConfig } = await import("../../config/tools-config.js");
      const { createAgentRegistry } = await import("../../agents/index.js");
      const { createToolPlatform } = await import("../../runtime/tool-platform.js");
      const { withConfigAgents } = await import("../../runtime/config-agents.js");
      const path = await import("node:path");
      // The config file's agents reach tools too.
      const { config, file } = await loadConfig(process.cwd(), flags.config ?? process.env.TROUPE_CONFIG);
      const toolsConfig = resolveToolsConfig(config.tools, { base: file ? path.dirname(file) : process.cwd(), file });
      const platform = await createToolPlatform({ config: toolsConfig, agents: withConfigAgents(createAgentRegistry(), config, {}), remote: { agents: remoteAgentsOf(config) } });
      try {
        for (const warning of platform.warnings) err(`warning: ${warning}`);
        const { tools: registry, agents } = platform;
        const reachedBy = (name: string): string[] => agents.list().filter((agent) => agent.tools.includes(name)).map((agent) => agent.name);
        // Its risk, from what it can do (an MCP tool's from its server's annotations).
        const riskWhy = (tool: (typeof tools)[number]): string => (tool.powers ? riskOf(tool.powers).why : `declared by ${tool.source ?? "its definition"}`);
        const tools = registry.list();
        if (flags.json) {
          printJson(
            tools.map((tool) => ({
              name: tool.name,
              description: tool.description,
              permission: tool.permission,
              riskLevel: tool.riskLevel,
              riskWhy: riskWhy(tool),
              powers: tool.powers ?? null,
              riskPerCall: tool.powersFor !== undefined,
              idempotent: tool.idempotent,
              timeoutMs: tool.timeoutMs,
              source: tool.source ?? "builtin",
              needsApproval: platform.policy.needsApproval(tool, "agent"),
              agents: reachedBy(tool.name),
              schema: registry.spec(tool.name).function.parameters,
            })),
          );
          return;
        }
        for (const tool of tools) {
          // A tool whose calls differ in risk (code_run with or without writes) waits for approval only on its risky calls.
          const approval = platform.policy.needsApproval(tool, "agent") ? (tool.powersFor ? " (approval*)" : " (approval)") : "";
          out(`${tool.name.padEnd(18)} ${tool.permission.padEnd(8)} ${`${tool.riskLevel}${approval}`.padEnd(18)} ${(reachedBy(tool.name).join(",") || "-").padEnd(22)} ${truncate(tool.description, 100)}`);
          out(`${"".padEnd(28)}risk: ${riskWhy(tool)}`);
        }
        if (tools.some((tool) => tool.powersFor && platform.policy.needsApproval(tool, "agent"))) {
          out("* only the calls that reach that risk wait for approval: code_run with writes: true, for one");
        }
      } finally {
        await platform.close();
      }
    });

  const call = tools
    .command("call")
    .description("call a tool directly, through permissions and audit (as the local operator unless --as names an agent)")
    .argument("<name>", "tool name (see tools list)")
    .option("--args <json>", "the arguments as a JSON object", "{}")
    .option("--as <agent>", "call as this agent: its grants apply, and high-risk tools are refused (no one to approve them)")
    .option("--json", "print the outcome as JSON");
  addEngineFlags(call, false).action(async (name: string, flags: CallFlags) => {
    let args: unknown;
    try {
      args = JSON.parse(flags.args ?? "{}");
    } catch (error) {
      throw new InputError("invalid_args", `--args is not valid JSON: ${(error as Error).message}`);
    }
    if (args === null || typeof args !== "object" || Array.isArray(args)) throw new InputError("invalid_args", "--args must be a JSON object");
    const { Troupe } = await import("../../runtime/engine.js");
    const { parseEnv } = await import("../../config/env.js");
    const { createProviderRegistry } = await import("../../providers/registry.js");
    // No model is called here: the offline one stands in, so no provider settings (keys, per-role models) are needed.
    const env = parseEnv();
    const registry = createProviderRegistry();
    const models = registry.createModelSet(registry.resolve("offline"), env);
    // The store the flags name (--database-url too): what the call records — its audit row, a file's label — lands where other processes read it.
    const prepared = await Troupe.prepare({ env, models, workspace: flags.workspace, dataDir: flags.dataDir, configFile: flags.config, ...(flags.databaseUrl ? { databaseUrl: flags.databaseUrl } : {}) });
    // A name no tool can have is refused before anything is opened: not a built-in one, and no MCP server or remote agent to bring more.
    const { createBuiltinRegistry } = await import("../../tools/builtin/index.js");
    const builtins = createBuiltinRegistry();
    const more = Object.keys(prepared.toolsConfig.mcp.servers).length > 0 || (prepared.config.agents ?? []).some((agent) => "a2a" in agent);
    if (!builtins.has(name) && !more) throw new InputError("unknown_tool", `unknown tool "${name}"; available: ${builtins.names().join(", ")}`);
    const troupe = await prepared.open();
    try {
      for (const warning of troupe.warnings) err(`warning: ${warning}`);
      if (!troupe.tools.has(name)) throw new InputError("unknown_tool", `unknown tool "${name}"; available: ${troupe.tools.names().join(", ")}`);
      const outcome = await troupe.callTool(name, args, flags.as !== undefined ? { agent: flags.as } : {});
      if (flags.json) printJson(outcome);
      else if (outcome.ok) out(typeof outcome.value === "string" ? outcome.value : JSON.stringify(outcome.value, null, 2));
      else err(`${name} failed (${outcome.error.code}): ${outcome.error.message}`);
      process.exitCode = outcome.ok ? EXIT.completed : exitCodeForCode(outcome.error.code);
    } finally {
      await troupe.shutdown();
    }
  });
}
