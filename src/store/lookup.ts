import { AuditStore } from "./audit-store.js";
import { openDatabaseReadOnly, type Sqlite } from "./database.js";
import { type RunListOptions, type RunRecord, RunStore } from "./run-store.js";

/** Reads the database without creating or migrating anything; undefined when there is no database or no such table yet. */
function withTableReadOnly<T>(directory: string, table: "runs" | "audit", read: (db: Sqlite) => T): T | undefined {
  const db = openDatabaseReadOnly(directory);
  if (!db) return undefined;
  try {
    const exists = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?").get(table);
    if (!exists) return undefined;
    return read(db);
  } finally {
    db.close();
  }
}

/** Reads runs without creating or migrating anything: for lookups that must not write when they fail. */
export function withRunsReadOnly<T>(directory: string, read: (runs: RunStore) => T): T | undefined {
  return withTableReadOnly(directory, "runs", (db) => read(new RunStore(db)));
}

export function latestRunOfThread(directory: string, threadId: string): RunRecord | undefined {
  return withRunsReadOnly(directory, (runs) => runs.latestForThread(threadId));
}

export function listRuns(directory: string, options: RunListOptions): RunRecord[] {
  return withRunsReadOnly(directory, (runs) => runs.list(options)) ?? [];
}

/** Reads the audit trail without creating anything; undefined when there is no database or no audit table yet. */
export function withAuditReadOnly<T>(directory: string, read: (audit: AuditStore) => T): T | undefined {
  return withTableReadOnly(directory, "audit", (db) => read(new AuditStore(db)));
}
