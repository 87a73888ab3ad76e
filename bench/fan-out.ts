import type { StoredEvent } from "../src/core/events.js";
import { createScriptedTroupe, expectCompleted, scriptFor, WIDE_PLAN } from "./scripts.js";
import { type Summary, summarize, timed, withTempDir } from "./support.js";

/** Target of the issue: the execution phase reaches at least this fraction of the ideal speedup. */
export const FAN_OUT_TARGET_FRACTION = 0.8;

export interface FanOutOptions {
  runs: number;
  warmupRuns: number;
  concurrency: number;
  workerDelayMs: number;
}

export interface FanOutReport {
  subtasks: number;
  concurrency: number;
  workerDelayMs: number;
  runs: number;
  /** ceil(subtasks / concurrency) × delay: every batch of workers fully overlapped, nothing else. */
  idealExecMs: number;
  /** subtasks × delay: one worker after another. */
  sequentialExecMs: number;
  /** First `subtask-start` to last `subtask-end` event, as the `onEvent` listener sees them. */
  execMs: Summary;
  /** First worker model call start to last worker model call end, as the scripted model records them (ms clock). */
  workerCallSpanMs: Summary;
  totalMs: Summary;
  /** On the median execution phase. */
  speedup: number;
  idealSpeedup: number;
  fractionOfIdeal: number;
  target: { minFraction: number; met: boolean };
}

const WORKER_ROLES_EXCLUDED = new Set(["planner", "critic", "synthesizer"]);

/**
 * Benchmark 2: sixteen independent subtasks whose worker calls each take `workerDelayMs`,
 * run eight at a time. Only the planner, critic and synthesizer answer at once, so the
 * execution phase shows how well the fan-out overlaps the workers.
 */
export async function measureFanOut(options: FanOutOptions): Promise<FanOutReport> {
  const plan = WIDE_PLAN;
  return withTempDir("troupe-bench-fan-out-", async (directory) => {
    const steps = scriptFor(plan, { runs: options.runs + options.warmupRuns, workerDelayMs: options.workerDelayMs });
    const { troupe, model } = await createScriptedTroupe(directory, steps);
    const execMs: number[] = [];
    const spanMs: number[] = [];
    const totalMs: number[] = [];
    try {
      for (let round = 0; round < options.warmupRuns + options.runs; round += 1) {
        const firstCall = model.calls.length;
        let firstStart = Number.POSITIVE_INFINITY;
        let lastEnd = Number.NEGATIVE_INFINITY;
        const onEvent = (event: StoredEvent): void => {
          if (event.type === "subtask-start") firstStart = Math.min(firstStart, performance.now());
          if (event.type === "subtask-end") lastEnd = Math.max(lastEnd, performance.now());
        };
        const { value: result, ms } = await timed(() => troupe.run({ task: "Collect sixteen figures", concurrency: options.concurrency }, { onEvent }));
        expectCompleted(result, model, "fan-out");
        if (round < options.warmupRuns) continue;
        const workerCalls = model.calls.slice(firstCall).filter((call) => !WORKER_ROLES_EXCLUDED.has(call.role));
        const callStart = Math.min(...workerCalls.map((call) => call.startedAt));
        const callEnd = Math.max(...workerCalls.map((call) => call.endedAt ?? call.startedAt));
        execMs.push(lastEnd - firstStart);
        spanMs.push(callEnd - callStart);
        totalMs.push(ms);
      }
    } finally {
      troupe.close();
    }
    const exec = summarize(execMs);
    const sequentialExecMs = plan.length * options.workerDelayMs;
    const idealSpeedup = Math.min(options.concurrency, plan.length);
    const speedup = sequentialExecMs / exec.median;
    const fractionOfIdeal = speedup / idealSpeedup;
    return {
      subtasks: plan.length,
      concurrency: options.concurrency,
      workerDelayMs: options.workerDelayMs,
      runs: options.runs,
      idealExecMs: Math.ceil(plan.length / options.concurrency) * options.workerDelayMs,
      sequentialExecMs,
      execMs: exec,
      workerCallSpanMs: summarize(spanMs),
      totalMs: summarize(totalMs),
      speedup,
      idealSpeedup,
      fractionOfIdeal,
      target: { minFraction: FAN_OUT_TARGET_FRACTION, met: fractionOfIdeal >= FAN_OUT_TARGET_FRACTION },
    };
  });
}
