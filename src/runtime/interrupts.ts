import type { StateSnapshot } from "@langchain/langgraph";

/**
 * The interrupts a thread is waiting on. A task that already finished in the current superstep
 * keeps its old interrupt in the snapshot (its answer is among the pending writes), so only
 * tasks without a result count.
 */
export function pendingInterrupts(snapshot: StateSnapshot): Array<{ id?: string; value?: unknown }> {
  return snapshot.tasks.filter((task) => task.result === undefined || task.result === null).flatMap((task) => task.interrupts);
}

/**
 * Whether the thread's graph has steps left to run. `snapshot.next` leaves out the tasks whose
 * writes are saved: a process killed after a superstep's tasks finished and before its checkpoint
 * was written leaves `next` empty, yet the graph has not ended (its tasks are still listed, and a
 * resume applies their writes and goes on).
 */
export function hasStepsLeft(snapshot: StateSnapshot): boolean {
  return snapshot.next.length > 0 || snapshot.tasks.length > 0;
}
