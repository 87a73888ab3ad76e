/**
 * `npm run bench`: measures troupe's orchestration overhead against a raw LangGraph graph, its
 * fan-out, the cost of its checkpoints, and the HTTP service (submit latency, runs per second,
 * memory with runs in flight). It reports figures and whether each target is met; it never fails
 * on a threshold. `--json` prints one JSON object; `--only server` (or a comma list) runs some.
 * Not part of `npm test`: timings depend on the machine.
 */
import { cpus } from "node:os";
import { parseArgs } from "node:util";
import { measureCheckpointCost } from "./checkpoint-cost.js";
import { measureFanOut } from "./fan-out.js";
import { measureOverhead } from "./overhead.js";
import { type BenchReport, renderReport } from "./report.js";
import { measureServer } from "./server.js";

const { values } = parseArgs({
  options: {
    json: { type: "boolean", default: false },
    runs: { type: "string", default: "20" },
    /** Which benchmarks to run (comma-separated): overhead, fanout, checkpoint, server. */
    only: { type: "string", default: "overhead,fanout,checkpoint,server" },
  },
});
const only = new Set(values.only.split(",").map((name) => name.trim()));

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
/** Runs one benchmark when --only names it. */
async function bench<T>(name: string, label: string, measure: () => Promise<T>): Promise<T | undefined> {
  if (!only.has(name)) return undefined;
  progress(label);
  return measure();
}
const overhead = await bench("overhead", `orchestration overhead (${runs} runs per variant)…`, () => measureOverhead({ runs, warmupRuns: 2, concurrency: 8 }));
// Each fan-out run sleeps for at least 200 ms, so fewer runs give a stable median.
const fanOut = await bench("fanout", "fan-out…", () => measureFanOut({ runs: Math.max(1, Math.ceil(runs / 4)), warmupRuns: 1, concurrency: 8, workerDelayMs: 100 }));
const checkpointCost = await bench("checkpoint", "checkpoint cost…", () => measureCheckpointCost({ runs: Math.max(1, Math.ceil(runs / 4)), warmupRuns: 1, concurrency: 8 }));
const server = await bench("server", "HTTP service (1,000 submissions over 100 connections, then 100 runs in flight)…", () =>
  measureServer({ submissions: 1_000, connections: 100, inFlight: 100 }),
);

const report: BenchReport = {
  environment: { node: process.version, platform: `${process.platform} ${process.arch}`, cpus: cpus().length, startedAt },
  overhead,
  fanOut,
  checkpointCost,
  server,
  targets: { overhead: overhead?.target.met, fanOut: fanOut?.target.met, serverSubmitP95: server?.target.met },
};

process.stdout.write(values.json ? `${JSON.stringify(report, null, 2)}\n` : `${renderReport(report)}\n`);
