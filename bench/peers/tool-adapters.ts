import { tool as langchainTool, type StructuredToolInterface } from "@langchain/core/tools";
import { type FunctionTool, tool as agentsTool } from "@openai/agents";
import { defineTool, pathArgs } from "../../src/tools/define-tool.js";
import { ToolRegistry } from "../../src/tools/registry.js";
import { runWorldTool, type ToolLatencies, type WorldTool, WORLD_TOOLS } from "./world.js";

/**
 * The world's tools in each framework's tool interface, with the same implementations and
 * latencies: LangChain tools (the supervisor's agents and the ReAct agent), Agents SDK function
 * tools, and tools in troupe's registry. The peers get the result as JSON text, as their docs
 * show tools returning strings; troupe's registry takes the value itself.
 */

export function langchainTools(names: readonly string[], workspace: string, latencies: ToolLatencies): StructuredToolInterface[] {
  return WORLD_TOOLS.filter((world) => names.includes(world.name)).map((world) =>
    langchainTool(async (args: Record<string, unknown>) => JSON.stringify(await runWorldTool(world, args, workspace, latencies)), { name: world.name, description: world.description, schema: world.schema }),
  );
}

export function agentsTools(names: readonly string[], workspace: string, latencies: ToolLatencies): FunctionTool[] {
  return WORLD_TOOLS.filter((world) => names.includes(world.name)).map(
    (world) =>
      agentsTool({
        name: world.name,
        description: world.description,
        parameters: world.schema,
        execute: async (args) => JSON.stringify(await runWorldTool(world, args as Record<string, unknown>, workspace, latencies)),
      }) as unknown as FunctionTool,
  );
}

function troupeTool(world: WorldTool, latencies: ToolLatencies) {
  return defineTool({
    name: world.name,
    description: world.description,
    schema: world.schema,
    permission: world.writes ? "WRITE" : "READ",
    riskLevel: "low",
    idempotent: !world.writes,
    timeoutMs: 10_000,
    ...(world.writes ? { resources: (args: Record<string, unknown>) => ({ writes: pathArgs(args, "path") }) } : {}),
    execute: (args, context) => runWorldTool(world, args as Record<string, unknown>, context.workspace, latencies),
  });
}

/** A troupe tool registry holding the world's tools (and nothing else, as the peers have nothing else). */
export function troupeRegistry(latencies: ToolLatencies): ToolRegistry {
  const registry = new ToolRegistry();
  for (const world of WORLD_TOOLS) registry.register(troupeTool(world, latencies) as never);
  return registry;
}
