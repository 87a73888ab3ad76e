import path from "node:path";
import type { BaseMessage } from "@langchain/core/messages";
import type { ChatResult } from "@langchain/core/outputs";
import { z } from "zod";
import { LIMITS } from "../src/core/limits.js";
import { countMessageTokens, countTextTokens } from "../src/providers/token-count.js";
import type { ToolCallingCallOptions } from "../src/providers/tool-calling-chat-model.js";
import { Troupe } from "../src/runtime/engine.js";
import { modelSetOf } from "../src/testing/model-set.js";
import { answerStep, finalStep, planStep, reviewStep, subtask } from "../src/testing/script.js";
import { ScriptedChatModel } from "../src/testing/scripted-chat-model.js";
import { createBuiltinRegistry } from "../src/tools/builtin/index.js";
import { defineTool } from "../src/tools/define-tool.js";
import { expectCompleted } from "./scripts.js";
import { withTempDir } from "./support.js";

/**
 * Target: once the data is larger than what a prompt shows in full (from 10 KiB on: a worker
 * inlines an argument of up to 4,000 characters), the largest prompt grows by at most this factor.
 */
export const PROMPT_FLAT_TARGET_RATIO = 1.1;
export const PLATEAU_FROM_BYTES = 10 * 1_024;

export interface PromptSizeOptions {
  /** Sizes of the data the first subtask produces, in bytes. */
  sizes: number[];
}

export interface PromptSizePoint {
  dataBytes: number;
  /** The stashed result's size as the state records it. */
  stashedBytes: number;
  /** Prompt tokens of the largest model call of the run (gpt-tokenizer, cl100k_base). */
  largestPromptTokens: number;
  /** Which call that was (planner, a worker, critic, synthesizer). */
  largestCall: string;
  /** The worker's prompt with the whole result in its arguments (as before the stash), or the largest prompt if larger. */
  naivePromptTokens: number;
}

export interface PromptSizeReport {
  budget: number;
  points: PromptSizePoint[];
  /** Largest prompt at the largest size / at the smallest. */
  growth: number;
  /** Largest prompt at the largest size / at the first size of at least PLATEAU_FROM_BYTES. */
  plateauGrowth: number;
  plateauFromBytes: number;
  naiveGrowth: number;
  target: { maxGrowth: number; met: boolean };
}

/** A scripted model that measures every prompt it is sent. */
class MeasuringModel extends ScriptedChatModel {
  largest = { tokens: 0, role: "" };
  readonly byRole = new Map<string, number>();

  override async _generate(messages: BaseMessage[], options: ToolCallingCallOptions): Promise<ChatResult> {
    const tokens = await countMessageTokens(messages);
    const system = messages.find((message) => message.getType() === "system");
    const role = /^You are the troupe ([\w-]+)/.exec(String(system?.content ?? ""))?.[1] ?? "?";
    this.byRole.set(role, Math.max(tokens, this.byRole.get(role) ?? 0));
    if (tokens > this.largest.tokens) this.largest = { tokens, role };
    return super._generate(messages, options);
  }
}

/** Records of about 100 bytes of JSON each, `bytes` of them in all. */
function makeData(bytes: number): Array<Record<string, unknown>> {
  const records: Array<Record<string, unknown>> = [];
  let size = 2;
  for (let id = 0; size < bytes; id += 1) {
    const record = { id, name: `customer ${id}`, city: ["London", "Paris", "Lagos", "Lima"][id % 4], orders: id % 17, note: "regular delivery, no issues" };
    records.push(record);
    size += JSON.stringify(record).length + 1;
  }
  return records;
}

/**
 * Benchmark 6: a direct tool step produces data of growing size; a worker takes all of it as an
 * argument and answers; the critic and the synthesizer review and answer from the outcomes. The
 * largest prompt of each run is measured, beside the same prompt with the whole result in it.
 */
export async function measurePromptSize(options: PromptSizeOptions): Promise<PromptSizeReport> {
  const points: PromptSizePoint[] = [];
  for (const dataBytes of options.sizes) {
    points.push(
      await withTempDir("troupe-bench-prompt-", async (directory) => {
        const data = makeData(dataBytes);
        const tools = createBuiltinRegistry().register(
          defineTool({
            name: "export_customers",
            description: "Export the customer records",
            schema: z.object({}),
            permission: "READ",
            riskLevel: "low",
            idempotent: true,
            timeoutMs: 60_000,
            execute: async () => data,
            summarize: (value) => `${(value as unknown[]).length} customer records`,
          }),
        );
        const model = new MeasuringModel({
          steps: [
            planStep([
              subtask("s1", "research", "Export the customer records", { tool: "export_customers" }),
              subtask("s2", "execute", "Find the city with the most customers", { dependsOn: ["s1"], args: { customers: { ref: "s1", path: "$" } } }),
            ]),
            finalStep("s2", "London has the most customers."),
            reviewStep(0.9),
            answerStep("London has the most customers."),
          ],
        });
        const troupe = await Troupe.create({ models: modelSetOf(model), tools, dataDir: path.join(directory, "data"), workspace: path.join(directory, "workspace") });
        try {
          const result = await troupe.run({ task: "Which city has the most customers?" });
          expectCompleted(result, model, `prompt size at ${dataBytes} bytes`);
          // The naive worker prompt: the whole result pretty-printed into its arguments, as before the stash.
          const wholeResult = await countTextTokens(JSON.stringify({ customers: data }, null, 2));
          return {
            dataBytes,
            stashedBytes: result.plan[0]?.bytes ?? 0,
            largestPromptTokens: model.largest.tokens,
            largestCall: model.largest.role,
            naivePromptTokens: Math.max(model.largest.tokens, (model.byRole.get("execute") ?? 0) + wholeResult),
          };
        } finally {
          troupe.close();
        }
      }),
    );
  }
  const first = points[0] as PromptSizePoint;
  const last = points.at(-1) as PromptSizePoint;
  const plateau = points.find((point) => point.dataBytes >= PLATEAU_FROM_BYTES) ?? first;
  const plateauGrowth = last.largestPromptTokens / plateau.largestPromptTokens;
  return {
    budget: LIMITS.promptTokenBudget,
    points,
    growth: last.largestPromptTokens / first.largestPromptTokens,
    plateauGrowth,
    plateauFromBytes: plateau.dataBytes,
    naiveGrowth: last.naivePromptTokens / first.naivePromptTokens,
    target: {
      maxGrowth: PROMPT_FLAT_TARGET_RATIO,
      met: plateauGrowth <= PROMPT_FLAT_TARGET_RATIO && points.every((point) => point.largestPromptTokens <= LIMITS.promptTokenBudget),
    },
  };
}
