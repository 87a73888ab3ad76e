/**
 * `npm run bench`: measures troupe's orchestration overhead against a raw LangGraph graph, its
 * fan-out, the cost of its checkpoints, the prompt tokens of the example tasks, the throughput
 * of a mapped subtask, the size of its prompts as data grows, and the tool platform's cost per
 * call and per sandbox run, side by side in one process. It reports figures and
 * whether each target is met; it never fails on a threshold. `--json` prints one JSON object.
 * Not part of `npm test`: timings depend on the machine.
 */
import { cpus } from "node:os";
import { parseArgs } from "node:util";
import { measureCheckpointCost } from "./checkpoint-cost.js";
import { measureFanOut } from "./fan-out.js";
import { measureMapThroughput } from "./map-throughput.js";
import { measureOverhead } from "./overhead.js";
import { measurePromptTokens } from "./prompt-tokens.js";
import { measurePromptSize } from "./prompt-size.js";
import { type BenchReport, renderReport } from "./report.js";
import { measureToolCalls } from "./tool-calls.js";

const { values } = parseArgs({
  options: {
    json: { type: "boolean", default: false },
    runs: { type: "string", default: "20" },
  },
});

const runs = Number(values.runs);
if (!Number.isInteger(runs) || runs < 1) {
  console.error(`--runs must be a positive integer, not ${values.runs}`);
  process.exit(2);
}

// Progress goes to stderr, and only for the table, so `--json` output stays one object.
const progress = (line: string): void => {
  if (!values.json) process.stderr.write(`${line}\n`);
};

const startedAt = new Date().toISOString();
progress(`orchestration overhead (${runs} runs per variant)…`);
const overhead = await measureOverhead({ runs, warmupRuns: 2, concurrency: 8 });
progress("fan-out…");
// Each fan-out run sleeps for at least 200 ms, so fewer runs give a stable median.
const fanOut = await measureFanOut({ runs: Math.max(1, Math.ceil(runs / 4)), warmupRuns: 1, concurrency: 8, workerDelayMs: 100 });
progress("checkpoint cost…");
const checkpointCost = await measureCheckpointCost({ runs: Math.max(1, Math.ceil(runs / 4)), warmupRuns: 1, concurrency: 8 });
progress("map throughput…");
const mapThroughput = await measureMapThroughput({ items: 1_000, latencyMs: 20, concurrencies: [10, 50], runs: Math.max(1, Math.ceil(runs / 7)), toolConcurrency: 64 });
progress("prompt size…");
const promptSize = await measurePromptSize({ sizes: [1_024, 10 * 1_024, 100 * 1_024, 1_024 * 1_024, 10 * 1_024 * 1_024] });

progress("prompt tokens of the example tasks…");
const promptTokens = await measurePromptTokens();

progress("tool calls…");
const toolCalls = await measureToolCalls({ calls: runs * 100, sandboxRuns: Math.max(3, Math.ceil(runs / 2)) });

const report: BenchReport = {
  environment: { node: process.version, platform: `${process.platform} ${process.arch}`, cpus: cpus().length, startedAt },
  overhead,
  fanOut,
  checkpointCost,
  promptTokens,
  mapThroughput,
  promptSize,
  toolCalls,
  targets: { overhead: overhead.target.met, fanOut: fanOut.target.met, mapThroughput: mapThroughput.target.met, promptSize: promptSize.target.met },
};

process.stdout.write(values.json ? `${JSON.stringify(report, null, 2)}\n` : `${renderReport(report)}\n`);
