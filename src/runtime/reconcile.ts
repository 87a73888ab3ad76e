import type { StoredEvent } from "../core/events.js";
import { type InterruptInfo, runStatusOf } from "../core/run.js";
import type { State } from "../graph/state.js";
import { workDone } from "../graph/trace.js";
import type { Troupe } from "./engine.js";
import { hasStepsLeft, pendingInterrupts } from "./interrupts.js";
import { finishedPatch } from "../store/runs/contract.js";
import { resultFromState } from "./result.js";

/**
 * Brings a run's record in line with its checkpoint when the process that drove it died between
 * the two: the run had reached an interrupt, or finished, but its record still says it runs.
 * Returns the events it recorded (approval-request, run-end), or none when the checkpoint does
 * not settle the run (it has steps left: resume it instead).
 */
export async function reconcileRun(troupe: Troupe, runId: string): Promise<StoredEvent[]> {
  const record = await troupe.store.runs.get(runId);
  if (!record) return [];
  const snapshot = await troupe.graph.getState({ configurable: { thread_id: record.threadId } });
  const state = snapshot.values as State;
  if (state.runId !== record.id) return [];
  const interrupt = pendingInterrupts(snapshot)[0]?.value as InterruptInfo | undefined;
  const result = resultFromState(record, state, record.activeMs);
  const events: StoredEvent[] = [];
  if (interrupt && !state.finished) {
    await troupe.store.runs.update(record.id, { status: "interrupted", stopReason: null, interrupt, pid: null, worker: null, suspended: null, pendingDecision: null, metrics: result.metrics });
    events.push(await troupe.store.events.append(record.id, { type: "approval-request", interrupt }));
    events.push(await troupe.store.events.append(record.id, { type: "run-end", status: "interrupted", stopReason: null, metrics: result.metrics }));
    return events;
  }
  if (!state.finished || !state.stopReason || hasStepsLeft(snapshot)) return [];
  const status = runStatusOf(state.stopReason, workDone(state));
  await troupe.store.runs.update(record.id, finishedPatch({ status, stopReason: state.stopReason, answer: result.answer, answerFormat: result.answer !== null ? (result.answerFormat ?? null) : null, error: state.failure ?? null, metrics: result.metrics }));
  events.push(await troupe.store.events.append(record.id, { type: "run-end", status, stopReason: state.stopReason, metrics: result.metrics }));
  return events;
}
