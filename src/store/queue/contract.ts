/**
 * The queue runs are taken from to be driven. On Postgres it is shared by the processes of a
 * deployment (pg-boss underneath: see docs/scale-out.md); on SQLite it is the server's own, in
 * memory (queue/sqlite.ts). Either way the run store feeds it: a run written as `queued` becomes a
 * job (on Postgres in the same transaction), and one dispatcher takes jobs from it. A worker takes
 * jobs, holds each by a heartbeat while it drives the run, and completes it when the run stops
 * (finished, waiting for a person, drained). A job whose heartbeat stops — its worker died — is
 * given back by the queue's monitor and taken by another worker, which resumes the run from its
 * checkpoint. One job per thread is taken at a time.
 */

/** A run taken from the queue: its job, held until completed or released. */
export interface RunJob {
  /** The job's id in the queue. */
  id: string;
  /** Which attempt this is (0 the first; each takeover or release adds one). */
  attempt: number;
  runId: string;
  threadId: string;
}

/** A run as the queue is handed it. */
export interface QueuedRun {
  runId: string;
  threadId: string;
  /** Who submitted it (an API key's name); null without one. */
  owner: string | null;
}

export interface TakeOptions {
  /**
   * The most jobs one owner may hold at once in this process (taken and not completed). Either
   * queue takes round-robin by owner: on SQLite among this server's runs, on Postgres by each
   * owner's jobs active in every process of the deployment.
   */
  perOwner?: number;
}

export interface RunQueue {
  /** Whether other processes take from this queue too (Postgres), or only this one (SQLite). */
  readonly shared: boolean;
  /** How long a job's heartbeat may be silent before the job is given to another worker (the lease). */
  readonly leaseSeconds: number;
  /** Takes up to `limit` jobs, each a run to drive; none when nothing is waiting. */
  take(limit: number, options?: TakeOptions): Promise<RunJob[]>;
  /** Renews the heartbeat of the jobs held (all in one statement). */
  touch(jobs: RunJob[]): Promise<void>;
  /** The run stopped (finished, waits for a person, drained and queued again): its job is done. */
  complete(job: RunJob): Promise<void>;
  /** Gives a job back to be taken again (another worker, or this one later). */
  release(job: RunJob, reason: string): Promise<void>;
  /** Resolves when a job may be waiting: a new job's notification, a job given back, or after `pollMs`. */
  wait(pollMs: number, signal?: AbortSignal): Promise<void>;
  /** Jobs waiting to be taken (created or given back, not active). */
  depth(): Promise<number>;
  /** Asks the queue's database something trivial; rejects when it does not answer. */
  ping(): Promise<void>;
}

/** What an API process asks of the process holding a run. */
export interface ControlMessage {
  /**
   * cancel: stop the run (recorded cancelled); drain: stop it at its next checkpoint and queue it
   * again; supersede: stop it (at its next checkpoint, `mode` drain, or at once) to make way for
   * run `by` on its thread (--on-busy interrupt or rollback), recorded cancelled.
   */
  action: "cancel" | "drain" | "supersede";
  runId?: string;
  mode?: "drain" | "cancel";
  by?: string;
  /** drain: a whole worker (its runs go back to the queue, it takes no more). */
  worker?: string;
}

/** Messages between processes: Postgres NOTIFY on a channel every process listens to. */
export interface ControlChannel {
  send(message: ControlMessage): Promise<void>;
  subscribe(listener: (message: ControlMessage) => void): () => void;
}

/** A worker process as the registry knows it. */
export interface WorkerInfo {
  id: string;
  host: string;
  pid: number;
  /** Runs it drives at once, at most. */
  concurrency: number;
  /** Runs it holds now. */
  held: number;
  /** Runs it took over from a worker that died. */
  takeovers: number;
  draining: boolean;
  startedAt: number;
  heartbeatAt: number;
  /** Whether it was heard from within the lease. */
  alive: boolean;
}

/** The worker processes of a deployment, each with its heartbeat (for /health and /metrics of any process). */
export interface WorkerRegistry {
  /** Records this worker, or its figures now (also its heartbeat). */
  beat(worker: Omit<WorkerInfo, "startedAt" | "heartbeatAt" | "alive">): Promise<void>;
  /** Records that a worker stopped. */
  leave(id: string): Promise<void>;
  /** Workers heard from recently (and those that stopped in the last minutes, marked not alive). */
  list(): Promise<WorkerInfo[]>;
}
