import { type AuditStore } from "./audit/contract.js";
import { SqliteAuditStore } from "./audit/sqlite.js";
import path from "node:path";
import { DATABASE_FILE, openDatabaseReadOnly, type Sqlite } from "./database/sqlite.js";
import { damagedDatabase, isDamagedDatabase } from "./database/errors.js";
import { type RunListOptions, type RunRecord, type RunStore } from "./runs/contract.js";
import { SqliteRunStore } from "./runs/sqlite.js";
import { type RunStatsStore } from "./stats/contract.js";
import { SqliteRunStatsStore } from "./stats/sqlite.js";

/** Where a lookup reads: the data directory's SQLite database, or Postgres when a URL is given. */
export interface LookupTarget {
  dataDir: string;
  databaseUrl?: string;
}

const targetOf = (target: LookupTarget | string): LookupTarget => (typeof target === "string" ? { dataDir: target } : target);

/** Reads the database without creating or migrating anything; undefined when there is no database or no such table yet. */
async function withTableReadOnly<T>(target: LookupTarget, table: "runs" | "audit" | "reflections", read: (parts: { runs: RunStore; audit: AuditStore; stats: RunStatsStore }) => Promise<T>): Promise<T | undefined> {
  if (target.databaseUrl) {
    const { withPostgresReadOnly } = await import("./postgres-store.js");
    return withPostgresReadOnly(target.databaseUrl, table, read);
  }
  let db: Sqlite | undefined;
  try {
    db = openDatabaseReadOnly(target.dataDir);
    if (!db) return undefined;
    const exists = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?").get(table);
    if (!exists) return undefined;
    return await read({ runs: new SqliteRunStore(db), audit: new SqliteAuditStore(db), stats: new SqliteRunStatsStore(db) });
  } catch (error) {
    if (isDamagedDatabase(error)) throw damagedDatabase(error, path.join(path.resolve(target.dataDir), DATABASE_FILE));
    throw error;
  } finally {
    db?.close();
  }
}

/** Reads runs without creating or migrating anything: for lookups that must not write when they fail. */
export function withRunsReadOnly<T>(target: LookupTarget | string, read: (runs: RunStore) => Promise<T>): Promise<T | undefined> {
  return withTableReadOnly(targetOf(target), "runs", (parts) => read(parts.runs));
}

export function latestRunOfThread(target: LookupTarget | string, threadId: string): Promise<RunRecord | undefined> {
  return withRunsReadOnly(target, (runs) => runs.latestForThread(threadId));
}

export async function listRuns(target: LookupTarget | string, options: RunListOptions): Promise<RunRecord[]> {
  return (await withRunsReadOnly(target, (runs) => runs.list(options))) ?? [];
}

/** Reads the reflection statistics without creating anything; undefined when there is no database or no such table yet. */
export function withStatsReadOnly<T>(target: LookupTarget | string, read: (stats: RunStatsStore) => Promise<T>): Promise<T | undefined> {
  return withTableReadOnly(targetOf(target), "reflections", (parts) => read(parts.stats));
}

/** Reads the audit trail without creating anything; undefined when there is no database or no audit table yet. */
export function withAuditReadOnly<T>(target: LookupTarget | string, read: (audit: AuditStore) => Promise<T>): Promise<T | undefined> {
  return withTableReadOnly(targetOf(target), "audit", (parts) => read(parts.audit));
}
