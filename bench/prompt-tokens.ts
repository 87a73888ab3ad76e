import path from "node:path";
import type { BaseMessage } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";
import { roleOf } from "../src/core/prompt-protocol.js";
import { OfflineChatModel } from "../src/providers/offline/offline-chat-model.js";
import { countMessageTokens, countTextTokens } from "../src/providers/token-count.js";
import type { ToolCallingCallOptions } from "../src/providers/tool-calling-chat-model.js";
import { Troupe } from "../src/runtime/engine.js";
import { modelSetOf } from "../src/testing/model-set.js";
import { EXAMPLE_TASKS } from "../examples/tasks.js";
import { summarize, type Summary, withTempDir } from "./support.js";

/** One model call as a provider would bill its prompt: the messages plus the tool definitions sent with them. */
interface CallRecord {
  role: string;
  messageTokens: number;
  toolTokens: number;
}

/** The offline model, counting each prompt with gpt-tokenizer (cl100k_base) before it answers. */
class CountingModel extends OfflineChatModel {
  readonly calls: CallRecord[] = [];

  override async _generate(messages: BaseMessage[], options: ToolCallingCallOptions): Promise<ChatResult> {
    const system = messages.find((message) => message.getType() === "system");
    const role = roleOf(typeof system?.content === "string" ? system.content : "") ?? "unknown";
    const tools = options.tools ?? [];
    this.calls.push({ role: ["planner", "critic", "synthesizer"].includes(role) ? role : "worker", messageTokens: await countMessageTokens(messages), toolTokens: tools.length > 0 ? await countTextTokens(JSON.stringify(tools)) : 0 });
    return super._generate(messages, options);
  }
}

export interface TaskTokens {
  example: string;
  task: string;
  stopReason: string | null;
  modelCalls: number;
  /** Prompt tokens of the whole run (messages and tool definitions). */
  promptTokensPerRun: number;
  /** Of which tool definitions. */
  toolTokensPerRun: number;
  perCall: Summary;
  byRole: Record<string, { calls: number; promptTokens: number }>;
}

export interface PromptTokensReport {
  encoding: string;
  model: string;
  tasks: TaskTokens[];
}

/**
 * Prompt tokens per model call and per run for the example tasks, on the offline model (so the
 * conversation is the same every time): what troupe's prompts would cost on a provider. Later
 * changes to prompts show here as a change in these numbers.
 */
export async function measurePromptTokens(): Promise<PromptTokensReport> {
  const tasks: TaskTokens[] = [];
  for (const [example, task] of Object.entries(EXAMPLE_TASKS)) {
    const model = new CountingModel({});
    const result = await withTempDir("troupe-bench-tokens-", async (directory) => {
      const troupe = await Troupe.create({ models: modelSetOf(model, { provider: "offline", model: "rules-v1" }), config: {}, dataDir: path.join(directory, "data"), workspace: path.join(directory, "workspace") });
      try {
        return await troupe.run({ task });
      } finally {
        troupe.close();
      }
    });
    const totals = model.calls.map((call) => call.messageTokens + call.toolTokens);
    const byRole: TaskTokens["byRole"] = {};
    for (const call of model.calls) {
      const entry = (byRole[call.role] ??= { calls: 0, promptTokens: 0 });
      entry.calls += 1;
      entry.promptTokens += call.messageTokens + call.toolTokens;
    }
    tasks.push({
      example,
      task,
      stopReason: result.stopReason,
      modelCalls: model.calls.length,
      promptTokensPerRun: totals.reduce((sum, value) => sum + value, 0),
      toolTokensPerRun: model.calls.reduce((sum, call) => sum + call.toolTokens, 0),
      perCall: summarize(totals),
      byRole,
    });
  }
  return { encoding: "cl100k_base (gpt-tokenizer)", model: "offline (deterministic replies)", tasks };
}
