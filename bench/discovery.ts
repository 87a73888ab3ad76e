import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { BaseMessage } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";
import { createAgentRegistry } from "../src/agents/index.js";
import { UsageMeter } from "../src/agents/model-call.js";
import { runAgentLoop } from "../src/agents/agent-loop.js";
import { resolveToolsConfig } from "../src/config/tools-config.js";
import { OfflineChatModel } from "../src/providers/offline/offline-chat-model.js";
import { countMessageTokens, countTextTokens } from "../src/providers/token-count.js";
import type { ToolCallingCallOptions } from "../src/providers/tool-calling-chat-model.js";
import { createToolPlatform } from "../src/runtime/tool-platform.js";
import { modelSetOf } from "../src/testing/model-set.js";
import { catalogueTools, LABELLED_SUBTASKS } from "../src/testing/tool-catalogue.js";
import { routeFor } from "../src/providers/registry.js";
import { createBuiltinRegistry } from "../src/tools/builtin/index.js";
import { ToolIndex } from "../src/tools/discovery.js";
import { measurePromptTokens } from "./prompt-tokens.js";
import { summarize, type Summary } from "./support.js";

/**
 * Tool-definition tokens per run of the three examples before issue 15 (main at 71a66bb, the
 * `prompt-tokens` benchmark's "of which tools"): every worker was sent every tool it may use.
 */
export const TOOL_TOKENS_BEFORE: Record<string, number> = { planning: 2_418, tools: 9_812, code: 2_421 };

/** The offline model, counting the first prompt of each worker it is given (messages and tool definitions). */
class CountingModel extends OfflineChatModel {
  readonly prompts: Array<{ messageTokens: number; toolTokens: number; tools: number }> = [];

  override async _generate(messages: BaseMessage[], options: ToolCallingCallOptions): Promise<ChatResult> {
    const tools = options.tools ?? [];
    this.prompts.push({ messageTokens: await countMessageTokens(messages), toolTokens: tools.length > 0 ? await countTextTokens(JSON.stringify(tools)) : 0, tools: tools.length });
    return super._generate(messages, options);
  }
}

export interface WorkerPromptFigures {
  /** Tools research may use in this setting. */
  reachable: number;
  /** Tools its model was offered on the first call (find_tools and submit_result included). */
  offered: Summary;
  promptTokens: Summary;
  toolTokens: Summary;
}

export interface DiscoveryReport {
  subtasks: number;
  /** One research worker call per labelled subtask (the plan names no tools, so the agent's count decides). */
  workerPrompt: { builtins: WorkerPromptFigures; withCatalogueDiscovery: WorkerPromptFigures; withCatalogueNoDiscovery: WorkerPromptFigures; ratio: number };
  recall: { at1: number; at3: number; at5: number; misses: string[] };
  examples: Array<{ example: string; before: number; after: number; ratio: number; promptTokensPerRun: number }>;
  target: { maxWorkerRatio: number; minRecall: number; maxToolTokensRatio: number; met: boolean };
}

/** The research worker's first call on each labelled subtask, with these tools and this discovery threshold. */
async function workerPrompts(withCatalogue: boolean, threshold: number): Promise<WorkerPromptFigures> {
  const tools = createBuiltinRegistry();
  if (withCatalogue) for (const tool of catalogueTools()) tools.register(tool);
  const platform = await createToolPlatform({ config: resolveToolsConfig({}), agents: createAgentRegistry(), tools });
  const agent = platform.agents.get("research");
  if (!agent) throw new Error("no research agent");
  const discovery = { index: new ToolIndex(tools.names().map((name) => tools.spec(name))), threshold, topK: 5 };
  const model = new CountingModel({});
  const route = routeFor(modelSetOf(model, { provider: "offline", model: "rules-v1" }), "worker");
  const workspace = mkdtempSync(path.join(tmpdir(), "troupe-bench-discovery-"));
  try {
    for (const [index, { label }] of LABELLED_SUBTASKS.entries()) {
      const before = model.prompts.length;
      await runAgentLoop(
        { agent, model: route, tools, task: label, subtask: { id: `s${index + 1}`, label, agent: "research", dependsOn: [], args: {} }, args: {}, dependencies: [], feedback: [], toolContext: { workspace, agent: "research" }, maxSteps: 1, discovery },
        { meter: new UsageMeter() },
      );
      // Only each worker's first call counts: the offline model may answer a subtask it cannot do at once or not.
      model.prompts.splice(before + 1);
    }
  } finally {
    rmSync(workspace, { recursive: true, force: true });
    await platform.close();
  }
  return {
    reachable: agent.tools.length,
    offered: summarize(model.prompts.map((prompt) => prompt.tools)),
    promptTokens: summarize(model.prompts.map((prompt) => prompt.messageTokens + prompt.toolTokens)),
    toolTokens: summarize(model.prompts.map((prompt) => prompt.toolTokens)),
  };
}

/**
 * Issue 15's figures: a worker's prompt with the built-in tools against the built-ins plus 200
 * more (with discovery, and without it), discovery's recall on the labelled subtasks, and the
 * tool-definition tokens of the three examples before and after.
 */
export async function measureDiscovery(): Promise<DiscoveryReport> {
  const builtins = await workerPrompts(false, 15);
  const withCatalogueDiscovery = await workerPrompts(true, 15);
  const withCatalogueNoDiscovery = await workerPrompts(true, Number.MAX_SAFE_INTEGER);
  const tools = createBuiltinRegistry();
  for (const tool of catalogueTools()) tools.register(tool);
  const index = new ToolIndex(tools.names().map((name) => tools.spec(name)));
  const among = new Set(tools.names());
  const hits = { at1: 0, at3: 0, at5: 0 };
  const misses: string[] = [];
  for (const { label, tool } of LABELLED_SUBTASKS) {
    const found = (await index.search(label, { among, k: 5 })).map((match) => match.name);
    const rank = found.indexOf(tool);
    if (rank === 0) hits.at1 += 1;
    if (rank >= 0 && rank < 3) hits.at3 += 1;
    if (rank >= 0) hits.at5 += 1;
    else misses.push(`${label} → ${tool} (found ${found.join(", ")})`);
  }
  const share = (count: number): number => Math.round((count / LABELLED_SUBTASKS.length) * 1000) / 1000;
  const tokens = await measurePromptTokens();
  const examples = tokens.tasks.map((task) => {
    const before = TOOL_TOKENS_BEFORE[task.example] ?? Number.NaN;
    return { example: task.example, before, after: task.toolTokensPerRun, ratio: Math.round((task.toolTokensPerRun / before) * 1000) / 1000, promptTokensPerRun: task.promptTokensPerRun };
  });
  const ratio = Math.round((withCatalogueDiscovery.promptTokens.median / builtins.promptTokens.median) * 1000) / 1000;
  const recall = { at1: share(hits.at1), at3: share(hits.at3), at5: share(hits.at5), misses };
  const target = { maxWorkerRatio: 1.1, minRecall: 0.9, maxToolTokensRatio: 0.5 };
  return {
    subtasks: LABELLED_SUBTASKS.length,
    workerPrompt: { builtins, withCatalogueDiscovery, withCatalogueNoDiscovery, ratio },
    recall,
    examples,
    target: { ...target, met: ratio <= target.maxWorkerRatio && recall.at5 >= target.minRecall && examples.every((example) => example.ratio <= target.maxToolTokensRatio) },
  };
}
