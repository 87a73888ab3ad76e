import { existsSync, mkdirSync, statSync } from "node:fs";
import path from "node:path";
import type { PlannedSubtask } from "../src/core/plan.js";
import { DATABASE_FILE } from "../src/store/database/sqlite.js";
import { ScriptedChatModel } from "../src/testing/scripted-chat-model.js";
import { buildRawGraph, openRawCheckpointer, RAW_DATABASE_FILE, runRawGraph } from "./raw-graph.js";
import { createScriptedTroupe, expectCompleted, LAYERED_PLAN, modelCallsFor, scriptFor } from "./scripts.js";
import { scaleSummary, type Summary, summarize, timed, withTempDir } from "./support.js";

/** Issue 25's target (issue 1's was 1.5×): troupe may cost at most this many times the raw LangGraph floor on the stock SqliteSaver. */
export const OVERHEAD_TARGET_RATIO = 1.1;

/** The most warm-up runs a variant gets while its WAL file still grows. */
const MAX_WARMUP_RUNS = 60;

export interface OverheadOptions {
  runs: number;
  warmupRuns: number;
  concurrency: number;
}

export interface VariantFigures {
  label: string;
  /** Warm-up runs it took until the variant's WAL file stopped growing (the minimum for the in-memory one). */
  warmupRuns: number;
  runMs: Summary;
  perCallMs: Summary;
}

export interface OverheadReport {
  subtasks: number;
  modelCallsPerRun: number;
  runs: number;
  /** The fewest warm-up runs each variant got. */
  warmupRuns: number;
  concurrency: number;
  /** How token counts are obtained in the compared runs. */
  tokenCounting: string;
  troupe: VariantFigures;
  rawCheckpointed: VariantFigures;
  /** Reference only: what the floor costs without any checkpointing. */
  rawInMemory: VariantFigures;
  /** Reference only: the floor on troupe's checkpointer (how much of the ratio the checkpointer explains). */
  rawOnTroupeCheckpointer: VariantFigures;
  /** Reference only: troupe when the model reports no usage and gpt-tokenizer counts the tokens. */
  troupeCountingTokens: VariantFigures;
  /** troupe / raw with the same checkpointer, on the medians and on the p95s. */
  ratio: { median: number; p95: number };
  ratioToInMemory: { median: number; p95: number };
  ratioToSameCheckpointer: { median: number; p95: number };
  target: { maxRatio: number; met: boolean };
}

interface Variant {
  label: string;
  run: () => Promise<void>;
  close: () => void;
  /** The SQLite -wal file the variant writes, if it checkpoints. */
  walFile?: string;
  warmupRuns: number;
  samples: number[];
}

function sizeOf(file: string): number {
  return existsSync(file) ? statSync(file).size : 0;
}

/**
 * Warms a variant up: JIT and caches first, then, for a variant with a database, until its WAL
 * file stops growing. SQLite reuses the file after its auto-checkpoint; syncing writes to a file
 * that still grows costs more, and the smaller raw graph's WAL would grow for many more runs than
 * troupe's, so without this the variants would be measured in different regimes.
 */
async function warmUp(variant: Variant, minimum: number): Promise<void> {
  for (; variant.warmupRuns < minimum; variant.warmupRuns += 1) await variant.run();
  const { walFile } = variant;
  if (walFile === undefined) return;
  while (variant.warmupRuns < MAX_WARMUP_RUNS) {
    const before = sizeOf(walFile);
    await variant.run();
    variant.warmupRuns += 1;
    if (sizeOf(walFile) === before) return;
  }
}

const TASK = "Combine the figures of the layered plan";

async function troupeVariant(directory: string, label: string, plan: PlannedSubtask[], options: OverheadOptions & { withoutUsage: boolean }): Promise<Variant> {
  const steps = scriptFor(plan, { runs: options.runs + MAX_WARMUP_RUNS, withoutUsage: options.withoutUsage });
  const { troupe, model } = await createScriptedTroupe(directory, steps);
  return {
    label,
    walFile: `${path.join(troupe.store.directory, DATABASE_FILE)}-wal`,
    warmupRuns: 0,
    samples: [],
    run: async () => expectCompleted(await troupe.run({ task: TASK, concurrency: options.concurrency }), model, label),
    close: () => troupe.close(),
  };
}

function rawVariant(directory: string | undefined, label: string, plan: PlannedSubtask[], options: OverheadOptions & { troupeCheckpointer?: boolean }): Variant {
  const model = new ScriptedChatModel({ steps: scriptFor(plan, { runs: options.runs + MAX_WARMUP_RUNS }) });
  const checkpointer = directory === undefined ? undefined : openRawCheckpointer(directory, { troupeCheckpointer: options.troupeCheckpointer ?? false });
  const graph = buildRawGraph(model, checkpointer?.saver);
  return {
    label,
    ...(directory === undefined ? {} : { walFile: `${path.join(directory, RAW_DATABASE_FILE)}-wal` }),
    warmupRuns: 0,
    samples: [],
    run: async () => {
      const { state } = await runRawGraph(graph, TASK, options.concurrency);
      if (!state.answer || model.unexpected.length > 0) throw new Error(`${label}: the run did not go as scripted`);
    },
    close: () => checkpointer?.close(),
  };
}

function figures(variant: Variant, callsPerRun: number): VariantFigures {
  const runMs = summarize(variant.samples);
  return { label: variant.label, warmupRuns: variant.warmupRuns, runMs, perCallMs: scaleSummary(runMs, callsPerRun) };
}

/**
 * Benchmark 1: the same plan through troupe and through the raw graph, measured in one process,
 * in interleaved rounds so drift (GC, page cache, CPU frequency) falls on every variant alike.
 */
export async function measureOverhead(options: OverheadOptions): Promise<OverheadReport> {
  const plan = LAYERED_PLAN;
  const callsPerRun = modelCallsFor(plan);
  return withTempDir("troupe-bench-overhead-", async (directory) => {
    const place = (name: string) => {
      const subdirectory = path.join(directory, name);
      mkdirSync(subdirectory, { recursive: true });
      return subdirectory;
    };
    const variants = [
      await troupeVariant(place("troupe"), "troupe (SQLite, sync)", plan, { ...options, withoutUsage: false }),
      rawVariant(place("raw"), "raw LangGraph (SqliteSaver, sync)", plan, options),
      rawVariant(undefined, "raw LangGraph, no checkpointer (reference)", plan, options),
      await troupeVariant(place("troupe-tiktoken"), "troupe, tokens counted by gpt-tokenizer (reference)", plan, { ...options, withoutUsage: true }),
      rawVariant(place("raw-troupe-saver"), "raw LangGraph on troupe's checkpointer (reference)", plan, { ...options, troupeCheckpointer: true }),
    ];
    try {
      for (const variant of variants) await warmUp(variant, options.warmupRuns);
      for (let round = 0; round < options.runs; round += 1) {
        for (const variant of variants) variant.samples.push((await timed(variant.run)).ms);
      }
    } finally {
      for (const variant of variants) variant.close();
    }
    const [troupe, rawCheckpointed, rawInMemory, troupeCountingTokens, rawOnTroupeCheckpointer] = variants.map((variant) => figures(variant, callsPerRun)) as [
      VariantFigures,
      VariantFigures,
      VariantFigures,
      VariantFigures,
      VariantFigures,
    ];
    const ratio = { median: troupe.runMs.median / rawCheckpointed.runMs.median, p95: troupe.runMs.p95 / rawCheckpointed.runMs.p95 };
    return {
      subtasks: plan.length,
      modelCallsPerRun: callsPerRun,
      runs: options.runs,
      warmupRuns: options.warmupRuns,
      concurrency: options.concurrency,
      tokenCounting: "scripted replies report usage (input/output tokens), so the compared runs do no tokenizer work; the gpt-tokenizer line shows that cost",
      troupe,
      rawCheckpointed,
      rawInMemory,
      troupeCountingTokens,
      rawOnTroupeCheckpointer,
      ratio,
      ratioToInMemory: { median: troupe.runMs.median / rawInMemory.runMs.median, p95: troupe.runMs.p95 / rawInMemory.runMs.p95 },
      ratioToSameCheckpointer: { median: troupe.runMs.median / rawOnTroupeCheckpointer.runMs.median, p95: troupe.runMs.p95 / rawOnTroupeCheckpointer.runMs.p95 },
      target: { maxRatio: OVERHEAD_TARGET_RATIO, met: ratio.median <= OVERHEAD_TARGET_RATIO },
    };
  });
}
