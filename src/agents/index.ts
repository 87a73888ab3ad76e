import { cleanupAgent } from "./cleanup.js";
import { codeAgent } from "./code.js";
import { AgentRegistry } from "./define-agent.js";
import { executeAgent } from "./execute.js";
import { memoryAgent } from "./memory.js";
import { researchAgent } from "./research.js";

/** The built-in worker agents: research, code, execute, memory, cleanup. */
export function createAgentRegistry(): AgentRegistry {
  return new AgentRegistry().register(researchAgent).register(codeAgent).register(executeAgent).register(memoryAgent).register(cleanupAgent);
}
