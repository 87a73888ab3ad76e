import { setTimeout as sleep } from "node:timers/promises";
import type { RunControl, StateSnapshot } from "@langchain/langgraph";
import { ConflictError } from "../core/errors.js";
import { DEFAULT_ON_BUSY, type OnBusy } from "../core/on-busy.js";
import type { TroupeGraph } from "../graph/build-graph.js";
import { checkpointOwners } from "../graph/checkpoint-history.js";
import type { RunRecord, Store } from "../store/index.js";
import type { NewRun, RunPatch } from "../store/runs/contract.js";
import type { ThreadLocks } from "../store/locks/contract.js";

/**
 * Busy threads: what a new task does when its thread's run is running or waiting (LangGraph's
 * double-texting strategies, core/on-busy.ts). Its record is written queued, waiting for the
 * thread's latest run (`waitsFor`); the store releases it when that run ends. `interrupt` asks
 * the runs in the way to stop at their next superstep boundary (a drain), `rollback` stops them
 * at once; both record them cancelled, superseded by the new run, and a rollback's run discards
 * them before it starts, so it starts from the thread's state before them.
 */

/** How a drive in this process is asked to stop. */
export interface DriveHandle {
  drain(reason: string): void;
  abort(reason: string): void;
}

/** The drives of this process, by run id (every instance's: the server's and the library's alike). */
export const localDrives = new Map<string, DriveHandle>();

/** The drain reason a superseded run stops with. */
export const SUPERSEDED = "superseded";

/** Statuses of a run still in the way of a new one on its thread. */
const UNFINISHED = new Set(["queued", "running", "interrupted"]);

/** Whether the thread's latest run keeps a new run from starting now. */
export function isBusy(latest: RunRecord | undefined, threads: ThreadLocks): boolean {
  if (!latest) return false;
  return latest.status === "interrupted" || latest.status === "queued" || (latest.status === "running" && threads.mayBeRunning(latest));
}

/**
 * The check a new run's record is written with, in the store's transaction: a busy thread
 * refuses it (`reject`) or makes it wait for the thread's latest run.
 */
export function busyCheck(threadName: string, strategy: OnBusy | undefined, threads: ThreadLocks): (latest: RunRecord | undefined) => void | Pick<NewRun, "waitsFor"> {
  return (latest) => {
    if (!latest || !isBusy(latest, threads)) return;
    if ((strategy ?? DEFAULT_ON_BUSY) === "reject") {
      throw new ConflictError("thread_busy", `thread ${threadName} has a run that is ${latest.status}; resume it, use another thread, or choose what to do (--on-busy enqueue|interrupt|rollback)`, {
        runId: latest.id,
      });
    }
    return { waitsFor: latest.id };
  };
}

/**
 * What a new run waiting on a busy thread does to the runs in its way, once its record is
 * written: nothing (`enqueue`); or each of them queued or waiting for a person is cancelled at
 * once, and each running one asked to stop — at its next superstep boundary (`interrupt`) or at
 * once (`rollback`) — wherever it runs: this process, another on Postgres (a control message), or
 * another on SQLite (the flag on its record, which its drive watches).
 */
export async function makeWay(store: Store, record: RunRecord, strategy: OnBusy): Promise<void> {
  if (strategy === "enqueue" || strategy === "reject" || record.waitsFor === null) return;
  const others = (await store.runs.list({ threadId: record.threadId, limit: 200 })).filter((run) => run.id !== record.id && UNFINISHED.has(run.status));
  const reason = `stopped to make way for run ${record.id} (--on-busy ${strategy})`;
  for (const run of others) {
    if (run.status !== "running") {
      const stopped: RunPatch = { status: "cancelled", stopReason: "cancelled", error: reason, supersededBy: record.id, interrupt: null, suspended: null, pendingDecision: null, pid: null, worker: null, finishedAt: Date.now() };
      if (await store.runs.update(run.id, stopped, { ifStatus: [run.status] })) {
        await store.events.append(run.id, { type: "run-end", status: "cancelled", stopReason: "cancelled", metrics: run.metrics ?? { llmCalls: 0, toolCalls: 0, promptTokens: 0, completionTokens: 0, costUsd: 0, reflectionCount: 0, nodeVisits: 0, durationMs: run.activeMs } });
        continue;
      }
      // It started meanwhile: asked to stop like a running one.
    }
    await store.runs.update(run.id, { supersededBy: record.id });
    const how = `${SUPERSEDED}:${record.id}:${strategy}`;
    const local = localDrives.get(run.id);
    if (local) {
      if (strategy === "interrupt") local.drain(how);
      else local.abort(how);
    } else {
      await store.control?.send({ action: "supersede", runId: run.id, mode: strategy === "interrupt" ? "drain" : "cancel", by: record.id });
    }
  }
}

/** The patch a drive records when it stopped to make way for another run (its drain or abort reason says whose). */
export function supersededPatch(reason: string | undefined): { error: string; supersededBy: string } | undefined {
  const match = /^superseded:([^:]+):(\w+)$/.exec(reason ?? "");
  if (!match) return undefined;
  return { supersededBy: match[1] as string, error: `stopped to make way for run ${match[1]} (--on-busy ${match[2]})` };
}

/**
 * Before a rollback's run starts: the runs it superseded are discarded — their checkpoints (found
 * on the thread's history) and their records, events and stash values — so the thread's state is
 * the one before them.
 */
export async function discardSuperseded(parts: { store: Store; graph: TroupeGraph }, record: RunRecord): Promise<void> {
  const superseded = (await parts.store.runs.list({ threadId: record.threadId, limit: 200 })).filter((run) => run.supersededBy === record.id);
  if (superseded.length === 0) return;
  const gone = new Set(superseded.map((run) => run.id));
  const snapshots: StateSnapshot[] = [];
  for await (const snapshot of parts.graph.getStateHistory({ configurable: { thread_id: record.threadId } })) snapshots.push(snapshot);
  const owners = checkpointOwners(snapshots);
  const ids = snapshots.flatMap((snapshot, index) => {
    const id = snapshot.config.configurable?.checkpoint_id as string | undefined;
    const owner = owners[index];
    return id !== undefined && owner !== null && owner !== undefined && gone.has(owner) ? [id] : [];
  });
  await parts.store.retention.deleteCheckpoints(record.threadId, ids);
  await parts.store.retention.deleteRuns([...gone]);
}

/** Waits until a queued run is released (the run it waits for ended), polling its record; returns it. */
export async function untilReleased(store: Store, runId: string, signal?: AbortSignal): Promise<RunRecord | undefined> {
  for (;;) {
    const record = await store.runs.get(runId);
    if (!record || record.waitsFor === null || record.status !== "queued") return record;
    await sleep(200, undefined, signal ? { signal } : {});
  }
}

/**
 * Makes a drive reachable by runs that need its thread (--on-busy interrupt, rollback): through
 * this process's registry, a control message from another process (Postgres), or — another
 * process on SQLite — the flag on its record, read once a second for every drive of the process
 * in one statement. Returns the undo.
 */
export function watchDrive(store: Store, runId: string, control: RunControl, abort: AbortController): () => void {
  localDrives.set(runId, { drain: (reason) => control.requestDrain(reason), abort: (reason) => abort.abort(reason) });
  listenForSupersede(store);
  if (!store.control) flagWatch(store).set(runId, { control, abort });
  return () => {
    localDrives.delete(runId);
    if (!store.control) unwatchFlag(store, runId);
  };
}

interface FlagWatcher {
  drives: Map<string, { control: RunControl; abort: AbortController }>;
  timer: NodeJS.Timeout;
}

/** The drives of this process whose records are polled for the supersede flag, by store (SQLite). */
const flagWatchers = new Map<Store, FlagWatcher>();

function flagWatch(store: Store): FlagWatcher["drives"] {
  let watcher = flagWatchers.get(store);
  if (!watcher) {
    const drives: FlagWatcher["drives"] = new Map();
    const timer = setInterval(() => void readFlags(store, drives), 1_000);
    timer.unref();
    watcher = { drives, timer };
    flagWatchers.set(store, watcher);
  }
  return watcher.drives;
}

function unwatchFlag(store: Store, runId: string): void {
  const watcher = flagWatchers.get(store);
  if (!watcher) return;
  watcher.drives.delete(runId);
  if (watcher.drives.size > 0) return;
  clearInterval(watcher.timer);
  flagWatchers.delete(store);
}

/** One read for every drive watched: only a flagged run's records are read whole (which run asked, and how). */
async function readFlags(store: Store, drives: FlagWatcher["drives"]): Promise<void> {
  let flagged: string[];
  try {
    flagged = await store.runs.supersededAmong([...drives.keys()]);
  } catch {
    return; // the next second reads again
  }
  for (const runId of flagged) {
    const drive = drives.get(runId);
    if (!drive || drive.control.drainRequested || drive.abort.signal.aborted) continue;
    const record = await store.runs.get(runId).catch(() => undefined);
    if (!record?.supersededBy) continue;
    const strategy = (record.request as { onBusy?: string } | undefined)?.onBusy;
    const by = await store.runs.get(record.supersededBy).catch(() => undefined);
    const how = `${SUPERSEDED}:${record.supersededBy}:${(by?.request as { onBusy?: string } | undefined)?.onBusy ?? strategy ?? "interrupt"}`;
    if (how.endsWith(":rollback")) drive.abort.abort(how);
    else drive.control.requestDrain(how);
  }
}

/** The stores whose control channel this process listens on for supersede messages (once each). */
const listening = new WeakSet<Store>();

function listenForSupersede(store: Store): void {
  if (!store.control || listening.has(store)) return;
  listening.add(store);
  store.control.subscribe((message) => {
    if (message.action !== "supersede" || !message.runId || !message.by) return;
    const how = `${SUPERSEDED}:${message.by}:${message.mode === "cancel" ? "rollback" : "interrupt"}`;
    const drive = localDrives.get(message.runId);
    if (message.mode === "cancel") drive?.abort(how);
    else drive?.drain(how);
  });
}
