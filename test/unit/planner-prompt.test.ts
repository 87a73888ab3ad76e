import { describe, expect, it } from "vitest";
import { createAgentRegistry } from "../../src/agents/index.js";
import { plannerPrompt } from "../../src/agents/planner.js";
import { resolveToolsConfig } from "../../src/config/tools-config.js";
import { createToolPlatform } from "../../src/runtime/tool-platform.js";
import { countTextTokens } from "../../src/providers/token-count.js";

// Issue 25: the planner's catalogue says each tool once — described under the first agent that
// has it, named by the others — and the rules leave the argument shapes' details to the schema.
describe("the planner's system prompt", () => {
  it("describes every tool exactly once, names each agent's tools, and stays under its size on the built-in catalogue", async () => {
    const agents = createAgentRegistry();
    const platform = await createToolPlatform({ config: resolveToolsConfig(undefined, { base: process.cwd() }), agents });
    const prompt = plannerPrompt(platform.agents.list(), platform.tools, 20);
    for (const tool of platform.tools.list()) {
      const described = prompt.split("\n").filter((line) => line.startsWith(`  - ${tool.name}: `));
      expect(described, tool.name).toHaveLength(1);
    }
    // Every tool an agent has is in its block: described under it, or named in its "also".
    const blocks = prompt.split("\n- ").slice(1);
    for (const agent of platform.agents.list()) {
      const block = blocks.find((text) => text.startsWith(`${agent.name}: `)) ?? "";
      for (const tool of agent.tools) expect(block, `${agent.name} ${tool}`).toMatch(new RegExp(`(  - ${tool}: |also: [^)]*\\b${tool}\\b)`));
    }
    // 1,633 tokens on this catalogue before issue 25 (the tools listed twice, the rules restating the schema), 1,368 after,
    // 1,412 with the rule that prefers direct steps (combination steps included) — and the JSON plan's schema, about 600
    // tokens more, went beside it. Issue 34: the compact wire's format and each tool's parameter names, and no schema.
    expect(await countTextTokens(prompt)).toBeLessThan(1_700);
  });
});
