import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import type { StoredEvent } from "../src/core/events.js";
import { LIMITS } from "../src/core/limits.js";
import { Troupe } from "../src/runtime/engine.js";
import { modelSetOf } from "../src/testing/model-set.js";
import { answerStep, planStep, reviewStep, subtask } from "../src/testing/script.js";
import { ScriptedChatModel } from "../src/testing/scripted-chat-model.js";
import { createBuiltinRegistry } from "../src/tools/builtin/index.js";
import { defineTool } from "../src/tools/define-tool.js";
import { expectCompleted, SCRIPTED_USAGE } from "./scripts.js";
import { type Summary, summarize, withTempDir } from "./support.js";

/** Target of the benchmark: the map reaches at least this fraction of the ideal throughput. */
export const MAP_THROUGHPUT_TARGET_FRACTION = 0.8;

export interface MapThroughputOptions {
  items: number;
  latencyMs: number;
  concurrencies: number[];
  runs: number;
  /**
   * The tool platform's limit on tool calls at once (`tools.execution.concurrency`, default 5),
   * set above the map's so that the map itself is measured.
   */
  toolConcurrency: number;
}

export interface MapThroughputFigures {
  concurrency: number;
  /** concurrency / latency: every slot busy all the time, nothing else. */
  idealItemsPerSecond: number;
  /** Items / the mapped subtask's duration (its subtask-start to subtask-end events), per run. */
  itemsPerSecond: Summary;
  fractionOfIdeal: number;
  /** The most tool calls seen in flight at once (must not exceed the concurrency). */
  peakInFlight: number;
  /** The tool platform's limit on tool calls at once during this measurement. */
  toolConcurrency: number;
}

export interface MapThroughputReport {
  items: number;
  latencyMs: number;
  runs: number;
  figures: MapThroughputFigures[];
  /** The smallest map concurrency again, under the tool platform's default limit: what a run gets without raising it. */
  withDefaultToolLimit: MapThroughputFigures;
  target: { minFraction: number; met: boolean };
}

/**
 * Benchmark 5: one mapped direct tool step over `items` items, through the whole product path
 * (planner, dispatch, the map with its per-item stash writes, join, critic, synthesizer; SQLite,
 * sync durability), every item's call through the tool platform (permission check, audit row).
 * The tool sleeps `latencyMs` per call and does nothing else, so the ideal is `concurrency /
 * latency` items per second; the gap is troupe's per-item cost. The tool platform's own limit on
 * calls at once is raised for these figures, then the smallest map concurrency is measured again
 * under the default limit, which caps a map's calls too.
 */
export async function measureMapThroughput(options: MapThroughputOptions): Promise<MapThroughputReport> {
  const figures: MapThroughputFigures[] = [];
  for (const concurrency of options.concurrencies) figures.push(await measureOne(options, concurrency, options.toolConcurrency));
  const withDefaultToolLimit = await measureOne(options, Math.min(...options.concurrencies), LIMITS.toolConcurrency);
  return {
    items: options.items,
    latencyMs: options.latencyMs,
    runs: options.runs,
    figures,
    withDefaultToolLimit,
    target: { minFraction: MAP_THROUGHPUT_TARGET_FRACTION, met: figures.every((figure) => figure.fractionOfIdeal >= MAP_THROUGHPUT_TARGET_FRACTION) },
  };
}

async function measureOne(options: MapThroughputOptions, concurrency: number, toolConcurrency: number): Promise<MapThroughputFigures> {
  return withTempDir("troupe-bench-map-", async (directory) => {
    let inFlight = 0;
    let peakInFlight = 0;
    const tools = createBuiltinRegistry().register(
      defineTool({
        name: "slow_lookup",
        description: "Look up one item (takes a fixed time)",
        schema: z.object({ item: z.number() }),
        permission: "READ",
        riskLevel: "low",
        idempotent: true,
        timeoutMs: 5_000,
        execute: async ({ item }) => {
          inFlight += 1;
          peakInFlight = Math.max(peakInFlight, inFlight);
          await sleep(options.latencyMs);
          inFlight -= 1;
          return { item, value: item * 2 };
        },
      }),
    );
    const items = Array.from({ length: options.items }, (_, index) => index);
    const extra = { times: options.runs + 1, usage: { ...SCRIPTED_USAGE } };
    const model = new ScriptedChatModel({
      steps: [
        planStep([subtask("s1", "research", "Look up every item", { tool: "slow_lookup", args: { item: { value: items } }, mapOver: "item" })], extra),
        reviewStep(0.9, {}, extra),
        answerStep("All items looked up.", extra),
      ],
    });
    const troupe = await Troupe.create({
      models: modelSetOf(model),
      tools,
      toolsConfig: { execution: { concurrency: toolConcurrency } },
      dataDir: path.join(directory, "data"),
      workspace: path.join(directory, "workspace"),
    });
    const rates: number[] = [];
    try {
      // One warm-up run, then the measured ones.
      for (let round = 0; round <= options.runs; round += 1) {
        let started = 0;
        let ended = 0;
        const onEvent = (event: StoredEvent): void => {
          if (event.type === "subtask-start") started = performance.now();
          if (event.type === "subtask-end") ended = performance.now();
        };
        const result = await troupe.run({ task: "Look up every item", mapConcurrency: concurrency }, { onEvent });
        expectCompleted(result, model, `map throughput at concurrency ${concurrency}`);
        if (result.plan[0]?.map?.succeeded !== options.items) throw new Error(`map throughput: ${result.plan[0]?.map?.succeeded} of ${options.items} items succeeded`);
        if (round > 0) rates.push(options.items / ((ended - started) / 1000));
      }
    } finally {
      troupe.close();
    }
    const itemsPerSecond = summarize(rates);
    const idealItemsPerSecond = concurrency / (options.latencyMs / 1000);
    return { concurrency, idealItemsPerSecond, itemsPerSecond, fractionOfIdeal: itemsPerSecond.median / idealItemsPerSecond, peakInFlight, toolConcurrency };
  });
}
