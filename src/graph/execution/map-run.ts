import { isBudgetExhausted } from "../../core/budget.js";
import { createHash } from "node:crypto";
import pMap from "p-map";
import { LIMITS } from "../../core/limits.js";
import { type MappedExecutionReport, overallStatusOf } from "../../core/map-report.js";
import type { MapTally, PlannedSubtask } from "../../core/plan.js";
import { joinLabels, type Label } from "../../core/provenance.js";
import type { MapItemRecord, Stash, StashKey } from "../../core/stash.js";
import { preview, stableStringify, truncate } from "../../core/text.js";

/** What one item produced: an output, or an error message; and the label of where it came from. */
export type ItemOutcome = ({ ok: true; output: unknown } | { ok: false; error: string }) & { label?: Label };

export interface MapRunInput {
  stash: Stash;
  key: StashKey;
  subtask: PlannedSubtask;
  items: readonly unknown[];
  /** The review round the run is in (how many verdicts it has had). */
  round: number;
  /** After a verdict sent a partly failed map back: keep the items that succeeded, run the rest. */
  retryFailedOnly: boolean;
  concurrency: number;
  signal?: AbortSignal;
  runItem: (item: unknown, index: number) => Promise<ItemOutcome>;
  /** Told about each item as it finishes (not about items kept from before). */
  onItem?: (record: MapItemRecord) => void;
}

export interface MapRunResult {
  report: MappedExecutionReport;
  tally: MapTally;
  /** Items run now, and items kept from an earlier attempt or from before a crash. */
  ran: number;
  kept: number;
  /** The report's label: every item's, joined (an item kept without one is untrusted, as unlabelled). */
  label: Label;
}

/** Identifies what a subtask does, so kept items are only reused by the same work. */
export function subtaskFingerprint(subtask: PlannedSubtask): string {
  const { id: _id, dependsOn: _dependsOn, ...work } = subtask;
  return createHash("sha256").update(stableStringify(work)).digest("hex").slice(0, 32);
}

/**
 * Whether an item kept in the stash stands for this attempt: same work, same input, and either
 * finished in this round (the run died after it finished) or a success that a retry of the
 * failed items keeps.
 */
function keeps(record: MapItemRecord | undefined, input: unknown, fingerprint: string, round: number, retryFailedOnly: boolean): record is MapItemRecord {
  if (!record || record.fingerprint !== fingerprint || stableStringify(record.input) !== stableStringify(input)) return false;
  if (record.round === round) return true;
  return retryFailedOnly && record.status === "success";
}

/** The tally the graph state keeps: counts and the first few failures, as bounded previews. */
export function tallyOf(report: MappedExecutionReport): MapTally {
  const failures: MapTally["failures"] = [];
  let failed = 0;
  report.results.forEach((result, index) => {
    if (result.status !== "error") return;
    failed += 1;
    if (failures.length < LIMITS.mapFailuresKept) failures.push({ index, input: preview(result.input, 120), error: truncate(result.error ?? "failed", 240) });
  });
  return { overallStatus: report.overallStatus, total: report.results.length, succeeded: report.results.length - failed, failed, failures };
}

/**
 * Runs a mapped subtask: once per item, at most `concurrency` at a time, each item isolated (a
 * failure is that item's result, not the subtask's). Every finished item is written to the
 * stash before the next is counted, so a run that dies here resumes with only the unfinished
 * items; a retry runs only the failed ones. Items come back in the list's order.
 */
export async function runMap(input: MapRunInput): Promise<MapRunResult> {
  const fingerprint = subtaskFingerprint(input.subtask);
  const existing = new Map((await input.stash.items(input.key)).map((record) => [record.index, record]));
  const records: Array<MapItemRecord | undefined> = input.items.map((item, index) => {
    const record = existing.get(index);
    return keeps(record, item, fingerprint, input.round, input.retryFailedOnly) ? record : undefined;
  });
  const pending = records.flatMap((record, index) => (record ? [] : [index]));
  await pMap(
    pending,
    async (index) => {
      const item = input.items[index];
      const started = performance.now();
      let outcome: ItemOutcome;
      try {
        outcome = await input.runItem(item, index);
      } catch (error) {
        // Cancellation and a spent budget stop the whole map; the item did not finish and is not recorded.
        if (input.signal?.aborted || isBudgetExhausted(error)) throw error;
        outcome = { ok: false, error: error instanceof Error ? error.message : String(error) };
      }
      // A cancelled item did not finish: it is not recorded, so a resume runs it.
      if (input.signal?.aborted) throw input.signal.reason;
      const record: MapItemRecord = { index, fingerprint, round: input.round, status: outcome.ok ? "success" : "error", input: item, durationMs: performance.now() - started };
      if (outcome.label) record.label = outcome.label;
      if (outcome.ok) record.output = outcome.output;
      else record.error = outcome.error;
      await input.stash.putItem(input.key, record);
      records[index] = record;
      input.onItem?.(record);
    },
    { concurrency: Math.max(1, input.concurrency), signal: input.signal },
  );
  const results = records.map((record) => {
    const finished = record as MapItemRecord;
    return finished.status === "success"
      ? { status: "success" as const, input: finished.input, output: finished.output ?? null }
      : { status: "error" as const, input: finished.input, error: finished.error ?? "failed" };
  });
  const report: MappedExecutionReport = { overallStatus: overallStatusOf(results), results };
  const label = joinLabels(...records.map((record) => record?.label));
  return { report, tally: tallyOf(report), ran: pending.length, kept: input.items.length - pending.length, label };
}
