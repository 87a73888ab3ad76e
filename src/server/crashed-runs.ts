import type { Logger } from "pino";
import type { StoredEvent } from "../core/events.js";
import type { Troupe } from "../runtime/engine.js";
import type { RunRecord } from "../store/index.js";
import { EMPTY_METRICS } from "./run-executor.js";

/** Fails a run whose process kept dying while it ran (a poison task), naming the crashes. */
export async function failCrashedRun(troupe: Troupe, record: RunRecord, crashes: number, maxCrashes: number, log: Logger, publish: (event: StoredEvent) => void): Promise<void> {
  const error =
    `the process running this task died ${crashes} times in a row while the task ran (killed, or out of memory), ` +
    `so it is not taken up again (limit ${maxCrashes}: --max-crashes, TROUPE_MAX_CRASHES); its audit trail shows the tool calls left unfinished`;
  await troupe.store.runs.update(record.id, { status: "failed", stopReason: "failed", error, pid: null, host: null, worker: null, suspended: null, pendingDecision: null, crashes, finishedAt: Date.now() });
  publish(await troupe.store.events.append(record.id, { type: "run-end", status: "failed", stopReason: "failed", metrics: record.metrics ?? { ...EMPTY_METRICS, durationMs: record.activeMs } }));
  const unfinished = (await troupe.store.audit.unfinished({ runId: record.id })).map((row) => ({ id: row.id, tool: row.tool, subtaskId: row.subtaskId }));
  log.error({ taskId: record.id, threadId: record.threadId, crashes, unfinishedToolCalls: unfinished }, "task failed: its process kept dying while it ran");
}
