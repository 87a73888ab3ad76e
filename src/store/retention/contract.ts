import type { RunStatus } from "../../core/run.js";

/** A run gc may collect, as much as it needs to know. */
export interface Collectable {
  id: string;
  threadId: string;
  status: RunStatus;
  evalId: string | null;
  updatedAt: number;
}

/** What deleting a batch of runs removed. */
export interface Deleted {
  /** The runs deleted (a run whose status changed meanwhile is not), with what the Agent Protocol kept of them. */
  runs: Collectable[];
  events: number;
  stashValues: number;
  webhookDeliveries: number;
}

/** What a dry run would remove besides the runs. */
export interface Dependents {
  events: number;
  stashValues: number;
  webhookDeliveries: number;
}

/** Statuses a collected run may have: it stopped for good (queued, running and waiting runs are never collected). */
export const COLLECTABLE: readonly RunStatus[] = ["completed", "failed", "cancelled"];

/**
 * The data side of retention (`troupe gc`, `troupe runs delete`, the server's schedule): which
 * finished runs are old enough, deleting a batch of them with everything keyed by them (events,
 * stash values and map items, webhook deliveries, reflections) in one short transaction — the
 * status checked again in it, so a run resumed meanwhile stays —, checkpoints of threads, evals,
 * old audit rows, expired memory facts, and giving the space back.
 */
export interface RetentionStore {
  /** Finished runs last changed before `cutoff`, oldest first, without `keep`'s statuses and without eval cases. */
  candidates(options: { cutoff: number; keep: readonly RunStatus[]; limit: number; after?: { updatedAt: number; id: string } }): Promise<Collectable[]>;
  /** Runs by id that may be deleted now (finished), eval cases included. */
  collectable(ids: string[]): Promise<Collectable[]>;
  /** What deleting these runs would remove besides them. */
  dependents(ids: string[]): Promise<Dependents>;
  deleteRuns(ids: string[]): Promise<Deleted>;
  /** Of these threads, those with no run left. */
  threadsWithoutRuns(threadIds: string[]): Promise<string[]>;
  /**
   * Removes every checkpoint of those threads that have no run left (checked in the delete, so a
   * run written meanwhile keeps its thread's), and the Agent Protocol's row of each; returns the
   * threads emptied. One transaction.
   */
  deleteThreadCheckpoints(threadIds: readonly string[]): Promise<string[]>;
  /**
   * Removes some checkpoints of a thread, with their pending writes (those of runs deleted, or of a
   * run discarded by a rollback); on Postgres the channel values no checkpoint left refers to go
   * too. Returns how many checkpoints went.
   */
  deleteCheckpoints(threadId: string, checkpointIds: readonly string[]): Promise<number>;
  /** Finished evals (completed, failed, cancelled) finished before `cutoff`. */
  evalCandidates(cutoff: number, limit: number): Promise<string[]>;
  /** The runs of these evals' cases. */
  runsOfEvals(evalIds: string[]): Promise<string[]>;
  /** Deletes evals and their events (their case runs go through `deleteRuns`). */
  deleteEvals(ids: string[]): Promise<number>;
  /** Audit rows older than `cutoff`: counted, or deleted in batches. */
  auditBefore(cutoff: number, remove: boolean, batch: number): Promise<number>;
  /** Long-term memory facts past their expiry: counted, or deleted. */
  expiredMemories(now: number, remove: boolean): Promise<number>;
  /**
   * Gives space back after `collected` runs went: SQLite's incremental vacuum (a full one the first
   * time, to switch the file to it); VACUUM of the tables on Postgres, with their statistics
   * refreshed when the runs collected were a tenth of the table or more.
   */
  reclaim(collected: { runs: number }): Promise<void>;
  /** The database's size in bytes (SQLite: the file and its WAL; Postgres: the database). */
  size(): Promise<number>;
  /** Moves a named tick forward to `tick` when it is earlier (or unset); whether this caller won it (one process per tick). */
  claimTick(name: string, tick: number): Promise<boolean>;
  /** Keeps a small value (the last gc's report) and reads it back. */
  setState(name: string, value: unknown): Promise<void>;
  getState<T>(name: string): Promise<T | undefined>;
}

