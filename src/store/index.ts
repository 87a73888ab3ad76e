import type { Statement } from "better-sqlite3";
import { SystemError, isTroupeError } from "../core/errors.js";
import { SqliteAuditStore } from "./audit/sqlite.js";
import { TroupeCheckpointer } from "./checkpoints/sqlite.js";
import { checkDatabaseFile, DATABASE_FILE, openDatabase, openEventConnection, type Sqlite } from "./database/sqlite.js";
import { prepareDataDir } from "./database/data-dir.js";
import { damagedDatabase, isDamagedDatabase } from "./database/errors.js";
import { onDisk, releaseWal } from "./database/wal-sync.js";
import { SqliteEvalStore } from "./evals/sqlite.js";
import { SqliteEventStore } from "./events/sqlite.js";
import { type MemorySetup, memoryOf, memoryOptionsOf } from "./memory/memories.js";
import { SqliteMemoryStore } from "./memory/sqlite.js";
import { SqliteFileLabels } from "./file-labels/sqlite.js";
import { SqliteRemoteTasks } from "./remote-tasks/sqlite.js";
import { SqliteMcpCredentials } from "./mcp-credentials/sqlite.js";
import { SqliteRunStore } from "./runs/sqlite.js";
import { SqliteRunQueue } from "./queue/sqlite.js";
import { SqliteStash } from "./stash/sqlite.js";
import { ProcessThreadLocks } from "./locks/sqlite.js";
import { SqliteGrantStore } from "./grants/sqlite.js";
import { SqliteRetentionStore } from "./retention/sqlite.js";
import { SqliteRunStatsStore } from "./stats/sqlite.js";
import { SqliteScheduleStore } from "./schedules/sqlite.js";
import { SqliteWebhookOutbox } from "./webhooks/sqlite.js";
import type { Store, StoreOptions } from "./contract.js";
import { SqliteAgentProtocolStore } from "./agent-protocol/sqlite.js";

/** The SQLite store, whose connection tests and benchmarks may read directly. */
export interface SqliteStore extends Store {
  readonly kind: "sqlite";
  readonly db: Sqlite;
  readonly memoryStore: SqliteMemoryStore;
  readonly runQueue: SqliteRunQueue;
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
  const stats = new SqliteRunStatsStore(eventsDb);
  // A call that waits for its row on disk waits for the synced connection's WAL sync: the same file, so every connection's commits.
  const audit = new SqliteAuditStore(eventsDb, () => onDisk(db));
  const threads = new ProcessThreadLocks(`${resolved}/${DATABASE_FILE}`);
  const runQueue = new SqliteRunQueue(db);
  const { memoryStore, memories } = memoryOf(new SqliteMemoryStore(db, memoryOptionsOf(options)), options);
  const checkpointer = new TroupeCheckpointer(db);
  let pingStatement: Statement<[]> | undefined;
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
    stats,
    retention: new SqliteRetentionStore(db, `${resolved}/${DATABASE_FILE}`, async () => {
      await Promise.all([checkpointer.flush(), events.flush(), stats.flush(), stash.flush(), audit.flush()]);
    }),
    // Prepared once: /health asks on every probe, and preparing cost more than the query.
    ping: async () => {
      pingStatement ??= db.prepare<[]>("SELECT 1");
      pingStatement.get();
    },
    close: async () => {
      // Each flush writes synchronously on SQLite: done before the connections close.
      if (db.open) void checkpointer.flush();
      void events.flush();
      void stats.flush();
      void stash.flush();
      void audit.flush();
      threads.releaseAll();
      runQueue.close();
      if (eventsDb.open) eventsDb.close();
      if (stashDb.open) stashDb.close();
      releaseWal(db);
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

export type { Store, StoreOptions } from "./contract.js";
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
