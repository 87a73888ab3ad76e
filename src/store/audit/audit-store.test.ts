import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import type { AuditEntry } from "../../tools/audit.js";
import { DATABASE_FILE } from "../database/sqlite.js";
import { openSqliteStore } from "../index.js";

const made: string[] = [];
afterEach(() => {
  for (const directory of made.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function entry(tool: string): AuditEntry {
  return {
    at: Date.now(),
    runId: "run-1",
    threadId: "thread-1",
    subtaskId: "s1",
    agent: "research",
    tool,
    args: "{}",
    decision: "allowed",
    status: "ok",
    level: "READ",
    grant: null,
    reason: null,
    resultPreview: "ok",
    errorCode: null,
    error: null,
    durationMs: 1,
    attempts: 1,
    cached: false,
  };
}

/** Rows another connection sees: what is committed. */
function committed(directory: string): number {
  const reader = new Database(path.join(directory, DATABASE_FILE), { readonly: true });
  try {
    return (reader.prepare("SELECT COUNT(*) AS n FROM audit").get() as { n: number }).n;
  } finally {
    reader.close();
  }
}

describe("the SQLite audit trail", () => {
  it("commits the rows of one turn together and resolves each record only once its row is committed", async () => {
    const directory = mkdtempSync(path.join(tmpdir(), "troupe-audit-"));
    made.push(directory);
    const store = openSqliteStore(directory);
    try {
      const recorded = Array.from({ length: 50 }, (_, index) => store.audit.record(entry(`tool_${index}`)));
      expect(committed(store.directory)).toBe(0);
      await Promise.all(recorded);
      expect(committed(store.directory)).toBe(50);
      // A read sees rows recorded a moment ago, and closing commits what is still waiting.
      void store.audit.record(entry("late"));
      expect(await store.audit.count()).toBe(51);
      void store.audit.record(entry("at close"));
    } finally {
      await store.close();
    }
    expect(committed(directory)).toBe(52);
  });
});
