import { z } from "zod";

/**
 * What a new task on a thread does when the thread's run is running or waiting for a person —
 * LangGraph's four double-texting strategies: `reject` refuses it; `enqueue` (the default) runs
 * it once the current run has stopped; `interrupt` stops the current run at its next superstep
 * boundary and starts the new one on the thread's state; `rollback` discards the current run
 * and starts the new one from the thread's state before it.
 */
export const ON_BUSY = ["reject", "enqueue", "interrupt", "rollback"] as const;
export const OnBusy = z.enum(ON_BUSY);
export type OnBusy = z.infer<typeof OnBusy>;

export const DEFAULT_ON_BUSY: OnBusy = "enqueue";
