import { NotFoundError } from "../core/errors.js";
import { emptyExecutionGraph, type ExecutionGraph, renderExecutionGraph } from "../core/execution-graph.js";
import { liveSubtasks } from "../core/live-results.js";
import type { InterruptInfo, RunResult } from "../core/run.js";
import type { TroupeGraph } from "../graph/build-graph.js";
import type { State } from "../graph/state.js";
import type { RunRecord, Store } from "../store/index.js";
import { pendingInterrupts } from "./interrupts.js";
import { liveState, resultFromState } from "./result.js";

/** What `runs show` reports of a run. */
export interface RunView {
  runId: string;
  threadId: string;
  task: string;
  status: RunRecord["status"];
  stopReason: RunRecord["stopReason"];
  answer: string | null;
  plan: RunResult["plan"];
  metrics: RunResult["metrics"] | null;
  trace: RunResult["trace"] | undefined;
  /** The execution graph: subtasks with their status, summary and duration, and the data flow between them. */
  graph: ExecutionGraph;
  interrupt?: InterruptInfo;
  error?: string;
  createdAt: number;
  finishedAt: number | null;
  /** Its webhook's deliveries: each event, its status, attempts and the last answer. */
  webhooks: WebhookDeliveryView[];
  /** Where a fork started (runs fork). */
  forkedFrom?: RunRecord["forkedFrom"];
  /** The run it waits for on its thread (queued behind it), or the one it made way for. */
  waitsFor?: string;
  supersededBy?: string;
}

/** A webhook delivery as runs show lists it. */
export interface WebhookDeliveryView {
  id: string;
  event: string;
  url: string;
  status: string;
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  nextAttemptAt: number | null;
  deliveredAt: number | null;
}

/** An interrupt a thread waits on, with the id a decision can name it by. */
export interface PendingInterrupt extends InterruptInfo {
  id: string;
}

/** The interrupts a thread's run waits on, each with its id (several subtasks may wait for approval at once). */
export async function threadInterrupts(graph: TroupeGraph, threadId: string): Promise<PendingInterrupt[]> {
  const snapshot = await graph.getState({ configurable: { thread_id: threadId } });
  return pendingInterrupts(snapshot).flatMap((pending) => {
    const info = pending.value as InterruptInfo | undefined;
    return pending.id && info?.kind ? [{ id: pending.id, kind: info.kind, payload: info.payload ?? {} }] : [];
  });
}

/**
 * A run as it stands. The plan and trace come from the thread's checkpoint while the run is
 * the thread's latest; an older run on a reused thread shows what its record kept.
 */
export async function showRun(store: Store, graph: TroupeGraph, runId: string): Promise<RunView> {
  const record = await store.runs.get(runId);
  if (!record) throw new NotFoundError("unknown_run", `no run with id ${runId}`, { runId });
  const snapshot = await graph.getState({ configurable: { thread_id: record.threadId } });
  const sameRun = (snapshot.values as State).runId === record.id;
  // Started and not ended: running, or waiting inside a step for a person to approve a tool call.
  const live = record.status === "running" || (record.status === "interrupted" && record.interrupt?.kind === "tool-approval") || record.suspended !== null;
  const events = sameRun && live ? await store.events.list(record.id, 0, 100_000) : [];
  // While the node running the subtasks goes on, its plan and those it has finished are in its events, not yet in the state.
  const progress = liveSubtasks(events);
  const state = sameRun && live ? liveState(snapshot.values as State, events) : (snapshot.values as State);
  const result = sameRun ? resultFromState(record, state, record.activeMs) : undefined;
  const executionGraph = sameRun ? renderExecutionGraph(state.plan, state.results, { running: Object.keys(progress.runningSince), runningSince: progress.runningSince }) : emptyExecutionGraph();
  const view: RunView = {
    runId: record.id,
    threadId: record.threadId,
    task: record.task,
    status: record.status,
    stopReason: record.stopReason,
    answer: record.answer ?? result?.answer ?? null,
    plan: result?.plan ?? [],
    metrics: result?.metrics ?? record.metrics,
    trace: result?.trace,
    graph: executionGraph,
    createdAt: record.createdAt,
    finishedAt: record.finishedAt,
    webhooks: (await store.webhooks.forRun(record.id)).map((delivery) => ({
      id: delivery.id,
      event: delivery.event,
      url: delivery.url,
      status: delivery.status,
      attempts: delivery.attempts,
      lastStatus: delivery.lastStatus,
      lastError: delivery.lastError,
      nextAttemptAt: delivery.status === "pending" ? delivery.nextAttemptAt : null,
      deliveredAt: delivery.deliveredAt,
    })),
  };
  if (record.forkedFrom) view.forkedFrom = record.forkedFrom;
  if (record.waitsFor) view.waitsFor = record.waitsFor;
  if (record.supersededBy) view.supersededBy = record.supersededBy;
  if (record.interrupt) view.interrupt = record.interrupt;
  if (record.error) view.error = record.error;
  return view;
}

/** Subtasks of a run that have started and not ended, by its events. */
export async function runningSubtasks(store: Store, runId: string): Promise<string[]> {
  return Object.keys(liveSubtasks(await store.events.list(runId, 0, 100_000)).runningSince);
}
