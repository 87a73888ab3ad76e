import type { Comparison } from "../eval/compare.js";
import type { EvalEvent } from "../eval/events.js";
import type { CaseResult, EvalResults } from "../eval/results.js";
import { truncate } from "../core/text.js";
import { color, err, formatMs, out } from "./io.js";

const oneLine = (text: string, max: number): string => truncate(text.replace(/\s+/g, " ").trim(), max);
const percent = (rate: number): string => `${(Math.round(rate * 1000) / 10).toString()}%`;
const dollars = (value: number): string => `$${value.toFixed(4)}`;
const signed = (value: number, format: (value: number) => string = String): string => (value > 0 ? `+${format(value)}` : value < 0 ? `-${format(-value)}` : "±0");
const thousands = (value: number): string => value.toLocaleString("en-US");

/** One line on stderr per eval event: the start, each case as it ends (with the running tally), the end. */
export function printEvalProgress(event: EvalEvent): void {
  switch (event.type) {
    case "eval-start":
      err(color.dim(`eval ${event.suite}: ${event.total} case${event.total === 1 ? "" : "s"} on ${event.provider}, ${event.concurrency} at a time${event.mode === "live" ? "" : ` (${event.mode})`} · ${event.evalId}`));
      break;
    case "case-end": {
      const { result } = event;
      const mark = result.passed ? color.green("✓") : color.red("✗");
      const why = result.passed ? "" : ` ${oneLine(result.failures.map((failure) => `${failure.expectation}: ${failure.message}`).join("; "), 140)}`;
      err(`[${event.done}/${event.total}] ${mark} ${result.id} ${color.dim(`${formatMs(result.durationMs)} · ${event.passing} passing, ${event.failing} failing`)}${why}`);
      break;
    }
    case "eval-end":
      if (event.status === "cancelled") err(color.yellow(`eval cancelled: ${event.passed + event.failed} of ${event.total} cases ran`));
      break;
    case "case-start":
      break;
  }
}

function pad(text: string, width: number): string {
  return text.length >= width ? text : text + " ".repeat(width - text.length);
}

function table(rows: string[][], rightAligned: ReadonlySet<number>): string[] {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? "").length))) ?? [];
  return rows.map((row) =>
    row
      .map((cell, column) => (rightAligned.has(column) ? " ".repeat(Math.max(0, (widths[column] ?? 0) - cell.length)) + cell : pad(cell, widths[column] ?? 0)))
      .join("  ")
      .trimEnd(),
  );
}

function failedKinds(result: CaseResult): string {
  const kinds = [...new Set(result.failures.map((failure) => failure.expectation))];
  const note = result.judge && !result.judge.judged ? "(judge: not judged)" : "";
  return [kinds.join(", "), note].filter(Boolean).join(" ");
}

/** The human form of an eval: the table, the failures with the runs to open, the summary, and the comparison. */
export function printEvalResults(results: EvalResults, comparison?: Comparison, dataDir?: string): void {
  const header = ["case", "verdict", "failed expectations", "calls", "tokens", "cost", "time"];
  const rows = results.cases.map((result) => [
    result.id,
    result.passed ? "pass" : "FAIL",
    failedKinds(result),
    String(result.metrics.llmCalls),
    thousands(result.metrics.promptTokens + result.metrics.completionTokens),
    dollars(result.metrics.costUsd),
    formatMs(result.durationMs),
  ]);
  for (const line of table([header, ...rows], new Set([3, 4, 5, 6]))) out(line);

  const failing = results.cases.filter((result) => !result.passed);
  if (failing.length > 0) {
    out("");
    out(color.bold("failures:"));
    for (const result of failing) {
      out(`${result.id}:`);
      for (const failure of result.failures) out(`  - ${failure.expectation}: ${failure.message}`);
      if (result.runId) out(color.dim(`  run ${result.runId} (troupe runs show ${result.runId}) · workspace ${result.workspace}`));
    }
  }
  const judged = results.cases.filter((result) => result.judge);
  if (judged.length > 0) {
    out("");
    out(color.bold("judged:"));
    for (const result of judged) {
      const judge = result.judge;
      if (!judge) continue;
      if (!judge.judged) out(`${result.id}: not judged — ${judge.reason}`);
      else out(`${result.id}: ${judge.passed ? "pass" : "FAIL"}, score ${judge.score ?? 0} (needs ${judge.minScore}) by ${judge.model ?? "?"}: ${oneLine(judge.reason, 200)}`);
    }
  }

  out("");
  const met = results.meetsMinPassRate ? color.green("met") : color.red("not met");
  out(`passed ${results.passed} of ${results.total} (${percent(results.passRate)}) · minimum ${percent(results.minPassRate)} → ${met}${results.status === "cancelled" ? " (cancelled)" : ""}`);
  if (results.judged + results.notJudged > 0) {
    out(`judge: ${results.judged} judged${results.notJudged > 0 ? `, ${results.notJudged} not judged (the offline model does not judge; those cases pass or fail on their other expectations)` : ""}`);
  }
  const metrics = results.metrics;
  const judgeCalls = metrics.judge.llmCalls > 0 ? ` (+${metrics.judge.llmCalls} judge calls, ${dollars(metrics.judge.costUsd)})` : "";
  out(`calls: ${metrics.llmCalls} model, ${metrics.toolCalls} tool · tokens: ${thousands(metrics.promptTokens)} prompt + ${thousands(metrics.completionTokens)} completion · cost ${dollars(metrics.costUsd)}${judgeCalls} · ${formatMs(metrics.durationMs)}`);
  out(color.dim(`eval ${results.evalId} on ${results.provider}${results.mode === "live" ? "" : ` (${results.mode})`}; every case's run is kept${dataDir ? ` in ${dataDir}` : ""}: troupe runs show <run id>`));
  if (comparison) printComparison(comparison);
}

function printComparison(comparison: Comparison): void {
  out("");
  out(color.bold(`compared with ${comparison.against}:`));
  const points = Math.round(comparison.passRate.delta * 1000) / 10;
  out(`pass rate ${percent(comparison.passRate.before)} → ${percent(comparison.passRate.after)} (${signed(points, (value) => `${value}`)} points)`);
  out(`newly passing: ${comparison.newlyPassing.join(", ") || "none"}`);
  out(`newly failing: ${comparison.newlyFailing.join(", ") || "none"}`);
  if (comparison.added.length > 0) out(`new cases: ${comparison.added.join(", ")}`);
  if (comparison.removed.length > 0) out(`removed cases: ${comparison.removed.join(", ")}`);
  out(
    `tokens ${thousands(comparison.tokens.before)} → ${thousands(comparison.tokens.after)} (${signed(comparison.tokens.delta, thousands)}) · cost ${dollars(comparison.costUsd.before)} → ${dollars(comparison.costUsd.after)} (${signed(comparison.costUsd.delta, dollars)}), over the cases in both`,
  );
  const rows = comparison.cases.map((item) => [item.id, item.change, item.tokensDelta === null ? "" : signed(item.tokensDelta, thousands), item.costDelta === null ? "" : signed(item.costDelta, dollars)]);
  for (const line of table([["case", "change", "Δ tokens", "Δ cost"], ...rows], new Set([2, 3]))) out(`  ${line}`);
}
