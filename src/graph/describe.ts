import { createAgentRegistry } from "../agents/index.js";
import { parseEnv } from "../config/env.js";
import { createProviderRegistry } from "../providers/registry.js";
import { createBuiltinRegistry } from "../tools/builtin/index.js";
import { createGraph } from "./build-graph.js";

/** The orchestration graph as Mermaid, drawn by LangGraph from the same graph every run uses. */
export async function orchestrationMermaid(): Promise<string> {
  const providers = createProviderRegistry();
  const models = providers.createModelSet(providers.resolve("offline"), parseEnv({}));
  const graph = createGraph({ models, tools: createBuiltinRegistry(), agents: createAgentRegistry(), workspace: "" }).compile();
  const drawable = await graph.getGraphAsync();
  return drawable.drawMermaid({ withStyles: false });
}
