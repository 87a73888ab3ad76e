import { SystemError } from "../core/errors.js";
import { MEMORY_LIMITS } from "../core/memory.js";
import { AuditStore } from "./audit-store.js";
import { TroupeCheckpointer } from "./checkpointer.js";
import { checkDatabaseFile, openDatabase, openEventConnection, prepareDataDir, type Sqlite } from "./database.js";
import { EvalStore } from "./eval-store.js";
import { EventStore } from "./event-store.js";
import { Memories } from "./memories.js";
import { SqliteMemoryStore, type SqliteMemoryStoreOptions } from "./memory-store.js";
import { RunStore } from "./run-store.js";
import { SqliteStash } from "./stash-store.js";

/** Everything a troupe instance keeps: checkpoints, runs, events and the data stash, in one SQLite file. */
export interface Store {
  directory: string;
  db: Sqlite;
  checkpointer: TroupeCheckpointer;
  runs: RunStore;
  events: EventStore;
  stash: SqliteStash;
  audit: AuditStore;
  evals: EvalStore;
  /** The long-term memory: a LangGraph BaseStore, and troupe's facts over it. */
  memoryStore: SqliteMemoryStore;
  memories: Memories;
  close(): void;
}

/** How the long-term store is set up: its limits, and an embeddings model for semantic search. */
export interface StoreOptions {
  memory?: SqliteMemoryStoreOptions & { maxItemBytes?: number };
}

export function openStore(directory: string, options: StoreOptions = {}): Store {
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
    throw new SystemError("database_unavailable", `cannot open the database in ${resolved}: ${(error as Error).message}`, { path: resolved }, { cause: error });
  }
  const events = new EventStore(eventsDb);
  const stash = new SqliteStash(stashDb);
  const audit = new AuditStore(eventsDb);
  const { maxItemBytes, ...memoryOptions } = options.memory ?? {};
  const memoryStore = new SqliteMemoryStore(db, {
    ...memoryOptions,
    // The value holds the text and a little more (subject, source run, expiry).
    limits: { ...memoryOptions.limits, maxValueBytes: memoryOptions.limits?.maxValueBytes ?? (maxItemBytes ?? MEMORY_LIMITS.itemMaxBytes) * 2 + 1_024 },
  });
  return {
    directory: resolved,
    db,
    checkpointer: new TroupeCheckpointer(db),
    runs: new RunStore(db),
    events,
    stash,
    audit,
    evals: new EvalStore(db),
    memoryStore,
    memories: new Memories(memoryStore, maxItemBytes !== undefined ? { maxItemBytes } : {}),
    close: () => {
      events.flush();
      stash.flush();
      audit.flush();
      if (eventsDb.open) eventsDb.close();
      if (stashDb.open) stashDb.close();
      if (db.open) db.close();
    },
  };
}

export { databaseExists, prepareDataDir } from "./database.js";
export type { RunRecord } from "./run-store.js";
export { SqliteStash } from "./stash-store.js";
export { EVAL_STATUSES, type EvalRecord, type EvalStatus, EvalStore } from "./eval-store.js";
export type { Sequenced } from "./event-store.js";
export { AuditStore, type AuditFilter, type AuditRow, type AuditStats } from "./audit-store.js";
export { Memories, memoryKey } from "./memories.js";
export { type MemoryIndexConfig, type RankedSearch, SqliteMemoryStore, TroupeMemoryStore } from "./memory-store.js";
