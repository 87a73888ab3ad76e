import { createAgentRegistry } from "../agents/index.js";
import { parseEnv } from "../config/env.js";
import { MemoryStash } from "../core/stash.js";
import { createProviderRegistry } from "../providers/registry.js";
import { createBuiltinRegistry } from "../tools/builtin/index.js";
import { createGraph } from "./build-graph.js";
import { COORDINATOR_TARGETS } from "./coordinator.js";

const INTERRUPTS = new Set(["approve_plan", "ask_human", "approve_answer"]);

/**
 * The orchestration graph as Mermaid, read from the compiled graph's edges. Nodes whose
 * conditional edges are the coordinator's routes are drawn returning to one `coordinator`
 * decision, which is what they do; LangGraph's own drawing repeats every route per node.
 */
export async function orchestrationMermaid(): Promise<string> {
  const providers = createProviderRegistry();
  const models = providers.createModelSet(providers.resolve("offline"), parseEnv({}));
  const compiled = createGraph({ models, tools: createBuiltinRegistry(), agents: createAgentRegistry(), workspace: "", stash: new MemoryStash() }).compile();
  const drawable = await compiled.getGraphAsync();
  const routes = new Set<string>(COORDINATOR_TARGETS);
  const conditional = new Map<string, Set<string>>();
  const lines = ["flowchart TD"];
  for (const edge of drawable.edges) {
    if (edge.conditional) {
      const targets = conditional.get(edge.source) ?? new Set<string>();
      targets.add(edge.target);
      conditional.set(edge.source, targets);
    } else {
      lines.push(`  ${edge.source} --> ${edge.target}`);
    }
  }
  for (const [source, targets] of conditional) {
    const viaCoordinator = [...targets].every((target) => routes.has(target) || target === source);
    if (viaCoordinator) lines.push(`  ${source} --> coordinator`);
    else for (const target of targets) lines.push(`  ${source} -.-> ${target}`);
  }
  for (const target of COORDINATOR_TARGETS) {
    lines.push(target === "execute" ? `  coordinator -. "subtasks to run" .-> execute` : `  coordinator -.-> ${target}`);
  }
  lines.push("  coordinator{{coordinator}}");
  for (const node of Object.keys(drawable.nodes)) {
    if (INTERRUPTS.has(node)) lines.push(`  ${node}[/"${node} (interrupt)"/]`);
  }
  return lines.join("\n");
}
