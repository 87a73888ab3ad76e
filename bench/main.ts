/**
 * `npm run bench`: measures troupe's orchestration overhead against a raw LangGraph graph, its
 * fan-out, the cost of its checkpoints, the prompt tokens of the example tasks, the throughput
 * of a mapped subtask, the size of its prompts as data grows, the tool platform's cost per call
 * and per sandbox run, the HTTP service (submit latency, runs per second, memory with runs in
 * flight) and its event loop under adversarial tasks, the offline corpus's pass rate, the
 * byte-exact matrix, crash trials, the example eval suite's pass rate, and how close uneven DAGs
 * run to their critical path, tool discovery (worker prompts with 200 more tools, recall@5), memory (the planner's prompt over a thread's 20 turns, search among 10,000
 * facts), and troupe beside its peers (LangGraph's supervisor, the OpenAI Agents SDK, a ReAct agent) on the same tasks, side by side in one process. It reports figures and whether
 * each target is met; it never fails on a threshold. `--json` prints one JSON object; `--only server` (or a comma
 * list) runs some. Not part of `npm test`: timings depend on the machine.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { cpus } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { measureByteExact } from "./byte-exact.js";
import { measureCheckpointCost } from "./checkpoint-cost.js";
import { measureCriticalPath } from "./critical-path.js";
import { measureDiscovery } from "./discovery.js";
import { measureCrashTrials } from "./crash-trials.js";
import { runEvalBench } from "./eval.js";
import { measureFanOut } from "./fan-out.js";
import { measureMapThroughput } from "./map-throughput.js";
import { measureMemory } from "./memory.js";
import { measureMisbehaviour } from "./misbehaviour.js";
import { measureTrust } from "./trust.js";
import { runOfflineCorpus } from "./offline-corpus.js";
import { measureOverhead } from "./overhead.js";
import { measurePromptTokens } from "./prompt-tokens.js";
import { measurePromptSize } from "./prompt-size.js";
import { type BenchReport, renderReport } from "./report.js";
import { measureAdversarial } from "./adversarial.js";
import { measureProtocols } from "./protocols.js";
import { measureFairQueues } from "./fair-queues.js";
import { measureHostileInputs } from "./hostile-inputs.js";
import { measureStreamedHolds } from "./streamed-holds.js";
import { measureServer } from "./server.js";
import { withTempDir } from "./support.js";
import { refusals } from "./prerequisites.js";
import type { CompareReport } from "./report.js";
import { measureToolCalls } from "./tool-calls.js";
import { measureQueues } from "./queue-compare.js";
import { measureScaleOut } from "./scale-out.js";
import { measureOperations } from "./operations.js";
import { type Backend, measureScale, type ScalePart } from "./scale/scale.js";
import { dropDatabase } from "./scale/postgres-admin.js";
import { startThrowawayPostgres, type ThrowawayPostgres } from "../src/testing/postgres-cluster.js";

const BENCHMARKS = [
  "overhead",
  "fanout",
  "checkpoint",
  "prompt-tokens",
  "map",
  "prompt-size",
  "tools",
  "server",
  "adversarial",
  "offline-corpus",
  "byte-exact",
  "crash-trials",
  "eval",
  "critical-path",
  "discovery",
  "memory",
  "queues",
  "scale-out",
  "peers",
  "protocols",
  "operations",
  "hostile",
  "fairness",
  "holds",
  "misbehaviour",
  "trust",
  "scale",
];

const { values } = parseArgs({
  options: {
    json: { type: "boolean", default: false },
    runs: { type: "string", default: "20" },
    /** Which benchmarks to run (comma-separated names from BENCHMARKS above). */
    only: { type: "string", default: BENCHMARKS.join(",") },
    /** The scale section's sizes: `full` (the issue's: 100k waiting, 1,000 watchers, 1M finished runs) or `quick` (minutes). */
    "scale-size": { type: "string", default: "full" },
    /** The scale section's parts (queue, watchers, history) and backends (sqlite, postgres), comma lists; all by default. */
    "scale-parts": { type: "string", default: "queue,watchers,history" },
    "scale-backends": { type: "string", default: "sqlite,postgres" },
    /** The client processes the watchers' SSE subscribers are spread over. */
    "scale-watcher-clients": { type: "string", default: "4" },
    /** Another built checkout of troupe (its dist/): its server and overhead sections are measured in the same run, beside this build's. */
    compare: { type: "string" },
  },
});
const only = new Set(values.only.split(",").map((name) => name.trim()));
const unknown = [...only].filter((name) => !BENCHMARKS.includes(name));
if (unknown.length > 0) {
  console.error(`--only: unknown benchmark ${unknown.join(", ")}; choose from ${BENCHMARKS.join(", ")}`);
  process.exit(2);
}

const scaleSize = values["scale-size"];
if (scaleSize !== "full" && scaleSize !== "quick") {
  console.error(`--scale-size must be full or quick, not ${scaleSize}`);
  process.exit(2);
}

const scaleParts = values["scale-parts"].split(",").map((part) => part.trim());
const scaleBackends = values["scale-backends"].split(",").map((backend) => backend.trim());
if (scaleParts.some((part) => !["queue", "watchers", "history"].includes(part)) || scaleBackends.some((backend) => !["sqlite", "postgres"].includes(backend))) {
  console.error(`--scale-parts takes queue, watchers, history and --scale-backends sqlite, postgres (comma lists), not ${values["scale-parts"]} / ${values["scale-backends"]}`);
  process.exit(2);
}

const watcherClients = Number(values["scale-watcher-clients"]);
if (!Number.isInteger(watcherClients) || watcherClients < 1 || watcherClients > 64) {
  console.error(`--scale-watcher-clients must be a whole number from 1 to 64, not ${values["scale-watcher-clients"]}`);
  process.exit(2);
}

const runs = Number(values.runs);
if (!Number.isInteger(runs) || runs < 1) {
  console.error(`--runs must be a positive integer, not ${values.runs}`);
  process.exit(2);
}

// Progress goes to stderr, and only for the table, so `--json` output stays one object.
const progress = (line: string): void => {
  if (!values.json) process.stderr.write(`${line}\n`);
};

if (values.compare !== undefined && !existsSync(path.join(values.compare, "dist/src/cli/main.js"))) {
  console.error(`--compare: ${values.compare} is not a built troupe checkout (no dist/src/cli/main.js: run npm ci && npm run build there)`);
  process.exit(2);
}

/**
 * Another build's server and overhead sections, right after this build's: its CLI served by this
 * bench's server section, its own bench (in a child process) for the overhead.
 */
async function compareWith(checkout: string): Promise<CompareReport> {
  const exec = promisify(execFile);
  const commit = (await exec("git", ["-C", checkout, "rev-parse", "--short", "HEAD"]).catch(() => ({ stdout: "other" }))).stdout.trim();
  const result: CompareReport = { checkout, commit };
  if (only.has("server") && !refused.has("server")) {
    progress(`HTTP service of ${commit} (the same measurement, its CLI)…`);
    result.server = await measureServer({ submissions: 1_000, connections: 100, inFlight: 100, cli: path.join(checkout, "dist/src/cli/main.js"), providerModule: path.join(checkout, "dist/src/testing/scripted-provider.js") });
  }
  return result;
}

/** The other build's overhead section, by its own bench. */
async function compareOverhead(checkout: string, report: CompareReport): Promise<void> {
  progress(`orchestration overhead of ${report.commit} (its own bench, ${runs} runs per variant)…`);
  const { stdout } = await promisify(execFile)(process.execPath, [path.join(checkout, "dist/bench/main.js"), "--only", "overhead", "--json", "--runs", String(runs)], { cwd: checkout, maxBuffer: 64 * 1024 * 1024 });
  report.overhead = (JSON.parse(stdout) as { overhead: CompareReport["overhead"] }).overhead;
}

const startedAt = new Date().toISOString();
// Sections whose prerequisites are missing here are refused, named, before anything runs.
const refused = await refusals(only);
for (const [name, reason] of refused) console.error(`bench: ${name} refused: ${reason}`);
/** Runs one benchmark when --only names it and nothing it needs is missing. */
async function bench<T>(name: string, label: string, measure: () => Promise<T>): Promise<T | undefined> {
  if (!only.has(name) || refused.has(name)) return undefined;
  progress(label);
  return measure();
}
const overhead = await bench("overhead", `orchestration overhead (${runs} runs per variant)…`, () => measureOverhead({ runs, warmupRuns: 2, concurrency: 8 }));
// Each fan-out run sleeps for at least 200 ms, so fewer runs give a stable median.
const fanOut = await bench("fanout", "fan-out…", () => measureFanOut({ runs: Math.max(1, Math.ceil(runs / 4)), warmupRuns: 1, concurrency: 8, workerDelayMs: 100 }));
const checkpointCost = await bench("checkpoint", "checkpoint cost…", () => measureCheckpointCost({ runs: Math.max(1, Math.ceil(runs / 4)), warmupRuns: 1, concurrency: 8 }));
const mapThroughput = await bench("map", "map throughput…", () =>
  measureMapThroughput({ items: 1_000, latencyMs: 20, concurrencies: [10, 50], runs: Math.max(1, Math.ceil(runs / 7)), toolConcurrency: 64 }),
);
const promptSize = await bench("prompt-size", "prompt size…", () => measurePromptSize({ sizes: [1_024, 10 * 1_024, 100 * 1_024, 1_024 * 1_024, 10 * 1_024 * 1_024] }));
const promptTokens = await bench("prompt-tokens", "prompt tokens of the example tasks…", () => measurePromptTokens());
const toolCalls = await bench("tools", "tool calls…", () => measureToolCalls({ calls: runs * 100, sandboxRuns: Math.max(3, Math.ceil(runs / 2)) }));
const server = await bench("server", "HTTP service (1,000 submissions over 100 connections, then 100 runs in flight)…", () =>
  measureServer({ submissions: 1_000, connections: 100, inFlight: 100 }),
);
const compare = values.compare === undefined ? undefined : await compareWith(path.resolve(values.compare));
if (compare && only.has("overhead") && !refused.has("overhead")) await compareOverhead(compare.checkout, compare);
// Each run sleeps for its critical path (0.4–1.5 s), so five runs per shape give a stable median.
const criticalPath = await bench("critical-path", "critical path (uneven DAGs on the scripted model)…", () =>
  measureCriticalPath({ runs: Math.max(3, Math.ceil(runs / 4)), warmupRuns: 1, planMs: 400, planSubtasks: 8 }),
);
const discovery = await bench("discovery", "tool discovery (worker prompts with 200 more tools, recall, the examples' tool tokens)…", () => measureDiscovery());
const memory = await bench("memory", "memory (20 turns of one thread; search among 10,000 facts)…", () => measureMemory({ turns: 20, historyBudget: 2_000, items: 10_000, searches: 200 }));
// The same tasks through troupe, a LangGraph supervisor, the Agents SDK and a ReAct agent; three runs each for a median makespan.
// Imported only when it runs: its frameworks are devDependencies (see prerequisites.ts).
const peers = await bench("peers", "side by side with the peers (13 tasks through troupe, langgraph-supervisor, the Agents SDK, a ReAct agent)…", async () =>
  (await import("./peers/peers.js")).measurePeers({ repeats: 3, log: progress, hosted: { repeats: 1 } }),
);
const protocols = await bench("protocols", "protocols (the README task over REST, MCP, A2A and the Agent Protocol; a subtask delegated over A2A)…", () => measureProtocols({ runs: Math.max(30, runs * 3), warmupRuns: 3 }));
const hostile = await bench("hostile", "hostile inputs (one key's programs in disguise while another key polls /health)…", () => measureHostileInputs());
const holds = await bench("holds", "held effects in streamed planning (writes wait for the plan, reads do not)…", () => measureStreamedHolds({ planMs: 400, runs: Math.max(3, Math.ceil(runs / 4)) }));
const misbehaviour = await bench("misbehaviour", "misbehaving models (ten classes on both wires, streaming and not) and the prompt cache over a 15-subtask run…", () => measureMisbehaviour());
const trust = await bench("trust", "untrusted data (the injection corpus defended and not, the benign corpus, the labels' cost)…", () => measureTrust({ runs, log: progress }));
const adversarial = await bench("adversarial", "adversarial tasks (three 5,000-character tasks while /health is polled)…", () => measureAdversarial({ chars: 5_000, pollMs: 50 }));

// The Postgres benchmarks share one throwaway cluster (synced commits, as a real deployment has them).
let postgres: ThrowawayPostgres | undefined;
const cluster = async (): Promise<ThrowawayPostgres> => (postgres ??= await startThrowawayPostgres({ fsync: true }));
let fairDatabases = 0;
const fairness = await bench("fairness", "fair queues (another key's flood of evals and tasks, then one small one; the tasks again on Postgres)…", () =>
  measureFairQueues({ evals: 4, casesEach: 25, tasks: 40, maxRunning: 4, postgres: async () => (await cluster()).database(`fair_${(fairDatabases += 1)}`) }),
);
const queues = await bench("queues", "job queues compared (pg-boss and graphile-worker on troupe's workload)…", async () => measureQueues({ database: async (name) => (await cluster()).database(name), log: progress }));
const scaleOut = await bench("scale-out", "scale-out on Postgres (1, 2 and 4 workers behind an API-only process; a worker's SIGKILL; POST /execute)…", async () =>
  measureScaleOut({
    database: async (name) => (await cluster()).database(name),
    latencyMs: 200,
    // Two runs per worker: four workers, the API process and Postgres then fit the benchmark machine's two CPUs (see docs/scale-out.md).
    concurrency: 2,
    runsPerWorker: 40,
    workerCounts: [1, 2, 4],
    submissions: 500,
    connections: 50,
    log: progress,
  }),
);
let operationsDatabases = 0;
const operations = await bench("operations", "operations over time (gc of 10,000 runs on SQLite and Postgres; webhook delivery latency)…", async () =>
  measureOperations({ runs: 10_000, deliveries: 50, postgres: async () => (await cluster()).database(`operations_${(operationsDatabases += 1)}`), log: progress }),
);
const scale = await bench("scale", `scale: queue depth, watchers and history on SQLite and Postgres (${scaleSize} sizes)…`, async () =>
  measureScale({
    size: scaleSize,
    parts: scaleParts as ScalePart[],
    backends: scaleBackends as Backend[],
    watcherClients,
    postgres: { database: async (name) => (await cluster()).database(name), drop: async (name) => dropDatabase((await cluster()).url, name) },
    log: progress,
  }),
);
await postgres?.destroy();

// The CLI as a user runs it, from the same build as this benchmark (dist/bench → dist/src/cli).
const cli = fileURLToPath(new URL("../src/cli/main.js", import.meta.url));
const byteExact = await bench("byte-exact", "byte-exact matrix (one offline CLI run per case)…", () => measureByteExact(cli, (body) => withTempDir("troupe-bench-exact-", body)));
const crashTrials = await bench("crash-trials", "crash trials (SIGKILL at random moments, resumed until done)…", () => measureCrashTrials(cli, 20, (body) => withTempDir("troupe-bench-crash-", body)));

// Last: it runs the CLI in child processes, three at a time, which would disturb the timings above.
const offlineCorpus = await bench("offline-corpus", "offline corpus (each task through the CLI)…", () => runOfflineCorpus({ concurrency: 3 }));
const evalSuite = await bench("eval", "eval suite (examples/evals/offline.jsonl through troupe eval)…", () => runEvalBench({ cli }));

const report: BenchReport = {
  environment: { node: process.version, platform: `${process.platform} ${process.arch}`, cpus: cpus().length, startedAt },
  refused: Object.fromEntries(refused),
  overhead,
  fanOut,
  checkpointCost,
  promptTokens,
  mapThroughput,
  promptSize,
  toolCalls,
  server,
  adversarial,
  offlineCorpus,
  byteExact,
  crashTrials,
  eval: evalSuite,
  criticalPath,
  discovery,
  memory,
  trust,
  queues,
  scaleOut,
  peers,
  protocols,
  operations,
  hostile,
  fairness,
  holds,
  misbehaviour,
  scale,
  ...(compare ? { compare } : {}),
  targets: {
    overhead: overhead?.target.met,
    fanOut: fanOut?.target.met,
    mapThroughput: mapThroughput?.target.met,
    promptSize: promptSize?.target.met,
    serverSubmitP95: server?.target.met,
    adversarialLag: adversarial?.target.met,
    offlineCorpus: offlineCorpus?.target.met,
    byteExact: byteExact?.target.met,
    crashDuplicates: crashTrials?.target.met,
    eval: evalSuite?.target.met,
    criticalPath: criticalPath?.target.met,
    discovery: discovery?.target.met,
    memory: memory?.target.met,
    trust: trust?.target.met,
    scaleOut: scaleOut?.targets.met,
    peers: peers?.target.met,
    protocols: protocols?.target.met,
    operations: operations?.target.met,
    hostileHealth: hostile?.target.met,
    misbehaviour: misbehaviour?.target.met,
    scale: scale?.target.met,
  },
};

process.stdout.write(values.json ? `${JSON.stringify(report, null, 2)}\n` : `${renderReport(report)}\n`);
// A refused section is a machine that cannot measure it (exit 2, as a configuration problem): never a figure.
if (refused.size > 0) process.exitCode = 2;
