import { rm } from "node:fs/promises";
import path from "node:path";
import { ConflictError, NotFoundError } from "../core/errors.js";
import type { GcReport } from "../core/retention.js";
import type { RunStatus } from "../core/run.js";
import { threadNameOf } from "../core/thread-key.js";
import type { TroupeGraph } from "../graph/build-graph.js";
import type { StateSnapshot } from "@langchain/langgraph";
import { checkpointOwners } from "../graph/checkpoint-history.js";
import type { State } from "../graph/state.js";
import type { Collectable, Store } from "../store/index.js";

/** What retention works with. */
export interface RetentionParts {
  store: Store;
  graph: TroupeGraph;
}

export interface GcOptions {
  /** Collect finished runs last changed before this (ms since the epoch). */
  cutoff: number;
  /** Statuses kept whatever their age. */
  keep?: RunStatus[];
  /** Count what would go, removing nothing. */
  dryRun?: boolean;
  /** Runs per batch (each its own short transaction). */
  batchSize?: number;
  /** Audit rows before this go too (absent: the audit trail is kept). */
  auditCutoff?: number;
  signal?: AbortSignal;
}

function emptyReport(options: GcOptions, bytes: number): GcReport {
  return {
    dryRun: options.dryRun === true,
    cutoff: options.cutoff,
    kept: options.keep ?? [],
    runs: 0,
    byStatus: {},
    threads: { deleted: 0, pruned: 0 },
    events: 0,
    stashValues: 0,
    evals: 0,
    auditRows: 0,
    webhookDeliveries: 0,
    expiredMemories: 0,
    bytesBefore: bytes,
    bytesAfter: bytes,
    durationMs: 0,
  };
}

/**
 * Removes the checkpoints of threads whose runs were deleted: every checkpoint of the threads left
 * with no run, in one statement that checks there is still none (a drive writes a checkpoint only
 * for a run already recorded), else the deleted runs' own checkpoints, found on LangGraph's
 * history of the thread. Returns [deleted, pruned] threads.
 */
async function settleThreads(parts: RetentionParts, deleted: Collectable[]): Promise<[number, number]> {
  const gone = new Set(deleted.map((run) => run.id));
  const threads = [...new Set(deleted.map((run) => run.threadId))];
  const empty = new Set(await parts.store.retention.deleteThreadCheckpoints(threads));
  let pruned = 0;
  for (const threadId of threads) {
    if (empty.has(threadId)) continue;
    const snapshots: StateSnapshot[] = [];
    for await (const snapshot of parts.graph.getStateHistory({ configurable: { thread_id: threadId } })) snapshots.push(snapshot);
    const owners = checkpointOwners(snapshots);
    const ids = snapshots.flatMap((snapshot, index) => {
      const id = snapshot.config.configurable?.checkpoint_id as string | undefined;
      const owner = owners[index];
      return id !== undefined && (owner === null || owner === undefined || gone.has(owner)) ? [id] : [];
    });
    if ((await parts.store.retention.deleteCheckpoints(threadId, ids)) > 0) pruned += 1;
  }
  return [empty.size, pruned];
}

/** Deletes runs (finished ones only: the store checks again) and their checkpoints; adds to the report. */
async function deleteBatch(parts: RetentionParts, ids: string[], report: GcReport): Promise<Collectable[]> {
  const deleted = await parts.store.retention.deleteRuns(ids);
  report.runs += deleted.runs.length;
  report.events += deleted.events;
  report.stashValues += deleted.stashValues;
  report.webhookDeliveries += deleted.webhookDeliveries;
  for (const run of deleted.runs) report.byStatus[run.status] = (report.byStatus[run.status] ?? 0) + 1;
  const [emptied, pruned] = await settleThreads(parts, deleted.runs);
  report.threads.deleted += emptied;
  report.threads.pruned += pruned;
  return deleted.runs;
}

/** Counts what deleting these runs would remove (a dry run). */
async function countBatch(parts: RetentionParts, runs: Collectable[], report: GcReport): Promise<void> {
  const ids = runs.map((run) => run.id);
  const dependents = await parts.store.retention.dependents(ids);
  report.runs += runs.length;
  report.events += dependents.events;
  report.stashValues += dependents.stashValues;
  report.webhookDeliveries += dependents.webhookDeliveries;
  for (const run of runs) report.byStatus[run.status] = (report.byStatus[run.status] ?? 0) + 1;
  const byThread = new Map<string, number>();
  for (const run of runs) byThread.set(run.threadId, (byThread.get(run.threadId) ?? 0) + 1);
  for (const [threadId, count] of byThread) {
    if ((await parts.store.runs.count({ threadId })) <= count) report.threads.deleted += 1;
    else report.threads.pruned += 1;
  }
}

/**
 * `troupe gc`, `retention` on the server's schedule: finished runs last changed before the cutoff
 * (not `keep`'s statuses) go with their events, stash values, webhook deliveries and checkpoints;
 * evals finished before it with their case runs and workspaces; audit rows only with their own
 * cutoff; expired memory facts. Runs that are queued, running or waiting are never collected.
 * Batches are short transactions; the space comes back at the end (see `RetentionStore.reclaim`).
 */
export async function collectGarbage(parts: RetentionParts, options: GcOptions): Promise<GcReport> {
  const started = performance.now();
  const retention = parts.store.retention;
  const report = emptyReport(options, await retention.size());
  const batchSize = options.batchSize ?? 500;
  const keep = options.keep ?? [];
  // Evals first: their cases are runs too, collected with them and only with them.
  for (;;) {
    if (options.signal?.aborted) break;
    const evals = await retention.evalCandidates(options.cutoff, options.dryRun ? 10_000 : batchSize);
    if (evals.length === 0) break;
    const cases = await retention.runsOfEvals(evals);
    if (options.dryRun) {
      await countBatch(parts, await retention.collectable(cases), report);
      report.evals += evals.length;
      break;
    }
    for (let start = 0; start < cases.length; start += batchSize) await deleteBatch(parts, cases.slice(start, start + batchSize), report);
    report.evals += await retention.deleteEvals(evals);
    await Promise.all(evals.map((id) => rm(path.join(parts.store.directory, "evals", id), { recursive: true, force: true }).catch(() => {})));
    if (evals.length < batchSize) break;
  }
  let after: { updatedAt: number; id: string } | undefined;
  for (;;) {
    if (options.signal?.aborted) break;
    const runs = await retention.candidates({ cutoff: options.cutoff, keep, limit: batchSize, ...(after ? { after } : {}) });
    if (runs.length === 0) break;
    const last = runs.at(-1) as Collectable;
    if (options.dryRun) {
      await countBatch(parts, runs, report);
      after = { updatedAt: last.updatedAt, id: last.id };
    } else {
      await deleteBatch(parts, runs.map((run) => run.id), report);
      // Deleted rows leave the listing; a run that changed meanwhile (and stayed) is passed over.
      after = { updatedAt: last.updatedAt, id: last.id };
    }
    if (runs.length < batchSize) break;
  }
  if (options.auditCutoff !== undefined) report.auditRows = await retention.auditBefore(options.auditCutoff, !options.dryRun, batchSize);
  report.expiredMemories = await retention.expiredMemories(Date.now(), !options.dryRun);
  if (!options.dryRun) await retention.reclaim({ runs: report.runs });
  report.bytesAfter = options.dryRun ? report.bytesBefore : await retention.size();
  report.durationMs = Math.round(performance.now() - started);
  if (!options.dryRun) await retention.setState("gc.last", { ...report, at: Date.now() });
  return report;
}

/**
 * `troupe runs delete` and `DELETE /tasks/:id`: one finished run and everything keyed by it, its
 * checkpoints with it (the thread's, when it was the thread's only run). A run that is queued,
 * running or waiting is refused: cancel it first. `owner`, when given, must own it.
 */
export async function deleteRun(parts: RetentionParts, runId: string, options: { owner?: string } = {}): Promise<GcReport> {
  const record = await parts.store.runs.get(runId);
  if (!record || (options.owner !== undefined && record.owner !== options.owner)) throw new NotFoundError(options.owner !== undefined ? "task_not_found" : "unknown_run", `no ${options.owner !== undefined ? "task" : "run"} with id ${runId}`, { runId });
  if ((await parts.store.retention.collectable([runId])).length === 0) {
    throw new ConflictError("run_active", `run ${runId} is ${record.status}: a run that is queued, running or waiting is not deleted; cancel it first`, { runId, status: record.status });
  }
  const started = performance.now();
  const report = emptyReport({ cutoff: Date.now() }, await parts.store.retention.size());
  const deleted = await deleteBatch(parts, [runId], report);
  if (deleted.length === 0) throw new ConflictError("run_active", `run ${runId} changed while it was being deleted; it was kept`, { runId });
  await parts.store.retention.reclaim({ runs: report.runs });
  report.bytesAfter = await parts.store.retention.size();
  report.durationMs = Math.round(performance.now() - started);
  return report;
}

/** Deletes a thread: every run on it (all must have stopped) and its checkpoints. */
export async function deleteThread(parts: RetentionParts, threadId: string, options: { owner?: string } = {}): Promise<GcReport> {
  const runs = await parts.store.runs.list({ threadId, limit: 10_000 });
  const history = (await parts.graph.getState({ configurable: { thread_id: threadId } })).values as Partial<State>;
  // Messages name the thread as its owner does (an API key's thread is kept under its key: core/thread-key.ts).
  const name = threadNameOf(options.owner, threadId);
  if (runs.length === 0 && !history.runId) throw new NotFoundError("thread_not_found", `there is no thread ${name}${options.owner !== undefined ? " of yours" : ""}`, { threadId: name });
  if (options.owner !== undefined && runs.some((run) => run.owner !== options.owner)) throw new NotFoundError("thread_not_found", `there is no thread ${name} of yours`, { threadId: name });
  const active = runs.filter((run) => run.status === "queued" || run.status === "running" || run.status === "interrupted");
  if (active.length > 0) {
    throw new ConflictError("thread_busy", `thread ${name} has a run that is ${active[0]?.status} (${active[0]?.id}); cancel it first`, { threadId: name, runId: active[0]?.id });
  }
  const started = performance.now();
  const report = emptyReport({ cutoff: Date.now() }, await parts.store.retention.size());
  await deleteBatch(parts, runs.map((run) => run.id), report);
  if (runs.length === 0) report.threads.deleted += (await parts.store.retention.deleteThreadCheckpoints([threadId])).length;
  await parts.store.retention.reclaim({ runs: report.runs });
  report.bytesAfter = await parts.store.retention.size();
  report.durationMs = Math.round(performance.now() - started);
  return report;
}
