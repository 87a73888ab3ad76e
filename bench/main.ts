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
import { cpus } from "node:os";
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
import { measureToolCalls } from "./tool-calls.js";
import { measureQueues } from "./queue-compare.js";
import { measureScaleOut } from "./scale-out.js";
import { measurePeers } from "./peers/peers.js";
import { measureOperations } from "./operations.js";
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
];

const { values } = parseArgs({
  options: {
    json: { type: "boolean", default: false },
    runs: { type: "string", default: "20" },
    /** Which benchmarks to run (comma-separated names from BENCHMARKS above). */
    only: { type: "string", default: BENCHMARKS.join(",") },
  },
});
const only = new Set(values.only.split(",").map((name) => name.trim()));
const unknown = [...only].filter((name) => !BENCHMARKS.includes(name));
if (unknown.length > 0) {
  console.error(`--only: unknown benchmark ${unknown.join(", ")}; choose from ${BENCHMARKS.join(", ")}`);
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
const mapThroughput = await bench("map", "map throughput…", () =>
  measureMapThroughput({ items: 1_000, latencyMs: 20, concurrencies: [10, 50], runs: Math.max(1, Math.ceil(runs / 7)), toolConcurrency: 64 }),
);
const promptSize = await bench("prompt-size", "prompt size…", () => measurePromptSize({ sizes: [1_024, 10 * 1_024, 100 * 1_024, 1_024 * 1_024, 10 * 1_024 * 1_024] }));
const promptTokens = await bench("prompt-tokens", "prompt tokens of the example tasks…", () => measurePromptTokens());
const toolCalls = await bench("tools", "tool calls…", () => measureToolCalls({ calls: runs * 100, sandboxRuns: Math.max(3, Math.ceil(runs / 2)) }));
const server = await bench("server", "HTTP service (1,000 submissions over 100 connections, then 100 runs in flight)…", () =>
  measureServer({ submissions: 1_000, connections: 100, inFlight: 100 }),
);
// Each run sleeps for its critical path (0.4–1.5 s), so five runs per shape give a stable median.
const criticalPath = await bench("critical-path", "critical path (uneven DAGs on the scripted model)…", () =>
  measureCriticalPath({ runs: Math.max(3, Math.ceil(runs / 4)), warmupRuns: 1, planMs: 400, planSubtasks: 8 }),
);
const discovery = await bench("discovery", "tool discovery (worker prompts with 200 more tools, recall, the examples' tool tokens)…", () => measureDiscovery());
const memory = await bench("memory", "memory (20 turns of one thread; search among 10,000 facts)…", () => measureMemory({ turns: 20, historyBudget: 2_000, items: 10_000, searches: 200 }));
// The same tasks through troupe, a LangGraph supervisor, the Agents SDK and a ReAct agent; three runs each for a median makespan.
const peers = await bench("peers", "side by side with the peers (13 tasks through troupe, langgraph-supervisor, the Agents SDK, a ReAct agent)…", () => measurePeers({ repeats: 3, log: progress, hosted: { repeats: 1 } }));
const protocols = await bench("protocols", "protocols (the README task over REST, MCP and A2A; a subtask delegated over A2A)…", () => measureProtocols({ runs: Math.max(30, runs * 3), warmupRuns: 3 }));
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
  },
};

process.stdout.write(values.json ? `${JSON.stringify(report, null, 2)}\n` : `${renderReport(report)}\n`);
