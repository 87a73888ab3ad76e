import type { StateSnapshot } from "@langchain/langgraph";

/**
 * The interrupts a thread is waiting on. A task that already finished in the current superstep
 * keeps its old interrupt in the snapshot (its answer is among the pending writes), so only
 * tasks without a result count.
 */
export function pendingInterrupts(snapshot: StateSnapshot): Array<{ id?: string; value?: unknown }> {
  return snapshot.tasks.filter((task) => task.result === undefined || task.result === null).flatMap((task) => task.interrupts);
}
