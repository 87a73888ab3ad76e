import type { Command } from "commander";
import { InputError } from "../../core/errors.js";
import { addEngineFlags, type EngineFlags } from "../engine-flags.js";
import { EXIT } from "../exit-codes.js";
import { err, out, printJson } from "../io.js";

interface CallFlags extends EngineFlags {
  args?: string;
  as?: string;
  json?: boolean;
}

export function registerTools(program: Command): void {
  const tools = program.command("tools").description("list and call tools");

  tools
    .command("list")
    .description("the tools agents can use")
    .option("--json", "print the tools with their JSON schemas")
    .action(async (flags: { json?: boolean }) => {
      const { createBuiltinRegistry } = await import("../../tools/builtin/index.js");
      const registry = createBuiltinRegistry();
      if (flags.json) {
        printJson(
          registry.list().map((tool) => ({
            name: tool.name,
            description: tool.description,
            permission: tool.permission,
            riskLevel: tool.riskLevel,
            idempotent: tool.idempotent,
            timeoutMs: tool.timeoutMs,
            schema: registry.spec(tool.name).function.parameters,
          })),
        );
        return;
      }
      for (const tool of registry.list()) out(`${tool.name.padEnd(14)} ${tool.permission.padEnd(8)} ${tool.description}`);
    });

  const call = tools
    .command("call")
    .description("call a tool directly (confined to the workspace like any agent's call)")
    .argument("<name>", "tool name (see tools list)")
    .option("--args <json>", "the arguments as a JSON object", "{}")
    .option("--as <agent>", "call as this agent: only its tools are allowed")
    .option("--json", "print the outcome as JSON");
  addEngineFlags(call, false).action(async (name: string, flags: CallFlags) => {
    let args: unknown;
    try {
      args = JSON.parse(flags.args ?? "{}");
    } catch (error) {
      throw new InputError("invalid_args", `--args is not valid JSON: ${(error as Error).message}`);
    }
    if (args === null || typeof args !== "object" || Array.isArray(args)) throw new InputError("invalid_args", "--args must be a JSON object");
    const { createBuiltinRegistry } = await import("../../tools/builtin/index.js");
    const registry = createBuiltinRegistry();
    if (!registry.has(name)) throw new InputError("unknown_tool", `unknown tool "${name}"; available: ${registry.names().join(", ")}`);
    if (flags.as !== undefined) {
      const { createAgentRegistry } = await import("../../agents/index.js");
      const agent = createAgentRegistry().get(flags.as);
      if (!agent) throw new InputError("unknown_agent", `unknown agent "${flags.as}"`);
      if (!agent.tools.includes(name)) throw new InputError("tool_not_allowed", `the ${agent.name} agent cannot use ${name}; its tools are ${agent.tools.join(", ")}`);
    }
    const { parseEnv } = await import("../../config/env.js");
    const { workspaceRoot } = await import("../../tools/workspace.js");
    const workspace = await workspaceRoot(flags.workspace ?? parseEnv().TROUPE_WORKSPACE);
    const outcome = await registry.call(name, args, { workspace, agent: flags.as ?? "operator" });
    if (flags.json) printJson(outcome);
    else if (outcome.ok) out(typeof outcome.value === "string" ? outcome.value : JSON.stringify(outcome.value, null, 2));
    else err(`${name} failed (${outcome.error.code}): ${outcome.error.message}`);
    process.exitCode = outcome.ok ? EXIT.completed : outcome.error.code === "invalid_arguments" ? EXIT.badInput : EXIT.failed;
  });
}
