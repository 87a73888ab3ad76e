import type { StateSnapshot } from "@langchain/langgraph";
import type { SubtaskView } from "../../core/plan.js";
import type { InterruptInfo } from "../../core/run.js";
import type { State } from "../../graph/state.js";
import type { RunRecord } from "../../store/index.js";
import {
  emptyValues,
  humanMessage,
  aiMessage,
  interruptOf,
  type PlanEntry,
  planEntry,
  type ProtocolValues,
  type ResultEntry,
  TURNS_SHOWN,
  turnMessages,
} from "./views.js";

/**
 * A thread's state as the protocol shows it, from one of its LangGraph checkpoints: `values`
 * (the conversation up to the checkpoint's run, that run's task, plan, results and answer), the
 * nodes that run next, the tasks with the interrupts they wait on, and the checkpoint's ids —
 * named as the owner names the thread, never by the key it is kept under.
 */

type Interrupt = ReturnType<typeof interruptOf>;

export interface CheckpointView {
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string | null;
  checkpoint_map: null;
}

export interface ThreadStateView {
  values: ProtocolValues | Record<string, never>;
  next: string[];
  tasks: Array<{ id: string; name: string; error: string | null; interrupts: Interrupt[]; checkpoint: null; state: null }>;
  checkpoint: CheckpointView;
  metadata: Record<string, unknown>;
  created_at: string | null;
  parent_checkpoint: CheckpointView | null;
  interrupts: Interrupt[];
}

const checkpointView = (threadName: string, id: string | null): CheckpointView => ({ thread_id: threadName, checkpoint_ns: "", checkpoint_id: id, checkpoint_map: null });

/** The state of a thread with no checkpoint yet (made, not run). */
export function emptyState(threadName: string): ThreadStateView {
  return { values: {}, next: [], tasks: [], checkpoint: checkpointView(threadName, null), metadata: {}, created_at: null, parent_checkpoint: null, interrupts: [] };
}

/** Whether a snapshot is a checkpoint (LangGraph answers an empty one for a thread or checkpoint it does not have). */
export function isCheckpoint(snapshot: StateSnapshot): boolean {
  return typeof snapshot.config.configurable?.checkpoint_id === "string" && snapshot.createdAt !== undefined;
}

/** Plan and results from subtasks with their statuses (a live run's, from its events). */
export function planFromViews(views: readonly SubtaskView[]): { plan: PlanEntry[]; results: Record<string, ResultEntry> } {
  const results: Record<string, ResultEntry> = {};
  for (const view of views) {
    if (view.status === "pending") continue;
    results[view.id] = { status: view.status, ...(view.summary !== undefined ? { summary: view.summary } : {}), ...(view.error !== undefined ? { error: view.error } : {}) };
  }
  return { plan: views.map((view) => planEntry(view, view.status)), results };
}

function planFromState(state: Partial<State>): { plan: PlanEntry[]; results: Record<string, ResultEntry> } {
  const results: Record<string, ResultEntry> = {};
  for (const [id, result] of Object.entries(state.results ?? {})) {
    results[id] = { status: result.status, ...(result.summary !== undefined ? { summary: result.summary } : {}), ...(result.error !== undefined ? { error: result.error } : {}) };
  }
  return { plan: (state.plan ?? []).map((subtask) => planEntry(subtask, results[subtask.id]?.status ?? "pending")), results };
}

export interface StateContext {
  threadName: string;
  /** The thread's runs, oldest first (the caller's own). */
  runs: readonly RunRecord[];
  /** Whether this is the thread's latest checkpoint (its head): what it waits on is then the latest run's. */
  head: boolean;
  /** For the head of a run that is running: its plan with the subtasks running now (from its events). */
  live?: readonly SubtaskView[];
}

/** Whether the thread's latest run waits for a person now (not stopped by a shutdown, not answered). */
function waiting(run: RunRecord | undefined): boolean {
  return run !== undefined && run.status === "interrupted" && run.suspended === null && run.interrupt !== null;
}

/** A checkpoint as the protocol's thread state. */
export function stateView(snapshot: StateSnapshot, context: StateContext): ThreadStateView {
  if (!isCheckpoint(snapshot)) return emptyState(context.threadName);
  const state = snapshot.values as Partial<State>;
  const runId = state.runId || null;
  const index = runId ? context.runs.findIndex((run) => run.id === runId) : -1;
  const record = index >= 0 ? context.runs[index] : undefined;
  const latest = context.runs.at(-1);
  const earlier = index >= 0 ? context.runs.slice(Math.max(0, index - (TURNS_SHOWN - 1)), index) : [];
  const current = runId && state.task ? [humanMessage(runId, state.task), ...(state.answer ? [aiMessage(runId, state.answer, context.head ? record?.status : undefined)] : [])] : [];
  const { plan, results } = context.live ? planFromViews(context.live) : planFromState(state);
  const values: ProtocolValues = {
    ...emptyValues(),
    messages: [...turnMessages(earlier.map((run) => ({ runId: run.id, task: run.task, answer: run.answer, status: run.status }))), ...current],
    run_id: runId,
    task: state.task || null,
    plan,
    results,
    answer: state.answer ?? null,
    status: context.head && record ? record.status : null,
    stop_reason: state.stopReason ?? null,
  };
  // The head shows a wait only while the latest run still waits on it (a cancelled or answered run's checkpoint keeps its interrupts).
  const waits = !context.head || (waiting(latest) && latest?.id === runId);
  const goesOn = !context.head || (latest !== undefined && latest.id === runId && (latest.status === "running" || latest.status === "queued" || waiting(latest) || latest.suspended !== null));
  const tasks = snapshot.tasks.map((task) => ({
    id: task.id,
    name: task.name,
    error: task.error === undefined || task.error === null ? null : String((task.error as Error).message ?? task.error),
    interrupts: waits ? (task.interrupts ?? []).flatMap((pending) => (pending.id && (pending.value as InterruptInfo | undefined)?.kind ? [interruptOf(pending.id, pending.value as InterruptInfo)] : [])) : [],
    checkpoint: null,
    state: null,
  }));
  const parentId = snapshot.parentConfig?.configurable?.checkpoint_id;
  return {
    values,
    next: goesOn ? [...snapshot.next] : [],
    tasks,
    checkpoint: checkpointView(context.threadName, String(snapshot.config.configurable?.checkpoint_id)),
    metadata: { source: snapshot.metadata?.source ?? null, step: snapshot.metadata?.step ?? null, parents: {}, run_id: runId, graph_id: "troupe" },
    created_at: snapshot.createdAt ?? null,
    parent_checkpoint: typeof parentId === "string" ? checkpointView(context.threadName, parentId) : null,
    interrupts: tasks.flatMap((task) => task.interrupts),
  };
}
