import type { CheckpointCostFigures, CheckpointCostReport } from "./checkpoint-cost.js";
import type { FanOutReport } from "./fan-out.js";
import type { OverheadReport, VariantFigures } from "./overhead.js";
import type { ServerBenchReport } from "./server.js";
import { formatNumber as number, formatTable, type Summary } from "./support.js";

/** Everything one `npm run bench` measures; `--json` prints exactly this. */
export interface BenchReport {
  environment: { node: string; platform: string; cpus: number; startedAt: string };
  overhead?: OverheadReport;
  fanOut?: FanOutReport;
  checkpointCost?: CheckpointCostReport;
  server?: ServerBenchReport;
  /** Undefined for a benchmark left out with --only. */
  targets: { overhead?: boolean; fanOut?: boolean; serverSubmitP95?: boolean };
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
    [report.troupe, report.rawCheckpointed, report.rawInMemory, report.troupeCountingTokens].map(row),
  );
  return [
    `1. Orchestration overhead: ${report.subtasks} subtasks in three waves, ${report.modelCallsPerRun} model calls per run (zero latency),`,
    `   concurrency ${report.concurrency}, ${report.runs} runs per variant, interleaved, after at least ${report.warmupRuns} warm-up runs and more until`,
    "   the variant's WAL file stopped growing (SQLite then reuses it), so every variant is measured in the same steady state.",
    `   Token counts: ${report.tokenCounting}.`,
    "",
    table,
    "",
    `   troupe / raw LangGraph (same SqliteSaver, sync): ${number(report.ratio.median)}× on medians, ${number(report.ratio.p95)}× on p95s`,
    `   troupe / raw LangGraph without checkpointer:     ${number(report.ratioToInMemory.median)}× on medians, ${number(report.ratioToInMemory.p95)}× on p95s`,
    `   target: troupe ≤ ${report.target.maxRatio}× the raw floor (medians) → ${verdict(report.target.met)}`,
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
    `3. Checkpoint cost: SQLite (WAL, synchronous FULL), durability ${report.durability}, the plan of benchmark 1, ${report.runs} pairs of runs.`,
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

function serverSection(report: ServerBenchReport): string {
  const row = (label: string, figures: ServerBenchReport["submitMs"]): string[] => [label, number(figures.p50), number(figures.p95), number(figures.p99), number(figures.max)];
  const latency = formatTable(
    ["POST /execute round trip (ms)", "p50", "p95", "p99", "max"],
    [row("runs parked in a slow model call", report.submitIdleMs), row("runs executing on a zero-latency model", report.submitMs)],
  );
  const other = formatTable(
    ["figure", "value"],
    [
      ["accepted (202)", `${report.accepted} of ${report.submissions * 2}`],
      ["completed runs per second (zero-latency model)", number(report.completedPerSecond)],
      ["server RSS idle (MB)", number(report.memory.idleMb)],
      [`server RSS with ${report.memory.runsInFlight} runs in flight (MB)`, number(report.memory.inFlightMb)],
      ["RSS per run in flight (KB)", number(report.memory.perRunKb)],
      ["V8 heap used with runs in flight (MB)", number(report.memory.heapUsedMb)],
    ],
  );
  return [
    `4. HTTP service: \`troupe serve\` in its own process on loopback; a keep-alive client sends ${report.submissions} POST /execute over ${report.connections} connections,`,
    "   once to a server whose runs wait on a slow model call, once to one whose runs execute at once (a two-step plan on a zero-latency",
    "   scripted model, at most 100 running, the rest queued). Runs per second from the runs' own start and finish times; memory with 100",
    "   runs parked in a model call.",
    "",
    latency,
    "",
    other,
    "",
    `   executing ÷ parked p95: ${number(report.submitMs.p95 / report.submitIdleMs.p95)}×; p95 while runs execute is ${number(report.target.p95OfBar * 100)}% of seed 001's bar (${report.completedRuns} runs completed)`,
    `   target: POST /execute p95 < ${report.target.maxP95Ms} ms → ${verdict(report.target.met)}`,
  ].join("\n");
}

/** The readable report: one section per benchmark, each ending with its target verdict. */
export function renderReport(report: BenchReport): string {
  const { environment } = report;
  const sections = [
    report.overhead && overheadSection(report.overhead),
    report.fanOut && fanOutSection(report.fanOut),
    report.checkpointCost && checkpointSection(report.checkpointCost),
    report.server && serverSection(report.server),
  ].filter((section): section is string => Boolean(section));
  return [
    `troupe benchmark: node ${environment.node}, ${environment.platform}, ${environment.cpus} CPUs, ${environment.startedAt}`,
    "",
    ...sections.flatMap((section) => [section, ""]),
    `targets: overhead ${verdict(report.targets.overhead)}, fan-out ${verdict(report.targets.fanOut)}, submit p95 ${verdict(report.targets.serverSubmitP95)} (figures are reported, never enforced)`,
  ].join("\n");
}
