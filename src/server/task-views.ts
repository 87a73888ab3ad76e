import type { SubtaskView } from "../core/plan.js";
import { LIMITS } from "../core/limits.js";
import { threadNameOfRun } from "../core/thread-key.js";
import type { PendingInterrupt } from "../runtime/engine.js";
import type { RunRecord } from "../store/index.js";
import type { TaskSummary, TaskView } from "./schemas.js";

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** A run as a task in a listing. */
export function taskSummary(record: RunRecord): TaskSummary {
  return {
    task_id: record.id,
    // The owner's name for the thread (an API key's is kept under its key: core/thread-key.ts).
    thread_id: threadNameOfRun(record),
    task: record.task,
    status: record.status,
    stop_reason: record.stopReason,
    suspended: record.suspended,
    created_at: iso(record.createdAt) as string,
    started_at: iso(record.startedAt),
    updated_at: iso(record.updatedAt) as string,
    finished_at: iso(record.finishedAt),
  };
}

/** What a person reads as the step a run is at when nothing is executing it here. */
function restingStep(record: RunRecord): string {
  switch (record.status) {
    case "queued":
      return record.pendingDecision ? "queued to resume" : "queued";
    case "interrupted":
      if (record.interrupt) return `waiting for ${record.interrupt.kind}`;
      return record.suspended ? `suspended (${record.suspended}); resumes when the server starts` : "interrupted";
    case "running":
      return "running";
    default:
      return record.status;
  }
}

export interface LiveRun {
  step: string | undefined;
  runningSubtasks: string[];
}

/** A completed run's typed answer (its request had an output schema): the answer, which is that JSON. */
function typedOutput(record: RunRecord, typed: boolean): { output?: unknown } {
  if (!typed || record.status !== "completed" || record.answer === null) return {};
  try {
    return { output: JSON.parse(record.answer) as unknown };
  } catch {
    return {};
  }
}

/** The full task: the record, its plan with statuses (from the checkpoint), progress and result. */
export function taskView(record: RunRecord, plan: SubtaskView[], live: LiveRun | undefined, interrupts: PendingInterrupt[] = []): Omit<TaskView, "conversation" | "memories"> {
  const running = new Set(live?.runningSubtasks ?? []);
  const withLive = plan.map((subtask) => (running.has(subtask.id) && subtask.status === "pending" ? { ...subtask, status: "running" as const } : subtask));
  const count = (status: SubtaskView["status"]): number => withLive.filter((subtask) => subtask.status === status).length;
  const request = record.request as { tools?: string[]; maxIterations?: number; approvePlan?: boolean; approveAnswer?: boolean; outputSchema?: object };
  const finished = record.status === "completed" || record.status === "failed" || record.status === "cancelled";
  return {
    ...taskSummary(record),
    progress: {
      subtasks_total: withLive.length,
      subtasks_done: count("done"),
      subtasks_failed: count("failed"),
      subtasks_skipped: count("skipped"),
      subtasks_running: count("running"),
      current_step: (record.status === "running" ? live?.step : undefined) ?? restingStep(record),
    },
    interrupt: record.status === "interrupted" ? record.interrupt : null,
    interrupts: record.status === "interrupted" ? interrupts : [],
    plan: withLive,
    result: finished ? { answer: record.answer, answer_format: record.answer !== null ? record.answerFormat : null, ...typedOutput(record, request.outputSchema !== undefined) } : null,
    error: record.error,
    metrics: record.metrics,
    request: {
      tools: request.tools ?? null,
      max_iterations: request.maxIterations ?? LIMITS.maxIterationsDefault,
      approve_plan: request.approvePlan ?? false,
      approve_answer: request.approveAnswer ?? false,
    },
    forked_from: record.forkedFrom
      ? { task_id: record.forkedFrom.runId, thread_id: record.forkedFrom.threadId, checkpoint_id: record.forkedFrom.checkpointId, subtask_id: record.forkedFrom.subtaskId ?? null }
      : null,
  };
}
