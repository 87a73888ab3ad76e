import { existsSync, statSync } from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { ConfigError } from "../../core/errors.js";

export type Sqlite = Database.Database;

export const DATABASE_FILE = "troupe.db";

/** The schema troupe owns (the checkpointer creates its own tables). Bump `version` with a migration. */
const MIGRATIONS: Array<{ version: number; sql: string }> = [
  {
    version: 1,
    sql: `
CREATE TABLE IF NOT EXISTS runs (
  id TEXT PRIMARY KEY,
  thread_id TEXT NOT NULL,
  task TEXT NOT NULL,
  status TEXT NOT NULL,
  stop_reason TEXT,
  request TEXT NOT NULL,
  answer TEXT,
  error TEXT,
  metrics TEXT,
  interrupt TEXT,
  pid INTEGER,
  host TEXT,
  active_ms INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  finished_at INTEGER
);
CREATE INDEX IF NOT EXISTS runs_thread ON runs (thread_id, created_at);
CREATE INDEX IF NOT EXISTS runs_created ON runs (created_at);
CREATE TABLE IF NOT EXISTS events (
  run_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  type TEXT NOT NULL,
  at INTEGER NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (run_id, seq)
);`,
  },
  {
    // Issue 4: the data stash. Subtask results (JSON) by run and subtask, and the finished items
    // of mapped subtasks, written as each item finishes.
    version: 2,
    sql: `
CREATE TABLE IF NOT EXISTS stash (
  run_id TEXT NOT NULL,
  subtask_id TEXT NOT NULL,
  value TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (run_id, subtask_id)
);
CREATE TABLE IF NOT EXISTS stash_items (
  run_id TEXT NOT NULL,
  subtask_id TEXT NOT NULL,
  item_index INTEGER NOT NULL,
  fingerprint TEXT NOT NULL,
  round INTEGER NOT NULL,
  status TEXT NOT NULL,
  input TEXT NOT NULL,
  output TEXT,
  error TEXT,
  duration_ms INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (run_id, subtask_id, item_index)
);`,
  },
  {
    // Issue 6: the audit trail of tool calls (one row per call: allowed, denied or failed).
    version: 3,
    sql: `
CREATE TABLE IF NOT EXISTS audit (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at INTEGER NOT NULL,
  run_id TEXT,
  thread_id TEXT,
  subtask_id TEXT,
  agent TEXT NOT NULL,
  tool TEXT NOT NULL,
  args TEXT NOT NULL,
  decision TEXT NOT NULL,
  status TEXT NOT NULL,
  level TEXT NOT NULL,
  grant_info TEXT,
  reason TEXT,
  result_preview TEXT,
  error_code TEXT,
  error TEXT,
  duration_ms REAL NOT NULL,
  attempts INTEGER NOT NULL,
  cached INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_run ON audit (run_id, id);
CREATE INDEX IF NOT EXISTS audit_agent ON audit (agent, id);
CREATE INDEX IF NOT EXISTS audit_at ON audit (at);`,
  },
  {
    // The HTTP service (issue 5): a task is a run owned by the API principal that submitted it.
    // owner: principal id (never the key itself); NULL for CLI and library runs.
    // idempotency_key / request_hash: an Idempotency-Key replay returns the same run.
    // suspended: why a run stopped without asking a person ("shutdown"); such runs resume on start.
    // pending_decision: a person's decision accepted while every run slot was taken.
    // started_at: when the run first left the queue (NULL while it never ran).
    // audit.principal: the API key's name behind a direct tool call (POST /tools/call).
    version: 4,
    sql: `
ALTER TABLE runs ADD COLUMN owner TEXT;
ALTER TABLE runs ADD COLUMN idempotency_key TEXT;
ALTER TABLE runs ADD COLUMN request_hash TEXT;
ALTER TABLE runs ADD COLUMN suspended TEXT;
ALTER TABLE runs ADD COLUMN pending_decision TEXT;
ALTER TABLE runs ADD COLUMN started_at INTEGER;
CREATE UNIQUE INDEX IF NOT EXISTS runs_idempotency ON runs (owner, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS runs_owner ON runs (owner, created_at);
CREATE INDEX IF NOT EXISTS runs_status ON runs (status);
ALTER TABLE audit ADD COLUMN principal TEXT;`,
  },
  {
    // Issue 11: the write-ahead audit. A call's row is written as 'started' before it runs and
    // completed after. call_id: the caller's deterministic id of the call; effect: what a file
    // tool is to change (each target's state before and after); outcome: the outcome as JSON,
    // so the same call coming again after a crash is answered without running twice.
    version: 5,
    sql: `
ALTER TABLE audit ADD COLUMN call_id TEXT;
ALTER TABLE audit ADD COLUMN effect TEXT;
ALTER TABLE audit ADD COLUMN outcome TEXT;
CREATE INDEX IF NOT EXISTS audit_call ON audit (call_id, id) WHERE call_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS audit_started ON audit (run_id, id) WHERE status = 'started';`,
  },
  {
    // Issue 11: poison tasks. starts: how many times the run was set running (a start or a
    // resume); crashes: how many of those in a row ended with its process dead while it ran.
    version: 6,
    sql: `
ALTER TABLE runs ADD COLUMN starts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN crashes INTEGER NOT NULL DEFAULT 0;`,
  },
  {
    // Issue 13: evaluation suites. An eval is a suite run case by case, each case a run of its
    // own (runs.eval_id names the eval; such runs are never taken up by a server's queue, since
    // they belong to their case's workspace). owner: the API principal (NULL from the CLI);
    // suite: the cases as submitted (JSON); results: the results so far, rewritten as each case ends.
    version: 7,
    sql: `
ALTER TABLE runs ADD COLUMN eval_id TEXT;
CREATE INDEX IF NOT EXISTS runs_eval ON runs (eval_id) WHERE eval_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS evals (
  id TEXT PRIMARY KEY,
  owner TEXT,
  name TEXT NOT NULL,
  status TEXT NOT NULL,
  provider TEXT NOT NULL,
  total INTEGER NOT NULL,
  passed INTEGER NOT NULL DEFAULT 0,
  failed INTEGER NOT NULL DEFAULT 0,
  min_pass_rate REAL NOT NULL,
  concurrency INTEGER NOT NULL,
  suite TEXT NOT NULL,
  results TEXT,
  error TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  finished_at INTEGER
);
CREATE INDEX IF NOT EXISTS evals_owner ON evals (owner, created_at);`,
  },
  {
    // Issue 14: long-term memory, a LangGraph BaseStore (memory-store.ts). Items by namespace
    // (labels joined by ".", which a label cannot contain) and key; value: JSON; text: what the
    // FTS5 index holds (kept in step by triggers); expires_at: from the value's expiresAt;
    // embedding: a Float32 vector of embedding_model, when an embeddings model is configured.
    version: 8,
    sql: `
CREATE TABLE IF NOT EXISTS memory_items (
  id INTEGER PRIMARY KEY,
  prefix TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  text TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  expires_at INTEGER,
  embedding BLOB,
  embedding_model TEXT,
  UNIQUE (prefix, key)
);
CREATE INDEX IF NOT EXISTS memory_items_updated ON memory_items (prefix, updated_at);
CREATE INDEX IF NOT EXISTS memory_items_expiry ON memory_items (expires_at) WHERE expires_at IS NOT NULL;
CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5(text, content='memory_items', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2');
CREATE TRIGGER IF NOT EXISTS memory_items_insert AFTER INSERT ON memory_items BEGIN
  INSERT INTO memory_fts (rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER IF NOT EXISTS memory_items_delete AFTER DELETE ON memory_items BEGIN
  INSERT INTO memory_fts (memory_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
CREATE TRIGGER IF NOT EXISTS memory_items_update AFTER UPDATE ON memory_items BEGIN
  INSERT INTO memory_fts (memory_fts, rowid, text) VALUES ('delete', old.id, old.text);
  INSERT INTO memory_fts (rowid, text) VALUES (new.id, new.text);
END;`,
  },
  // Versions are applied by set, not by maximum (9 was never used; 8 and 10 were written side by side).
  {
    // Issue 16: scale-out. worker: the worker process holding a run (Postgres deployments; NULL
    // here); cancel_requested: a cancel asked for while another process held the run.
    version: 10,
    sql: `
ALTER TABLE runs ADD COLUMN worker TEXT;
ALTER TABLE runs ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;`,
  },
  {
    // Issue 26: the task a remote A2A agent made for one of troupe's calls, by the call's id, so a
    // run that resumes after a crash waits on that task again instead of sending the message twice.
    version: 16,
    sql: `
CREATE TABLE IF NOT EXISTS remote_tasks (
  call_id TEXT PRIMARY KEY,
  agent TEXT NOT NULL,
  url TEXT NOT NULL,
  task_id TEXT NOT NULL,
  context_id TEXT NOT NULL,
  created_at INTEGER NOT NULL
);`,
  },
  {
    // Issue 27: operating troupe over time. On runs: forked_from (the run and checkpoint a fork
    // started from, as JSON), waits_for (a queued run waits for this run of its thread to stop:
    // --on-busy enqueue), superseded_by (the run that asked this one to stop: --on-busy interrupt).
    // grants: runtime grants (troupe grants), revoked rows kept so a denial can name them.
    // webhook_deliveries: the webhook outbox. schedules: cron schedules and the last tick fired.
    // reflections: each critic verdict by type; duration_stats: subtask durations by agent and tool
    // (plan estimates); maintenance: retention's state (the last gc).
    version: 18,
    sql: `
ALTER TABLE runs ADD COLUMN forked_from TEXT;
ALTER TABLE runs ADD COLUMN waits_for TEXT;
ALTER TABLE runs ADD COLUMN superseded_by TEXT;
CREATE INDEX IF NOT EXISTS runs_waits_for ON runs (waits_for) WHERE waits_for IS NOT NULL;
CREATE INDEX IF NOT EXISTS runs_retention ON runs (status, updated_at);
CREATE TABLE IF NOT EXISTS grants (
  id TEXT PRIMARY KEY,
  agent TEXT NOT NULL,
  tool TEXT NOT NULL,
  level TEXT NOT NULL,
  conditions TEXT,
  expires_at INTEGER,
  granted_by TEXT NOT NULL,
  reason TEXT,
  created_at INTEGER NOT NULL,
  revoked_at INTEGER,
  revoked_by TEXT,
  revoke_reason TEXT
);
CREATE INDEX IF NOT EXISTS grants_agent ON grants (agent, created_at);
CREATE TABLE IF NOT EXISTS webhook_deliveries (
  id TEXT PRIMARY KEY,
  run_id TEXT NOT NULL,
  event TEXT NOT NULL,
  url TEXT NOT NULL,
  payload TEXT NOT NULL,
  status TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL,
  last_status INTEGER,
  last_error TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  delivered_at INTEGER
);
CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS webhook_deliveries_run ON webhook_deliveries (run_id, created_at);
CREATE TABLE IF NOT EXISTS schedules (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  cron TEXT NOT NULL,
  timezone TEXT NOT NULL,
  task TEXT NOT NULL,
  request TEXT NOT NULL,
  owner TEXT,
  catch_up TEXT NOT NULL,
  source TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  last_tick INTEGER,
  last_run_id TEXT,
  last_fired_at INTEGER
);
CREATE TABLE IF NOT EXISTS reflections (
  run_id TEXT NOT NULL,
  iteration INTEGER NOT NULL,
  type TEXT NOT NULL,
  passed INTEGER NOT NULL,
  confidence REAL NOT NULL,
  at INTEGER NOT NULL,
  PRIMARY KEY (run_id, iteration)
);
CREATE INDEX IF NOT EXISTS reflections_at ON reflections (at);
CREATE TABLE IF NOT EXISTS duration_stats (
  agent TEXT NOT NULL,
  tool TEXT NOT NULL,
  count INTEGER NOT NULL,
  total_ms REAL NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (agent, tool)
);
CREATE TABLE IF NOT EXISTS maintenance (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  updated_at INTEGER NOT NULL
);`,
  },
  {
    // Issue 23: provenance labels (src/core/provenance.ts) on stashed results and map items, as
    // JSON text; NULL on rows stored before labels, which read as untrusted (unlabelled).
    version: 14,
    sql: `
ALTER TABLE stash ADD COLUMN label TEXT;
ALTER TABLE stash_items ADD COLUMN label TEXT;`,
  },
];

/** The newest schema version this troupe knows. */
export const SCHEMA_VERSION = Math.max(...MIGRATIONS.map((migration) => migration.version));

/**
 * Refuses a database file of zero bytes (with no write-ahead log beside it holding its pages).
 * SQLite would take it as a new, empty database and troupe would start over on top of it; an
 * empty file where troupe.db should be is a crash or a copy cut short, for a person to look at.
 */
export function checkDatabaseFile(directory: string): void {
  const file = path.join(path.resolve(directory), DATABASE_FILE);
  let size: number;
  try {
    size = statSync(file).size;
  } catch {
    return; // no database yet: one is created
  }
  if (size > 0) return;
  const wal = `${file}-wal`;
  if (existsSync(wal) && statSync(wal).size > 0) return;
  throw new ConfigError(
    "database_empty",
    `${file} is empty (0 bytes), so it is not a troupe database; move it away or delete it to start a new one, or restore it from a copy`,
    { path: file },
  );
}

/** A connection to the data directory's database: WAL, the given sync level, a busy timeout. */
function connect(directory: string, synchronous: "FULL" | "NORMAL"): Sqlite {
  const db = new Database(path.join(directory, DATABASE_FILE));
  // Before WAL, which writes the header: a new file frees pages as retention deletes (troupe gc).
  // On an existing file it changes nothing until its first VACUUM (gc's first collection makes one).
  db.pragma("auto_vacuum = INCREMENTAL");
  db.pragma("journal_mode = WAL");
  db.pragma(`synchronous = ${synchronous}`);
  db.pragma("busy_timeout = 5000");
  return db;
}

/**
 * Refuses a database written by a newer troupe (a schema version this one does not know): it
 * would read and write tables whose meaning it does not know.
 */
export function checkSchemaVersions(applied: number[], where: string): void {
  const unknown = applied.filter((version) => !MIGRATIONS.some((migration) => migration.version === version));
  if (unknown.length === 0) return;
  throw new ConfigError(
    "database_too_new",
    `${where} has schema version ${Math.max(...unknown)}, newer than this troupe knows (${SCHEMA_VERSION}): upgrade troupe, or use another database`,
    { versions: unknown, known: SCHEMA_VERSION },
  );
}

/** Applies the migrations a database lacks, each in its own transaction; returns the versions applied. */
export function migrateDatabase(db: Sqlite, where: string): number[] {
  db.exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
  const applied = (db.prepare("SELECT version FROM schema_version").all() as Array<{ version: number }>).map((row) => row.version);
  checkSchemaVersions(applied, where);
  const done: number[] = [];
  for (const migration of MIGRATIONS) {
    if (applied.includes(migration.version)) continue;
    db.transaction(() => {
      db.exec(migration.sql);
      db.prepare("INSERT INTO schema_version (version) VALUES (?)").run(migration.version);
    })();
    done.push(migration.version);
  }
  return done;
}

/** Opens (and migrates) the SQLite database in the data directory: WAL, synchronous FULL, busy timeout. */
export function openDatabase(directory: string): Sqlite {
  const db = connect(directory, "FULL");
  db.pragma("foreign_keys = ON");
  try {
    migrateDatabase(db, path.join(directory, DATABASE_FILE));
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

/**
 * A second connection for the event log, with `synchronous = NORMAL`: an event insert is not
 * fsynced on its own. In WAL mode it still survives a crash of the process at once, and the
 * next checkpoint commit (synchronous FULL on the main connection) syncs it to disk with its step.
 */
export function openEventConnection(directory: string): Sqlite {
  return connect(directory, "NORMAL");
}

/** Whether a database exists in the directory (used to refuse lookups without creating anything). */
export function databaseExists(directory: string): boolean {
  return existsSync(path.join(path.resolve(directory), DATABASE_FILE));
}

/** Opens an existing database read-only, or returns undefined when there is none (nothing is created). */
export function openDatabaseReadOnly(directory: string): Sqlite | undefined {
  if (!databaseExists(directory)) return undefined;
  checkDatabaseFile(directory);
  const db = new Database(path.join(path.resolve(directory), DATABASE_FILE), { readonly: true, fileMustExist: true });
  db.pragma("busy_timeout = 5000");
  return db;
}
