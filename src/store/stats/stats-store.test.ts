import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openSqliteStore, type SqliteStore } from "../index.js";

const stores: SqliteStore[] = [];
const directories: string[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function open(directory: string): SqliteStore {
  const store = openSqliteStore(directory);
  stores.push(store);
  return store;
}

describe("SqliteRunStatsStore on the relaxed connection", () => {
  it("keeps durations and verdicts that another connection, and the next process, read back", async () => {
    const directory = mkdtempSync(path.join(tmpdir(), "troupe-stats-"));
    directories.push(directory);
    const store = open(directory);
    await store.stats.recordDuration("research", null, 120);
    await store.stats.recordDuration("research", null, 80);
    await store.stats.recordDuration("execute", "fs.write", -5);
    await store.stats.recordReflection({ runId: "run-1", iteration: 1, type: "validation", passed: false, confidence: 0.4, at: 1 });
    await store.stats.recordReflection({ runId: "run-1", iteration: 1, type: "validation", passed: true, confidence: 0.9, at: 2 });
    // The main (synced) connection sees what the relaxed one committed.
    const seen = store.db.prepare("SELECT agent, tool, count, total_ms FROM duration_stats ORDER BY agent").all();
    expect(seen).toEqual([
      { agent: "execute", tool: "fs.write", count: 1, total_ms: 0 },
      { agent: "research", tool: "", count: 2, total_ms: 200 },
    ]);
    await store.close();
    stores.length = 0;

    const reopened = open(directory);
    expect(await reopened.stats.durations()).toEqual([
      { agent: "execute", tool: "fs.write", count: 1, meanMs: 0 },
      { agent: "research", tool: null, count: 2, meanMs: 100 },
    ]);
    const reflections = await reopened.stats.reflections({ runId: "run-1" });
    expect(reflections.total).toBe(1);
    expect(reflections.passed).toBe(1);
  });
});
