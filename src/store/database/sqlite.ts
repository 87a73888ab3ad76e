import { existsSync, statSync } from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { ConfigError } from "../../core/errors.js";
import { migrateSqlite } from "./migrator.js";

export type Sqlite = Database.Database;

/** Statements prepared on each connection, by their SQL (preparing one costs more than running it). */
const PREPARED = new WeakMap<Sqlite, Map<string, Database.Statement>>();
/** The most statements kept per connection: SQL that varies more than this (lists of ids) is prepared each time. */
const MAX_PREPARED = 200;

/** A statement of a connection, prepared once and kept: for SQL run again and again with new values. */
export function prepared(db: Sqlite, sql: string): Database.Statement {
  let statements = PREPARED.get(db);
  if (!statements) {
    statements = new Map();
    PREPARED.set(db, statements);
  }
  let statement = statements.get(sql);
  if (!statement) {
    if (statements.size >= MAX_PREPARED) statements.clear();
    statement = db.prepare(sql);
    statements.set(sql, statement);
  }
  return statement;
}

export const DATABASE_FILE = "troupe.db";



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

/** Opens (and migrates) the SQLite database in the data directory: WAL, synchronous FULL, busy timeout. */
export function openDatabase(directory: string): Sqlite {
  const db = connect(directory, "FULL");
  db.pragma("foreign_keys = ON");
  try {
    migrateSqlite(db, path.join(directory, DATABASE_FILE));
  } catch (error) {
    db.close();
    throw error;
  }
  refreshStatistics(db);
  return db;
}

/**
 * Keeps the query planner's statistics of the runs table fresh (ANALYZE, reading at most a bounded
 * sample of each index, so it stays quick on a big database). Without them SQLite guesses, and on
 * a big history it guesses wrong: a thread's runs were read through the index of their owner's
 * runs, all of them. Called when the database opens, as the table grows and after gc. Only the
 * runs table: LangGraph's saver reads a checkpoint's pending writes in the order its plan leaves
 * them, which statistics on its tables would change.
 */
export function refreshStatistics(db: Sqlite): void {
  db.pragma("analysis_limit = 1000");
  db.exec("ANALYZE runs");
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
