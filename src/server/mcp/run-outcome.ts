import { z } from "zod";
import type { StoredEvent } from "../../core/events.js";
import { RUN_STATUSES, STOP_REASONS } from "../../core/run.js";
import { truncate } from "../../core/text.js";
import { threadNameOfRun } from "../../core/thread-key.js";
import type { RunRecord } from "../../store/index.js";
import type { Principal } from "../config.js";
import { describeInterrupt } from "../interrupt-prompt.js";
import { followRun, type RunFeed } from "../run-follow.js";
import { type OutputSchema, structuredAnswerOf } from "../structured-answer.js";

/** What MCP's run tools answer with: the run, where it stands, its answer or its question. */
export const RunOutcome = z.object({
  run_id: z.string(),
  thread_id: z.string(),
  status: z.enum(RUN_STATUSES),
  stop_reason: z.enum(STOP_REASONS).nullable(),
  answer: z.string().nullable(),
  error: z.string().nullable(),
  interrupt: z
    .object({ id: z.string().nullable(), kind: z.string(), question: z.string(), payload: z.record(z.string(), z.unknown()) })
    .nullable()
    .describe("what the run waits for: answer it with resume_run"),
  structured_answer: z.unknown().optional().describe("the answer as a value of output_schema, when one was given and the answer fits it"),
  structured_error: z.string().optional().describe("why the answer is not a value of output_schema"),
  metrics: z.record(z.string(), z.number()).nullable(),
  note: z.string().optional(),
});
export type RunOutcome = z.infer<typeof RunOutcome>;

/** A run as an outcome; the interrupt's id and question come from the thread's pending interrupts. */
export async function outcomeOf(feed: RunFeed, record: RunRecord, output?: OutputSchema): Promise<RunOutcome> {
  let interrupt: RunOutcome["interrupt"] = null;
  if (record.status === "interrupted" && record.interrupt) {
    const pending = (await feed.tasks.troupe.pendingInterrupts(record.threadId))[0];
    const info = pending ?? record.interrupt;
    interrupt = { id: pending?.id ?? null, kind: info.kind, question: describeInterrupt(info), payload: info.payload };
  }
  const outcome: RunOutcome = {
    run_id: record.id,
    thread_id: threadNameOfRun(record),
    status: record.status,
    stop_reason: record.stopReason,
    answer: record.answer,
    error: record.error,
    interrupt,
    metrics: record.metrics ? { ...record.metrics } : null,
  };
  if (record.status === "interrupted" && !record.interrupt && record.suspended) outcome.note = `stopped by a ${record.suspended}; it continues when a troupe server starts`;
  if (record.status === "queued" || record.status === "running") outcome.note = "still going: get_run with this run_id (and wait_seconds) picks it up again";
  if (output && record.status === "completed") {
    const structured = structuredAnswerOf(record.answer, output);
    if ("value" in structured) outcome.structured_answer = structured.value;
    else outcome.structured_error = structured.error;
  }
  return outcome;
}

/** A line for a person watching the run, for the events worth telling. */
export function progressLine(event: StoredEvent): string | undefined {
  switch (event.type) {
    case "run-start":
      return event.resumed ? "run resumed" : "run started";
    case "plan-ready":
      return `plan ready: ${event.subtasks.length} subtask${event.subtasks.length === 1 ? "" : "s"}`;
    case "subtask-start":
      return `${event.subtaskId} started (${event.agent}): ${truncate(event.label, 120)}`;
    case "subtask-end":
      return `${event.subtaskId} ${event.status}${event.summary ? `: ${truncate(event.summary, 160)}` : ""}${event.error ? `: ${truncate(event.error, 160)}` : ""}`;
    case "subtask-skip":
      return `${event.subtaskId} skipped: ${truncate(event.reason, 160)}`;
    case "critic-verdict":
      return `review: ${event.verdict.passed ? "passed" : "not passed"} (confidence ${event.verdict.confidence.toFixed(2)})`;
    case "approval-request":
      return `waiting for a person: ${event.interrupt.kind}`;
    case "run-end":
      return `run ${event.status}${event.stopReason ? ` (${event.stopReason})` : ""}`;
    default:
      return undefined;
  }
}

/**
 * Follows a run until it rests or `waitMs` passes, handing each event to `onEvent`.
 * Returns its record; a run still going after the wait is returned as it stands.
 */
export async function waitForRun(
  feed: RunFeed,
  principal: Principal,
  runId: string,
  after: number,
  waitMs: number,
  onEvent: (event: StoredEvent) => Promise<void> | void,
  signal: AbortSignal,
): Promise<RunRecord> {
  const deadline = AbortSignal.timeout(Math.max(1, waitMs));
  const stop = AbortSignal.any([signal, deadline]);
  const record = await followRun(feed, principal, runId, after, onEvent, stop);
  return record ?? (await feed.tasks.record(principal, runId));
}
