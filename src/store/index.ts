import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import { SystemError, isTroupeError } from "../core/errors.js";
import { type AuditStore } from "./audit/contract.js";
import { SqliteAuditStore } from "./audit/sqlite.js";
import { TroupeCheckpointer } from "./checkpoints/sqlite.js";
import { checkDatabaseFile, DATABASE_FILE, openDatabase, openEventConnection, type Sqlite } from "./database/sqlite.js";
import { prepareDataDir } from "./database/data-dir.js";
import { damagedDatabase, isDamagedDatabase } from "./database/errors.js";
import { type EvalStore } from "./evals/contract.js";
import { SqliteEvalStore } from "./evals/sqlite.js";
import { type EventStore } from "./events/contract.js";
import { SqliteEventStore } from "./events/sqlite.js";
import { type Memories, type MemorySetup, memoryOf, memoryOptionsOf } from "./memory/memories.js";
import { type TroupeMemoryStore } from "./memory/contract.js";
import { SqliteMemoryStore } from "./memory/sqlite.js";
import type { ControlChannel, RunQueue, WorkerRegistry } from "./queue/contract.js";
import type { RemoteTasks } from "../core/remote-tasks.js";
import type { FileLabelStore } from "../core/file-labels.js";
import { SqliteFileLabels } from "./file-labels/sqlite.js";
import { SqliteRemoteTasks } from "./remote-tasks/sqlite.js";
import type { McpCredentialStore } from "../core/mcp-credentials.js";
import { SqliteMcpCredentials } from "./mcp-credentials/sqlite.js";
import { type RunStore } from "./runs/contract.js";
import { SqliteRunStore } from "./runs/sqlite.js";
import { SqliteRunQueue } from "./queue/sqlite.js";
import { type StashStore } from "./stash/contract.js";
import { SqliteStash } from "./stash/sqlite.js";
import { type ThreadLocks } from "./locks/contract.js";
import { ProcessThreadLocks } from "./locks/sqlite.js";
import { type GrantStore } from "./grants/contract.js";
import { SqliteGrantStore } from "./grants/sqlite.js";
import { type RetentionStore } from "./retention/contract.js";
import { SqliteRetentionStore } from "./retention/sqlite.js";
import { type RunStatsStore } from "./stats/contract.js";
import { SqliteRunStatsStore } from "./stats/sqlite.js";
import { type ScheduleStore } from "./schedules/contract.js";
import { SqliteScheduleStore } from "./schedules/sqlite.js";
import { type WebhookOutbox } from "./webhooks/contract.js";
import { SqliteWebhookOutbox } from "./webhooks/sqlite.js";
import { type AgentProtocolStore } from "./agent-protocol/contract.js";
import { SqliteAgentProtocolStore } from "./agent-protocol/sqlite.js";

/**
 * Everything a troupe instance keeps — checkpoints, runs, events, the data stash, the audit
 * trail, evals — behind one interface with two implementations: SQLite in the data directory
 * (the embedded default: one process) and Postgres (`TROUPE_DATABASE_URL`: any number of API
 * and worker processes, with a run queue shared between them). Both pass the store contract
 * suite (test/store-contract/).
 */
export interface Store {
  readonly kind: "sqlite" | "postgres";
  /** The data directory: SQLite's database, and local files (eval workspaces) on either backend. */
  readonly directory: string;
  /** Where the database is, for messages: the SQLite file, or the Postgres URL without its password. */
  readonly location: string;
  readonly checkpointer: BaseCheckpointSaver;
  readonly runs: RunStore;
  readonly events: EventStore;
  readonly stash: StashStore;
  readonly audit: AuditStore;
  readonly evals: EvalStore;
  readonly threads: ThreadLocks;
  /** The long-term memory: a LangGraph BaseStore, and troupe's facts over it. */
  readonly memoryStore: TroupeMemoryStore;
  readonly memories: Memories;
  /** The tasks remote A2A agents made for troupe's calls, by call id (a crash mid-call waits on the same task again). */
  readonly remoteTasks: RemoteTasks;
  /** MCP servers' OAuth credentials, sealed with troupe's secret key (src/store/secrets/secret-box.ts). */
  readonly mcpCredentials: McpCredentialStore;
  /** The labels of files troupe wrote, copied, moved or extracted, by content and identity (docs/trust.md). */
  readonly fileLabels: FileLabelStore;
  /** The run queue shared by every process (Postgres); undefined on SQLite, where a server queues in memory. */
  readonly queue?: RunQueue;
  /** The queue a server's dispatcher takes runs from: the shared one (Postgres), or this process's own (SQLite). */
  readonly runQueue: RunQueue;
  /** Messages to whichever process holds a run (cancel, drain): Postgres NOTIFY; undefined on SQLite. */
  readonly control?: ControlChannel;
  /** The worker processes sharing the store, with their heartbeats (Postgres). */
  readonly workers?: WorkerRegistry;
  /** Grants added and revoked at runtime (`troupe grants`). */
  readonly grants: GrantStore;
  /** The webhook outbox: a delivery per run event a webhook asked for, written with the run's change. */
  readonly webhooks: WebhookOutbox;
  /** Cron schedules and the ticks they fired. */
  readonly schedules: ScheduleStore;
  /** Reflection statistics and subtask durations, kept across runs. */
  readonly stats: RunStatsStore;
  /** The data side of retention (gc, runs delete). */
  readonly retention: RetentionStore;
  /** What the Agent Protocol keeps beside the runs: the threads made through it, and its runs' metadata. */
  readonly agentProtocol: AgentProtocolStore;
  /** Asks the database something trivial; rejects when it does not answer. */
  ping(): Promise<void>;
  /** Writes what is pending and closes every connection. */
  close(): Promise<void>;
}

/** The SQLite store, whose connection tests and benchmarks may read directly. */
export interface SqliteStore extends Store {
  readonly kind: "sqlite";
  readonly db: Sqlite;
  readonly memoryStore: SqliteMemoryStore;
  readonly runQueue: SqliteRunQueue;
}

export interface StoreOptions extends MemorySetup {
  /** The data directory (created when missing): SQLite's `troupe.db`, and local files. */
  dataDir: string;
  /** `postgres://…`: everything on Postgres instead of SQLite (TROUPE_DATABASE_URL). */
  databaseUrl?: string;
  /** Postgres: how long a worker's silence lasts before another takes its runs over (default 30 s). */
  leaseSeconds?: number;
  /** Postgres: the most connections of this process's pool (default 20). */
  poolSize?: number;
}

/** Opens the SQLite store in a data directory: one database file, three connections (runs and checkpoints synced, events and stash relaxed). */
export function openSqliteStore(directory: string, options: MemorySetup = {}): SqliteStore {
  const resolved = prepareDataDir(directory, true);
  checkDatabaseFile(resolved);
  let db: Sqlite;
  let eventsDb: Sqlite;
  let stashDb: Sqlite;
  try {
    db = openDatabase(resolved);
    eventsDb = openEventConnection(resolved);
    // The stash wants the same relaxed sync as the event log (see SqliteStash), on its own connection.
    stashDb = openEventConnection(resolved);
  } catch (error) {
    if (isTroupeError(error)) throw error;
    if (isDamagedDatabase(error)) throw damagedDatabase(error, `${resolved}/${DATABASE_FILE}`);
    throw new SystemError("database_unavailable", `cannot open the database in ${resolved}: ${(error as Error).message}`, { path: resolved }, { cause: error });
  }
  const events = new SqliteEventStore(eventsDb);
  const stash = new SqliteStash(stashDb);
  const audit = new SqliteAuditStore(eventsDb);
  const threads = new ProcessThreadLocks(`${resolved}/${DATABASE_FILE}`);
  const runQueue = new SqliteRunQueue(db);
  const { memoryStore, memories } = memoryOf(new SqliteMemoryStore(db, memoryOptionsOf(options)), options);
  const checkpointer = new TroupeCheckpointer(db);
  return {
    kind: "sqlite",
    directory: resolved,
    location: `${resolved}/${DATABASE_FILE}`,
    db,
    checkpointer,
    runs: new SqliteRunStore(db, runQueue),
    runQueue,
    events,
    stash,
    audit,
    evals: new SqliteEvalStore(db),
    threads,
    memoryStore,
    memories,
    remoteTasks: new SqliteRemoteTasks(db),
    mcpCredentials: new SqliteMcpCredentials(db),
    // Relaxed sync, like the event log: a label is in the WAL before the file it labels is written (a crash of the process keeps
    // it), and the next synced commit puts it on disk; a fsync per label would double what a file write costs.
    fileLabels: new SqliteFileLabels(eventsDb),
    grants: new SqliteGrantStore(db),
    webhooks: new SqliteWebhookOutbox(db),
    schedules: new SqliteScheduleStore(db),
    agentProtocol: new SqliteAgentProtocolStore(db),
    // Figures beside the runs: relaxed sync, like the event log (see SqliteRunStatsStore).
    stats: new SqliteRunStatsStore(eventsDb),
    retention: new SqliteRetentionStore(db, `${resolved}/${DATABASE_FILE}`, async () => {
      await Promise.all([checkpointer.flush(), events.flush(), stash.flush(), audit.flush()]);
    }),
    ping: async () => {
      db.prepare("SELECT 1").get();
    },
    close: async () => {
      // Each flush writes synchronously on SQLite: done before the connections close.
      if (db.open) void checkpointer.flush();
      void events.flush();
      void stash.flush();
      void audit.flush();
      threads.releaseAll();
      runQueue.close();
      if (eventsDb.open) eventsDb.close();
      if (stashDb.open) stashDb.close();
      if (db.open) db.close();
    },
  };
}

/**
 * Opens the store the options name: Postgres when a database URL is given (migrated at once,
 * run queue included), else SQLite in the data directory.
 */
export async function openStore(options: StoreOptions | string): Promise<Store> {
  const resolved = typeof options === "string" ? { dataDir: options } : options;
  if (resolved.databaseUrl) {
    const { openPostgresStore } = await import("./postgres-store.js");
    return openPostgresStore({ ...resolved, databaseUrl: resolved.databaseUrl });
  }
  return openSqliteStore(resolved.dataDir, resolved);
}

export { databaseExists } from "./database/sqlite.js";
export { prepareDataDir } from "./database/data-dir.js";
export type { CreateRunOptions, NewRun, PendingDecision, RunCursor, RunFilter, RunListOptions, RunPage, RunPageOptions, RunPatch, RunRecord, RunStore } from "./runs/contract.js";
export { type StashStore } from "./stash/contract.js";
export { SqliteStash } from "./stash/sqlite.js";
export { EVAL_STATUSES, type EvalRecord, type EvalStatus, type EvalStore } from "./evals/contract.js";
export type { EventStore, Sequenced } from "./events/contract.js";
export type { AuditFilter, AuditRow, AuditStats, AuditStore } from "./audit/contract.js";
export { isAlive, type ThreadLease, type ThreadLocks } from "./locks/contract.js";
export type { ControlChannel, ControlMessage, QueuedRun, RunJob, RunQueue, TakeOptions, WorkerInfo, WorkerRegistry } from "./queue/contract.js";
export { SqliteRunQueue } from "./queue/sqlite.js";
export { Memories, type MemorySetup, memoryKey, memoryOf, memoryOptionsOf } from "./memory/memories.js";
export type { GrantStore } from "./grants/contract.js";
export type { DeliveryOutcome, WebhookOutbox } from "./webhooks/contract.js";
export type { NewSchedule, ScheduleStore } from "./schedules/contract.js";
export type { DurationStat, ReflectionRecord, RunStatsStore } from "./stats/contract.js";
export type { Collectable, RetentionStore } from "./retention/contract.js";
export { AGENT_THREAD_SORTS, AGENT_THREAD_STATUSES, type AgentProtocolStore, type AgentThread, type AgentThreadSort, type AgentThreadStatus, type AgentTurn } from "./agent-protocol/contract.js";
export { type MemoryIndexConfig, type MemoryStoreOptions, type RankedSearch, TroupeMemoryStore } from "./memory/contract.js";
export { SqliteMemoryStore } from "./memory/sqlite.js";
