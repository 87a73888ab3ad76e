import { readdirSync, readFileSync } from "node:fs";
import type pg from "pg";
import { ConfigError, SystemError } from "../../core/errors.js";
import type Database from "better-sqlite3";

/**
 * troupe's schema, as SQL files per dialect under `src/store/migrations/<dialect>/`, named
 * `NNNN-what.sql` where NNNN is the version. A database records the versions it has applied
 * (SQLite: `schema_version`; Postgres: `troupe_schema`) and is migrated by set, not by maximum:
 * any version it lacks is applied, in version order, each in its own transaction. A version it
 * has that no file here names was written by a newer troupe, and the database is refused.
 */
export type Dialect = "sqlite" | "postgres";

export interface Migration {
  version: number;
  /** The file's name, for messages. */
  file: string;
  sql: string;
}

const FILE_NAME = /^(\d{4})-[a-z0-9-]+\.sql$/;

const loaded = new Map<Dialect, readonly Migration[]>();

/** The migrations of a dialect, in version order (read from their files once per process). */
export function migrationsOf(dialect: Dialect): readonly Migration[] {
  let migrations = loaded.get(dialect);
  if (migrations) return migrations;
  const folder = new URL(`../migrations/${dialect}/`, import.meta.url);
  migrations = readdirSync(folder)
    .filter((file) => file.endsWith(".sql"))
    .map((file) => {
      const match = FILE_NAME.exec(file);
      if (!match) throw new SystemError("migration_invalid", `${dialect} migration ${file} is not named NNNN-what.sql`, { file });
      return { version: Number(match[1]), file, sql: readFileSync(new URL(file, folder), "utf8") };
    })
    .sort((left, right) => left.version - right.version);
  loaded.set(dialect, migrations);
  return migrations;
}

/** The newest schema version this troupe knows for a dialect. */
export function schemaVersionOf(dialect: Dialect): number {
  return Math.max(...migrationsOf(dialect).map((migration) => migration.version));
}

/**
 * What a database with these versions applied still needs, in order; refuses (database_too_new)
 * a database written by a newer troupe, which would read and write tables whose meaning this
 * one does not know.
 */
export function pendingMigrations(dialect: Dialect, applied: readonly number[], location: string): Migration[] {
  const migrations = migrationsOf(dialect);
  const unknown = applied.filter((version) => !migrations.some((migration) => migration.version === version));
  if (unknown.length > 0) {
    const known = schemaVersionOf(dialect);
    const what = dialect === "postgres" ? "troupe schema version" : "schema version";
    throw new ConfigError(
      "database_too_new",
      `${location} has ${what} ${Math.max(...unknown)}, newer than this troupe knows (${known}): upgrade troupe, or use another database`,
      { versions: unknown, known },
    );
  }
  return migrations.filter((migration) => !applied.includes(migration.version));
}

function failed(migration: Migration, location: string, error: unknown): SystemError {
  return new SystemError("migration_failed", `migration ${migration.version} (${migration.file}) of ${location} failed: ${(error as Error).message}`, { version: migration.version }, { cause: error });
}

/** Applies the migrations a SQLite database lacks; returns the versions applied. */
export function migrateSqlite(db: Database.Database, location: string): number[] {
  db.exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)");
  const applied = (db.prepare("SELECT version FROM schema_version").all() as Array<{ version: number }>).map((row) => row.version);
  const done: number[] = [];
  for (const migration of pendingMigrations("sqlite", applied, location)) {
    // Not wrapped: a damaged file's SQLITE_CORRUPT reaches the store's opening, which names it.
    db.transaction(() => {
      db.exec(migration.sql);
      db.prepare("INSERT INTO schema_version (version) VALUES (?)").run(migration.version);
    })();
    done.push(migration.version);
  }
  return done;
}

/** The advisory lock key under which Postgres processes migrate one at a time. */
const MIGRATION_LOCK = "troupe.migrate";

/**
 * Applies the migrations a Postgres database lacks, one process at a time (an advisory lock, so
 * processes starting together migrate once), then `extra` (the checkpointer's and the queue's
 * own setups) under the same lock. Returns the versions applied.
 */
export async function migratePostgres(pool: pg.Pool, location: string, extra: () => Promise<void> = async () => {}): Promise<number[]> {
  const client = await pool.connect();
  try {
    await client.query("SELECT pg_advisory_lock(hashtextextended($1, 0))", [MIGRATION_LOCK]);
    try {
      await client.query("CREATE TABLE IF NOT EXISTS troupe_schema (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)");
      const applied = (await client.query<{ version: number }>("SELECT version FROM troupe_schema")).rows.map((row) => row.version);
      const done: number[] = [];
      for (const migration of pendingMigrations("postgres", applied, location)) {
        await client.query("BEGIN");
        try {
          await client.query(migration.sql);
          await client.query("INSERT INTO troupe_schema (version, applied_at) VALUES ($1, $2)", [migration.version, Date.now()]);
          await client.query("COMMIT");
        } catch (error) {
          await client.query("ROLLBACK").catch(() => {});
          throw failed(migration, location, error);
        }
        done.push(migration.version);
      }
      await extra();
      return done;
    } finally {
      await client.query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [MIGRATION_LOCK]).catch(() => {});
    }
  } finally {
    client.release();
  }
}
