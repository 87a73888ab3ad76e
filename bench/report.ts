import type { ByteExactReport } from "./byte-exact.js";
import { scaleSection } from "./scale/report.js";
import type { ScaleReport } from "./scale/scale.js";
import type { CheckpointCostFigures, CheckpointCostReport } from "./checkpoint-cost.js";
import type { CrashTrialsReport } from "./crash-trials.js";
import type { EvalBenchReport } from "./eval.js";
import type { CriticalPathReport } from "./critical-path.js";
import type { DiscoveryReport, WorkerPromptFigures } from "./discovery.js";
import type { FanOutReport } from "./fan-out.js";
import type { MapThroughputReport } from "./map-throughput.js";
import type { MemoryBenchReport } from "./memory.js";
import { type OperationsBenchReport, operationsSection } from "./operations.js";
import type { MisbehaviourReport } from "./misbehaviour.js";
import { type TrustBenchReport, trustSection } from "./trust.js";
import type { OfflineCorpusReport } from "./offline-corpus.js";
import type { OverheadReport, VariantFigures } from "./overhead.js";
import type { PromptTokensReport } from "./prompt-tokens.js";
import type { PromptSizeReport } from "./prompt-size.js";
import type { ServerBenchReport } from "./server.js";
import type { AdversarialBenchReport } from "./adversarial.js";
import type { ToolCallsReport } from "./tool-calls.js";
import type { QueueCompareReport } from "./queue-compare.js";
import type { ScaleOutReport } from "./scale-out.js";
import type { PeersReport } from "./peers/peers.js";
import { peersSection } from "./peers/render.js";
import { type ProtocolsBenchReport, protocolsSection } from "./protocols.js";
import { type FairQueuesReport, fairQueuesSection } from "./fair-queues.js";
import { type HostileInputsReport, hostileInputsSection } from "./hostile-inputs.js";
import { type StreamedHoldsReport, streamedHoldsSection } from "./streamed-holds.js";
import { formatNumber as number, formatTable, type Summary } from "./support.js";

/** Everything one `npm run bench` measures; `--json` prints exactly this. */
export interface BenchReport {
  environment: { node: string; platform: string; cpus: number; startedAt: string };
  /** Sections refused because something they need is missing here: section → what is missing. */
  refused: Record<string, string>;
  overhead?: OverheadReport;
  fanOut?: FanOutReport;
  checkpointCost?: CheckpointCostReport;
  promptTokens?: PromptTokensReport;
  mapThroughput?: MapThroughputReport;
  promptSize?: PromptSizeReport;
  toolCalls?: ToolCallsReport;
  server?: ServerBenchReport;
  adversarial?: AdversarialBenchReport;
  byteExact?: ByteExactReport;
  crashTrials?: CrashTrialsReport;
  offlineCorpus?: OfflineCorpusReport;
  eval?: EvalBenchReport;
  criticalPath?: CriticalPathReport;
  discovery?: DiscoveryReport;
  memory?: MemoryBenchReport;
  misbehaviour?: MisbehaviourReport;
  trust?: TrustBenchReport;
  queues?: QueueCompareReport;
  scaleOut?: ScaleOutReport;
  peers?: PeersReport;
  protocols?: ProtocolsBenchReport;
  operations?: OperationsBenchReport;
  hostile?: HostileInputsReport;
  fairness?: FairQueuesReport;
  holds?: StreamedHoldsReport;
  scale?: ScaleReport;
  /** Another build measured in the same run (--compare): its server and overhead figures. */
  compare?: CompareReport;
  /** Undefined for a benchmark left out with --only. */
  targets: {
    overhead?: boolean;
    fanOut?: boolean;
    mapThroughput?: boolean;
    promptSize?: boolean;
    serverSubmitP95?: boolean;
    adversarialLag?: boolean;
    byteExact?: boolean;
    crashDuplicates?: boolean;
    offlineCorpus?: boolean;
    eval?: boolean;
    criticalPath?: boolean;
    discovery?: boolean;
    misbehaviour?: boolean;
    memory?: boolean;
    trust?: boolean;
    scaleOut?: boolean;
    peers?: boolean;
    protocols?: boolean;
    operations?: boolean;
    hostileHealth?: boolean;
    scale?: boolean;
  };
}

/** Another build's figures, measured in the same run as this one's (`--compare <checkout>`). */
export interface CompareReport {
  checkout: string;
  commit: string;
  server?: ServerBenchReport;
  /** That build's own overhead section (its bench run in a child process), as its JSON report gives it. */
  overhead?: { ratio: { median: number; p95: number }; troupe: { runMs: Summary }; rawCheckpointed: { runMs: Summary } };
}

function compareSection(report: BenchReport): string {
  const other = report.compare as CompareReport;
  const rows: string[][] = [];
  const pair = (figure: string, mine: number | undefined, theirs: number | undefined) => rows.push([figure, number(mine), number(theirs), mine !== undefined && theirs !== undefined ? `${number(mine / theirs)}×` : "n/a"]);
  if (other.server && report.server) {
    pair("POST /execute p95 while runs execute (ms)", report.server.submitMs.p95, other.server.submitMs.p95);
    pair("POST /execute p95, runs parked (ms)", report.server.submitIdleMs.p95, other.server.submitIdleMs.p95);
    pair("POST /execute p95 at a fixed rate while runs execute (ms)", report.server.submitPacedMs.p95, other.server.submitPacedMs.p95);
    pair("the disk's fdatasync p95 meanwhile (ms)", report.server.diskSyncMs.p95, other.server.diskSyncMs.p95);
    pair("completed runs per second", report.server.completedPerSecond, other.server.completedPerSecond);
    pair("server CPU per completed run (ms)", report.server.cpuPerRunMs, other.server.cpuPerRunMs);
    pair("server event-loop delay p99 while submissions arrive (ms)", report.server.loopDelayMs.p99, other.server.loopDelayMs.p99);
    pair("server event-loop delay max while submissions arrive (ms)", report.server.loopDelayMs.max, other.server.loopDelayMs.max);
    pair("server RSS with 100 runs in flight (MB)", report.server.memory.inFlightMb, other.server.memory.inFlightMb);
  }
  if (other.overhead && report.overhead) {
    pair("overhead: troupe ÷ raw LangGraph (SqliteSaver), medians", report.overhead.ratio.median, other.overhead.ratio.median);
    pair("overhead: troupe run median (ms)", report.overhead.troupe.runMs.median, other.overhead.troupe.runMs.median);
  }
  return [
    `Side by side: this build and ${other.commit} (${other.checkout}), measured in this run (each section of the other build right after this build's).`,
    "",
    formatTable(["figure", "this build", other.commit, "this ÷ that"], rows),
  ].join("\n");
}

const verdict = (met: boolean | undefined): string => (met === undefined ? "not run" : met ? "MET" : "NOT MET");

function overheadSection(report: OverheadReport): string {
  const row = (figures: VariantFigures): string[] => [
    figures.label,
    number(figures.runMs.median),
    number(figures.runMs.p95),
    number(figures.perCallMs.median),
    number(figures.perCallMs.p95),
    `${number(figures.runMs.median / report.rawCheckpointed.runMs.median)}×`,
    String(figures.warmupRuns),
  ];
  const table = formatTable(
    ["variant", "run ms median", "run ms p95", "ms/call median", "ms/call p95", "÷ raw median", "warm-up runs"],
    [report.troupe, report.rawCheckpointed, report.rawInMemory, report.troupeCountingTokens, report.rawOnTroupeCheckpointer].map(row),
  );
  return [
    `1. Orchestration overhead: ${report.subtasks} subtasks in three waves, ${report.modelCallsPerRun} model calls per run (zero latency),`,
    `   concurrency ${report.concurrency}, ${report.runs} runs per variant, interleaved, after at least ${report.warmupRuns} warm-up runs and more until`,
    "   the variant's WAL file stopped growing (SQLite then reuses it), so every variant is measured in the same steady state.",
    `   Token counts: ${report.tokenCounting}.`,
    "",
    table,
    "",
    `   troupe / raw LangGraph (stock SqliteSaver, sync):    ${number(report.ratio.median)}× on medians, ${number(report.ratio.p95)}× on p95s`,
    `   troupe / raw LangGraph on troupe's checkpointer:     ${number(report.ratioToSameCheckpointer.median)}× on medians, ${number(report.ratioToSameCheckpointer.p95)}× on p95s`,
    `   troupe / raw LangGraph without checkpointer:         ${number(report.ratioToInMemory.median)}× on medians, ${number(report.ratioToInMemory.p95)}× on p95s`,
    "   troupe's checkpointer (src/store/checkpoints/sqlite.ts) is the stock saver with its INSERTs compiled once and a task's writes",
    "   committed unsynced, and a superstep's checkpoint committed with its WAL's fsync started off the event loop, not waited for (src/store/database/wal-sync.ts);",
    "   the floor is a user's graph on the stock saver.",
    `   target: troupe ≤ ${report.target.maxRatio}× the raw floor (medians) → ${verdict(report.target.met)}`,
  ].join("\n");
}

function toolCallsSection(report: ToolCallsReport): string {
  const row = (label: string, summary: Summary): string[] => [label, number(summary.median), number(summary.p95), number(summary.min), number(summary.max)];
  const calls = formatTable(
    ["calculator call (µs)", "median", "p95", "min", "max"],
    [row("execute() alone", report.directUs), row("registry, no policy or audit", report.bareUs), row("registry + policy + SQLite audit", report.governedUs)],
  );
  const sandboxes = formatTable(
    ["code_run (ms)", "median", "p95", "min", "max"],
    [row("javascript (QuickJS worker)", report.javascriptMs), ...(report.pythonMs ? [row("python (bubblewrap)", report.pythonMs)] : [])],
  );
  return [
    `7. Tool calls: ${report.calls} calculator calls per variant, interleaved in rounds after a warm-up round; ${report.sandboxRuns} runs per sandbox.`,
    "",
    calls,
    "",
    `   permission check + audit row: +${number(report.governedOverheadUs)} µs per call on medians (${report.auditRows} audit rows written)`,
    "",
    sandboxes,
    ...(report.pythonMs ? [] : ["   (bubblewrap is not installed: no python figure)"]),
  ].join("\n");
}

function fanOutSection(report: FanOutReport): string {
  const row = (label: string, summary: Summary): string[] => [label, number(summary.median), number(summary.p95), number(summary.min), number(summary.max)];
  const table = formatTable(
    ["figure (ms)", "median", "p95", "min", "max"],
    [
      row("execution phase (first subtask-start → last subtask-end)", report.execMs),
      row("worker model calls (first start → last end)", report.workerCallSpanMs),
      row("whole run", report.totalMs),
    ],
  );
  return [
    `2. Fan-out: ${report.subtasks} independent subtasks, each worker call ${report.workerDelayMs} ms, concurrency ${report.concurrency}, ${report.runs} runs after a warm-up.`,
    "",
    table,
    "",
    `   ideal ${number(report.idealExecMs)} ms, sequential ${number(report.sequentialExecMs)} ms; median execution phase is ${number(report.execMs.median / report.idealExecMs)}× ideal, ${number(report.execMs.median / report.sequentialExecMs)}× sequential`,
    `   speedup ${number(report.speedup)}× of an ideal ${report.idealSpeedup}× → ${number(report.fractionOfIdeal)} of ideal`,
    `   target: ≥ ${report.target.minFraction} of ideal speedup → ${verdict(report.target.met)}`,
  ].join("\n");
}

function checkpointSection(report: CheckpointCostReport): string {
  const row = (figures: CheckpointCostFigures): string[] => [
    figures.label,
    String(figures.supersteps),
    String(figures.writeRows),
    number(figures.msPerStep.median),
    number(figures.msPerStep.p95),
    number(figures.fileBytesPerStep.median),
    number(figures.writtenBytesPerStep?.median),
    number(figures.payloadBytesPerStep.median),
  ];
  const table = formatTable(
    ["graph", "supersteps", "write rows", "ms/step median", "ms/step p95", "file B/step", "write() B/step", "payload B/step"],
    [row(report.troupe), row(report.raw)],
  );
  return [
    `3. Checkpoint cost: SQLite (WAL, synchronous FULL; troupe's task writes unsynced until the superstep's commit), durability ${report.durability},`,
    `   the plan of benchmark 1, ${report.runs} pairs of runs.`,
    "   supersteps = rows in `checkpoints` for the run's thread; ms/step = run time / supersteps, measured on runs that write over",
    "   WAL space already allocated (as a long-lived database does). Bytes (medians) come from the other run of each pair, which",
    "   starts with an empty WAL: file = growth of the .db and -wal files; write() = bytes this process passed to write()",
    "   (/proc/self/io); payload = serialized checkpoint, metadata and write values.",
    "",
    table,
    "",
    `   note: ${report.note}.`,
  ].join("\n");
}

function mapThroughputSection(report: MapThroughputReport): string {
  const table = formatTable(
    ["map concurrency", "items/s median", "items/s p95", "items/s min", "ideal items/s", "÷ ideal", "peak in flight"],
    report.figures.map((figures) => [
      String(figures.concurrency),
      number(figures.itemsPerSecond.median),
      number(figures.itemsPerSecond.p95),
      number(figures.itemsPerSecond.min),
      number(figures.idealItemsPerSecond),
      number(figures.fractionOfIdeal),
      String(figures.peakInFlight),
    ]),
  );
  const capped = report.withDefaultToolLimit;
  const cappedIdeal = Math.min(capped.concurrency, capped.toolConcurrency) / (report.latencyMs / 1000);
  return [
    `5. Map throughput: ${report.items} items through a direct tool step whose tool takes ${report.latencyMs} ms, ${report.runs} run(s) per concurrency after a warm-up,`,
    "   the whole product path (each item's call through permissions and the audit, each finished item written to the SQLite stash).",
    `   items/s = items / the mapped subtask's duration; ideal = concurrency / latency. Tool platform limit: ${report.figures[0]?.toolConcurrency ?? "?"} calls at once (tools.execution.concurrency).`,
    "",
    table,
    "",
    `   with the default tool limit (${capped.toolConcurrency} calls at once), map concurrency ${capped.concurrency}: ${number(capped.itemsPerSecond.median)} items/s median, peak ${capped.peakInFlight} in flight`,
    `   (${number(capped.itemsPerSecond.median / cappedIdeal)} of the ${number(cappedIdeal)} items/s its ${Math.min(capped.concurrency, capped.toolConcurrency)} slots allow; raise tools.execution.concurrency for wider maps)`,
    `   target: ≥ ${report.target.minFraction} of ideal at every concurrency → ${verdict(report.target.met)}`,
  ].join("\n");
}

function promptSizeSection(report: PromptSizeReport): string {
  const size = (bytes: number): string => (bytes >= 1_048_576 ? `${number(bytes / 1_048_576)} MiB` : `${number(bytes / 1_024)} KiB`);
  const table = formatTable(
    ["data", "stashed bytes", "largest prompt (tokens)", "largest call", "naive prompt (tokens)", "naive ÷ troupe"],
    report.points.map((point) => [
      size(point.dataBytes),
      String(point.stashedBytes),
      String(point.largestPromptTokens),
      point.largestCall,
      String(point.naivePromptTokens),
      `${number(point.naivePromptTokens / point.largestPromptTokens)}×`,
    ]),
  );
  return [
    `6. Prompt size: a direct tool step produces customer records of growing size, a worker takes all of them as an argument,`,
    `   the critic and the synthesizer review and answer; prompt budget ${report.budget} tokens. Tokens counted with gpt-tokenizer (cl100k_base).`,
    "   naive = the worker's prompt with the whole result in its arguments, as it was before the stash.",
    "",
    table,
    "",
    `   largest prompt from ${size(report.points[0]?.dataBytes ?? 0)} to ${size(report.points.at(-1)?.dataBytes ?? 0)}: ×${number(report.growth)} (naive: ×${number(report.naiveGrowth)}); from ${size(report.plateauFromBytes)}, where data stops fitting in a prompt whole: ×${number(report.plateauGrowth)}`,
    `   target: flat from ${size(report.plateauFromBytes)} on (≤ ×${report.target.maxGrowth}) and within the budget → ${verdict(report.target.met)}`,
  ].join("\n");
}

function promptTokensSection(report: PromptTokensReport): string {
  const table = formatTable(
    ["example", "stop reason", "model calls", "prompt tokens/run", "of which tools", "per call median", "per call max", "planner", "workers", "critic", "synthesizer"],
    report.tasks.map((task) => [
      task.example,
      task.stopReason ?? "-",
      String(task.modelCalls),
      String(task.promptTokensPerRun),
      String(task.toolTokensPerRun),
      String(Math.round(task.perCall.median)),
      String(task.perCall.max),
      ...["planner", "worker", "critic", "synthesizer"].map((role) => {
        const entry = task.byRole[role];
        return entry ? `${entry.promptTokens}/${entry.calls}` : "-";
      }),
    ]),
  );
  return [
    `4. Prompt tokens of the example tasks (examples/tasks.ts) on the ${report.model} model, counted with ${report.encoding}:`,
    "   messages plus the tool definitions sent with them, per run and per model call; by role as tokens/calls.",
    "",
    table,
  ].join("\n");
}

function serverSection(report: ServerBenchReport): string {
  const row = (label: string, figures: ServerBenchReport["submitMs"]): string[] => [label, number(figures.p50), number(figures.p95), number(figures.p99), number(figures.max)];
  const latency = formatTable(
    ["POST /execute round trip (ms)", "p50", "p95", "p99", "max"],
    [
      row("runs parked in a slow model call", report.submitIdleMs),
      row("runs executing on a zero-latency model", report.submitMs),
      row(`${report.submitPacedMs.count} more at ${report.submitPacedMs.perSecond}/s (open loop) while runs execute`, report.submitPacedMs),
    ],
  );
  const other = formatTable(
    ["figure", "value"],
    [
      ["accepted (202)", `${report.accepted} of ${report.submissions * 2 + report.submitPacedMs.count}`],
      ["completed runs per second (zero-latency model)", number(report.completedPerSecond)],
      ["server CPU per completed run (ms, user + system)", number(report.cpuPerRunMs)],
      ["server event-loop delay while submissions arrive, p99 / max (ms)", `${number(report.loopDelayMs.p99)} / ${number(report.loopDelayMs.max)}`],
      ["the disk's fdatasync of a 4 KB append while the open loop runs, p50 / p95 (ms)", `${number(report.diskSyncMs.p50)} / ${number(report.diskSyncMs.p95)}`],
      ["server RSS idle (MB)", number(report.memory.idleMb)],
      [`server RSS with ${report.memory.runsInFlight} runs in flight (MB)`, number(report.memory.inFlightMb)],
      ["RSS per run in flight (KB)", number(report.memory.perRunKb)],
      ["V8 heap used with runs in flight (MB)", number(report.memory.heapUsedMb)],
    ],
  );
  return [
    `8. HTTP service: \`troupe serve\` in its own process on loopback; a keep-alive client sends ${report.submissions} POST /execute over ${report.connections} connections,`,
    "   once to a server whose runs wait on a slow model call, once to one whose runs execute at once (a two-step plan on a zero-latency",
    "   scripted model, at most 100 running, the rest queued). Runs per second from the runs' own start and finish times; memory with 100",
    "   runs parked in a model call. Then, while those runs still execute, more submissions at a fixed rate (open loop, timed from each one's",
    "   scheduled moment): the flood's figures are bound by its clients (100 always in flight ÷ submissions answered per second).",
    "   Meanwhile the bench times the disk's own fdatasync beside the data directory: a 202 waits for one or two syncs of the WAL.",
    "",
    latency,
    "",
    other,
    "",
    `   executing ÷ parked p95: ${number(report.submitMs.p95 / report.submitIdleMs.p95)}×; p95 while runs execute is ${number(report.target.p95OfBar * 100)}% of seed 001's bar (${report.completedRuns} runs completed)`,
    `   target: POST /execute p95 < ${report.target.maxP95Ms} ms → ${verdict(report.target.met)}`,
    `   issue 25's API path: p95 < ${report.apiPath.maxP95Ms} ms while runs execute → ${verdict(report.apiPath.p95Met)}; ≥ ${report.apiPath.minRunsPerSecond} completed runs/s → ${verdict(report.apiPath.runsMet)}`,
  ].join("\n");
}

function adversarialSection(report: AdversarialBenchReport): string {
  const lines = report.tasks.map((task) => `   - ${task.kind} (${task.chars} characters): ${task.status}`);
  return [
    "9. Adversarial tasks: three 5,000-character tasks made of one unbroken piece each, submitted at once to `troupe serve` (the offline",
    "   model reports no usage, so troupe counts every prompt's tokens itself), while a client polls /health.",
    ...lines,
    "",
    `   server event-loop delay: p99 ${number(report.lagP99Ms)} ms, max ${number(report.lagMaxMs)} ms (prom-client, over the ${number(report.durationMs / 1000)} s the tasks ran)`,
    `   /health: ${report.health.ok} of ${report.health.polls} polls answered 200; round trip p99 ${number(report.health.p99Ms)} ms, max ${number(report.health.maxMs)} ms`,
    `   target: event-loop delay p99 < ${report.target.maxLagP99Ms} ms → ${verdict(report.target.met)}`,
  ].join("\n");
}

function offlineCorpusSection(report: OfflineCorpusReport): string {
  const failures = report.failures.flatMap((failure) => [`    ✗ ${failure.task}`, ...failure.problems.map((problem) => `        ${problem}`)]);
  return [
    "10. Offline corpus (test/offline-corpus/cases.json): tasks the offline model carries out through the CLI, each checked for its exit",
    "    code, status, the exact values of the subtasks that answer and the exact files it leaves (the same checks as the test).",
    "",
    `    cases passed: ${report.passed} / ${report.total} (${number(report.passRate * 100)} %), ${report.concurrency} CLI processes at a time, ${number(report.durationMs / 1000)} s`,
    ...failures,
    `    target: ${number(report.target.passRate * 100)} % of the corpus → ${verdict(report.target.met)}`,
  ].join("\n");
}

function evalSection(report: EvalBenchReport): string {
  const failures = report.failures.flatMap((failure) => [`    ✗ ${failure.id}`, ...failure.failures.map((problem) => `        ${problem}`)]);
  return [
    `13. Eval suite (${report.suite}) through \`troupe eval\` on the offline model: cases it solves, and cases it must fail honestly`,
    "    (expect.status failed), each checked against its expectations (status, answer, files, calls, cost; the judge is not judged offline).",
    "",
    `    cases passed: ${report.passed} / ${report.total} (${number(report.passRate * 100)} %), exit ${report.exitCode}, ${report.concurrency} cases at a time, ${number(report.durationMs / 1000)} s (process start included)`,
    `    model calls: ${report.modelCalls}, tokens: ${report.tokens}`,
    ...failures,
    `    target: ${number(report.target.passRate * 100)} % of the suite → ${verdict(report.target.met)}`,
  ].join("\n");
}

function byteExactSection(report: ByteExactReport): string {
  const table = formatTable(
    ["case", "held", "ms", "what happened"],
    report.cases.map((outcome) => [outcome.name, outcome.held ? "yes" : "NO", number(outcome.ms), outcome.detail]),
  );
  return [
    "11. Byte-exact data flow: files of 1 B to 15 MB (text with trailing whitespace, CRLF, multibyte and control characters; and",
    "    bytes that are not UTF-8) through the offline model's plans with the CLI: 'read A and save it to B' (a worker's result",
    "    flows by reference through the stash to the worker that writes) and 'copy A to B'; cmp compares. Binary cannot be read",
    "    as text: that case must fail (exit 1) naming it, writing nothing.",
    "",
    table,
    "",
    `    cases held: ${report.held} / ${report.total}`,
    `    target: ${report.target.rate * 100} % of the matrix → ${verdict(report.target.met)}`,
  ].join("\n");
}

function crashTrialsSection(report: CrashTrialsReport): string {
  const kills = report.trials.reduce((sum, trial) => sum + trial.kills.length, 0);
  return [
    `12. Crash trials: ${report.trials.length} runs whose workers append to files (four in turn to one file, three to their own), one worker's`,
    "    python script appends to a file, and a map of 12 items runs one such script each; each run killed with SIGKILL at random",
    "    moments after it started (up to three times, its resumes too) and resumed until it ended.",
    `    SIGKILLs: ${kills}; runs completed after resume: ${report.completed} / ${report.trials.length} (${(report.completionRate * 100).toFixed(0)} %)`,
    `    duplicate side effects (a line appended twice): ${report.duplicates}; effects missing (a line never appended): ${report.missing}`,
    `    trials with fewer audit rows than tool calls in the trace (a call that ran without its row): ${report.auditMismatches}`,
    ...report.trials.filter((trial) => !trial.completed).map((trial) => `    not completed (killed after ${trial.kills.join(", ")} ms): ${trial.ending ?? "no run to show"}`),
    `    target: ${report.target.completionRate * 100} % completed, ${report.target.duplicates} duplicates, ${report.target.missing} missing → ${verdict(report.target.met)}`,
  ].join("\n");
}

function criticalPathSection(report: CriticalPathReport): string {
  const table = formatTable(
    ["shape", "subtasks", "ideal path", "ideal ms", "makespan ms median", "÷ ideal median", "÷ ideal max", "actual critical path (median run)"],
    report.shapes.map((shape) => [
      shape.name,
      String(shape.subtasks),
      shape.idealPath.join("→"),
      number(shape.idealMs),
      number(shape.makespanMs.median),
      `${number(shape.ratio.median)}×`,
      `${number(shape.ratio.max)}×`,
      shape.actualPath.join("→"),
    ]),
  );
  const plan = report.planStart;
  const range = (summary: Summary): string => `${number(summary.median)} ms median (${number(summary.min)}–${number(summary.max)})`;
  return [
    `14. Critical path: uneven DAGs on the scripted model, each worker call sleeping its latency (the planner, critic and synthesizer`,
    `    answer at once), every subtask allowed to run at once, ${report.runs} runs per shape after a warm-up. makespan = first subtask-start`,
    "    → last subtask-end (the events' times); ideal = the longest path by the scripted latencies. Before issue 12 (waves), the first",
    "    shape took 735 ms: 1.84×.",
    "",
    table,
    "",
    `    load average (1 min): ${number(report.load.before)} before, ${number(report.load.after)} after`,
    `    planner call start → first subtask-start, ${plan.subtasks} independent subtasks, the planner writing for ${plan.planMs} ms (plan approval off):`,
    `      after the whole plan:                          ${range(plan.afterWholePlanMs)}`,
    `      streamed (its arguments in ${plan.pieces} pieces, spread): ${range(plan.streamedMs)}`,
    `    overall: the shapes' median makespan ÷ ideal is ${number(report.overallMedianRatio)}×`,
    `    target: ≤ ${report.target.maxRatio}× at the median → ${verdict(report.target.met)}`,
  ].join("\n");
}

function discoverySection(report: DiscoveryReport): string {
  const row = (name: string, figures: WorkerPromptFigures): string[] => [
    name,
    String(figures.reachable),
    number(figures.offered.median),
    number(figures.toolTokens.median),
    number(figures.promptTokens.median),
    number(figures.promptTokens.max),
  ];
  const { workerPrompt, recall } = report;
  const workers = formatTable(
    ["research worker, first call", "tools it may use", "offered", "tool tokens median", "prompt tokens median", "max"],
    [
      row("built-in tools", workerPrompt.builtins),
      row("+200 tools, discovery on", workerPrompt.withCatalogueDiscovery),
      row("+200 tools, discovery off", workerPrompt.withCatalogueNoDiscovery),
    ],
  );
  const examples = formatTable(
    ["example", "tool tokens before", "after", "after ÷ before", "prompt tokens/run after"],
    report.examples.map((example) => [example.example, number(example.before), number(example.after), `${number(example.ratio)}×`, number(example.promptTokensPerRun)]),
  );
  return [
    `15. Tool discovery: a research worker's first call on each of the ${report.subtasks} labelled subtasks (the plan names no tools), offline model,`,
    "    cl100k_base; with the built-in tools, and with 200 more (twenty MCP-like servers of ten tools, all READ, so research may use them):",
    "",
    workers,
    "",
    `    with 200 more tools and discovery on, the prompt is ${number(workerPrompt.ratio)}× the built-ins' (target ≤ ${report.target.maxWorkerRatio}×); without discovery, ${number(
      workerPrompt.withCatalogueNoDiscovery.promptTokens.median / workerPrompt.builtins.promptTokens.median,
    )}×`,
    `    discovery recall on the labelled subtasks (BM25 over 215 tools): @1 ${number(recall.at1)}, @3 ${number(recall.at3)}, @5 ${number(recall.at5)} (target @5 ≥ ${report.target.minRecall})`,
    ...recall.misses.map((miss) => `      missed: ${miss}`),
    "    tool-definition tokens per run of the three examples (before: main at 71a66bb, every worker sent every tool it may use):",
    "",
    examples,
    "",
    `    target: worker prompt ≤ ${report.target.maxWorkerRatio}×, recall@5 ≥ ${report.target.minRecall}, examples' tool tokens ≤ ${report.target.maxToolTokensRatio}× → ${verdict(report.target.met)}`,
  ].join("\n");
}

function misbehaviourSection(report: MisbehaviourReport): string {
  const classes = formatTable(
    ["misbehaviour", "runs held", "completed", "misbehaving answers", "extra calls", "extra per answer", "target"],
    report.classes.map((entry) => [
      entry.misbehaviour,
      `${entry.held}/${entry.total}`,
      String(entry.completed),
      String(entry.misbehavingAnswers),
      String(entry.extraCalls),
      number(entry.extraPerAnswer),
      verdict(entry.met),
    ]),
  );
  const cache = formatTable(
    ["15-subtask run", "model calls", "prompt tokens", "from cache", "share", "cost", "cost without the cache"],
    report.cache.map((entry) => [entry.wire === "openai" ? "OpenAI wire (automatic prefix cache)" : "Anthropic wire (troupe's breakpoints)", String(entry.calls), String(entry.promptTokens), String(entry.cachedPromptTokens), `${number(entry.share * 100)} %`, `$${entry.costUsd.toFixed(5)}`, `$${entry.uncachedCostUsd.toFixed(5)}`]),
  );
  return [
    "19. Misbehaving models: each class played by the fake OpenAI and Anthropic servers, streaming and not, planning on the compact and the JSON plan wire",
    "    (8 whole runs of a task with a worker's step per class, the offline model as the servers' brain, through the real clients); held = completed",
    "    with the right file and answer, or failed saying why.",
    "    Extra calls are counted on the runs that completed, against a clean run on the same wire.",
    "",
    classes,
    "",
    ...report.classes.flatMap((entry) => entry.broken.map((line) => `      ${entry.misbehaviour} did not hold: ${line}`)),
    "    Prompt cache over a run of 15 subtasks, five of them worker writes (the fakes' caches, counted in their tokens):",
    "",
    cache,
    "",
    `    target: every run held (${report.target.heldRate * 100} %), 0 extra calls for fenced JSON and a call as text, ≤ ${report.target.maxExtraPerAnswer} per misbehaving answer otherwise, a cache share ≥ ${report.target.minCacheShare * 100} % → ${verdict(report.target.met)}`,
  ].join("\n");
}

function memorySection(report: MemoryBenchReport): string {
  const table = formatTable(
    ["turn", "task", "status", "planner prompt tokens", "history tokens", "turns kept", "summarised"],
    report.turns.map((turn) => [String(turn.turn), turn.task, turn.status, String(turn.plannerTokens), String(turn.historyTokens), String(turn.turnsKept), String(turn.turnsSummarised)]),
  );
  const search = (figures: MemoryBenchReport["lexical"]): string =>
    `${figures.retrieval.padEnd(7)} ${number(figures.latencyMs.median)} ms median, ${number(figures.latencyMs.p95)} ms p95, ${number(figures.latencyMs.max)} ms max (${figures.hits}/${figures.searches} found something)`;
  return [
    `16. Memory: ${report.turns.length} turns of one thread on the offline model, each task referring back ("double it", "save it", "that file"),`,
    `    history budget ${report.historyBudget} tokens; the planner's prompt counted as sent (system and request, gpt-tokenizer).`,
    "",
    table,
    "",
    `    planner prompt: turn 1 ${report.first} tokens, turn ${report.turns.length} ${report.last} tokens; the budget filled at turn ${report.filledAt ?? "—"}, and from there the prompt moved by ${report.spreadAfterFill} tokens`,
    `    search among ${report.items.toLocaleString("en-US")} facts in the caller's namespace (${report.otherNamespaceItems.toLocaleString("en-US")} more in another's; ${number(report.insertMs / 1000)} s to write them, 500 a transaction), 5 results each:`,
    `      ${search(report.lexical)}`,
    `      ${search(report.hybrid)} (64-dimension hashing embeddings, in-process)`,
    `    target: history within the budget on every turn (${report.target.historyWithinBudget ? "yes" : "no"}), flat after it fills (${report.target.flatAfterFill ? "yes" : "no"}), search p95 ≤ ${report.target.lexicalP95Ms} ms lexical and ≤ ${report.target.hybridP95Ms} ms hybrid → ${verdict(report.target.met)}`,
  ].join("\n");
}

function scaleOutSection(report: ScaleOutReport): string {
  const table = formatTable(
    ["workers", "runs", "runs/s", "× one worker", "ideal runs/s", "÷ ideal"],
    report.throughput.map((row) => [String(row.workers), String(row.runs), number(row.perSecond), `${number(row.speedup)}×`, number(row.ideal), number(row.perSecond / row.ideal)]),
  );
  const two = report.throughput.find((row) => row.workers === 2);
  const four = report.throughput.find((row) => row.workers === 4);
  return [
    `18. Scale-out on Postgres: worker processes behind one API-only process (serve --workers 0), each driving at most ${report.concurrency} runs,`,
    `    every model call ${report.latencyMs} ms (${report.modelCallsPerRun} calls per run); runs/s = completed runs / (last finish − first start). Synced commits.`,
    "",
    table,
    "",
    ...report.takeover.map((row) => `    takeover after a worker's SIGKILL, lease ${row.leaseSeconds} s: ${Number.isNaN(row.ms) ? "none" : `${number(row.ms / 1000)} s`} (kill → the run's interrupted call starting again on another worker)`),
    `    POST /execute through the API-only process, ${report.submitMs.count} over 50 connections while two workers run them: p50 ${number(report.submitMs.p50)} ms, p95 ${number(report.submitMs.p95)} ms, p99 ${number(report.submitMs.p99)} ms (${report.submitMs.accepted} accepted)`,
    `    target: ≥ ${report.targets.twoWorkers}× with 2 workers (${two ? `${number(two.speedup)}×` : "n/a"}) and ≥ ${report.targets.fourWorkers}× with 4 (${four ? `${number(four.speedup)}×` : "n/a"}) → ${verdict(report.targets.met)}`,
  ].join("\n");
}

function queuesSection(report: QueueCompareReport): string {
  const table = formatTable(
    ["library", "enqueue ms p50", "enqueue ms p95", "pickup ms p50", "pickup ms p95", ...report.results[0]!.throughput.map((row) => `runs/s ×${row.instances} (÷ ideal)`), "max per thread", "takeover after SIGKILL"],
    report.results.map((result) => [
      result.library,
      number(result.enqueueMs.median),
      number(result.enqueueMs.p95),
      number(result.pickupMs.median),
      number(result.pickupMs.p95),
      ...result.throughput.map((row) => `${number(row.perSecond)} (${number(row.ofIdeal)})`),
      String(result.maxPerKey),
      result.takeoverMs === null ? `none within ${number(report.takeoverBoundMs / 1000)} s` : `${number(result.takeoverMs / 1000)} s`,
    ]),
  );
  return [
    `17. Job queues compared on troupe's workload: a job's enqueue in the transaction of its run's row (300, one at a time), pickup by an`,
    `    idle worker (20), ${report.jobs} jobs per worker instance of ${report.jobMs} ms each at ${report.concurrency} per instance (five jobs per thread,`,
    "    queued together), and a worker killed with SIGKILL while it holds a job. Synced commits (fsync on).",
    "",
    table,
    "",
    ...report.results.flatMap((result) => [`    ${result.library}:`, ...result.notes.map((note) => `      - ${note}`)]),
  ].join("\n");
}

/** The readable report: one section per benchmark (those --only left out are missing), each ending with its target verdict. */
export function renderReport(report: BenchReport): string {
  const { environment } = report;
  const sections = [
    report.overhead && overheadSection(report.overhead),
    report.fanOut && fanOutSection(report.fanOut),
    report.checkpointCost && checkpointSection(report.checkpointCost),
    report.promptTokens && promptTokensSection(report.promptTokens),
    report.mapThroughput && mapThroughputSection(report.mapThroughput),
    report.promptSize && promptSizeSection(report.promptSize),
    report.toolCalls && toolCallsSection(report.toolCalls),
    report.server && serverSection(report.server),
    report.adversarial && adversarialSection(report.adversarial),
    report.offlineCorpus && offlineCorpusSection(report.offlineCorpus),
    report.byteExact && byteExactSection(report.byteExact),
    report.crashTrials && crashTrialsSection(report.crashTrials),
    report.hostile && hostileInputsSection(report.hostile),
    report.fairness && fairQueuesSection(report.fairness),
    report.holds && streamedHoldsSection(report.holds),
    report.eval && evalSection(report.eval),
    report.criticalPath && criticalPathSection(report.criticalPath),
    report.discovery && discoverySection(report.discovery),
    report.memory && memorySection(report.memory),
    report.trust && trustSection(report.trust),
    report.queues && queuesSection(report.queues),
    report.scaleOut && scaleOutSection(report.scaleOut),
    report.peers && peersSection(report.peers),
    report.protocols && protocolsSection(report.protocols),
    report.operations && operationsSection(report.operations),
    report.misbehaviour && misbehaviourSection(report.misbehaviour),
    report.scale && scaleSection(report.scale),
    report.compare && compareSection(report),
  ].filter((section): section is string => Boolean(section));
  const { targets } = report;
  const refused = Object.entries(report.refused);
  return [
    `troupe benchmark: node ${environment.node}, ${environment.platform}, ${environment.cpus} CPUs, ${environment.startedAt}`,
    "",
    ...(refused.length === 0 ? [] : ["REFUSED (not measured: something the section needs is missing here)", ...refused.map(([name, reason]) => `  ${name}: ${reason}`), ""]),
    ...sections.flatMap((section) => [section, ""]),
    `targets: ${([
      ["overhead", targets.overhead],
      ["fan-out", targets.fanOut],
      ["map throughput", targets.mapThroughput],
      ["prompt size", targets.promptSize],
      ["submit p95", targets.serverSubmitP95],
      ["adversarial lag", targets.adversarialLag],
      ["offline corpus", targets.offlineCorpus],
      ["byte-exact", targets.byteExact],
      ["crash duplicates", targets.crashDuplicates],
      ["eval", targets.eval],
      ["critical path", targets.criticalPath],
      ["discovery", targets.discovery],
      ["memory", targets.memory],
      ["scale-out", targets.scaleOut],
      ["peers", targets.peers],
      ["protocols", targets.protocols],
      ["operations", targets.operations],
      ["hostile-input /health", targets.hostileHealth],
      ["misbehaviour", targets.misbehaviour],
      ["trust", targets.trust],
      ["scale", targets.scale],
    ] as const).map(([name, met]) => `${name} ${verdict(met)}`).join(", ")} (figures are reported, never enforced)${refused.length === 0 ? "" : `; refused: ${refused.map(([name]) => name).join(", ")}`}`,
  ].join("\n");
}
