import { AuditStore } from "./audit-store.js";
import { openDatabaseReadOnly } from "./database.js";
import { type RunListOptions, type RunRecord, RunStore } from "./run-store.js";

/** Reads runs without creating or migrating anything: for lookups that must not write when they fail. */
export function withRunsReadOnly<T>(directory: string, read: (runs: RunStore) => T): T | undefined {
  const db = openDatabaseReadOnly(directory);
  if (!db) return undefined;
  try {
    const hasRuns = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'runs'").get();
    if (!hasRuns) return undefined;
    return read(new RunStore(db));
  } finally {
    db.close();
  }
}

export function latestRunOfThread(directory: string, threadId: string): RunRecord | undefined {
  return withRunsReadOnly(directory, (runs) => runs.latestForThread(threadId));
}

export function listRuns(directory: string, options: RunListOptions): RunRecord[] {
  return withRunsReadOnly(directory, (runs) => runs.list(options)) ?? [];
}

/** Reads the audit trail without creating anything; undefined when there is no database or no audit table yet. */
export function withAuditReadOnly<T>(directory: string, read: (audit: AuditStore) => T): T | undefined {
  const db = openDatabaseReadOnly(directory);
  if (!db) return undefined;
  try {
    const hasAudit = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'audit'").get();
    if (!hasAudit) return undefined;
    return read(new AuditStore(db));
  } finally {
    db.close();
  }
}
