import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { sourceOf, TRUSTED, UNREADABLE_LABEL, untrustedLabel } from "../../core/provenance.js";
import { MemoryStash, type Stash, UNLABELLED } from "../../core/stash.js";
import { openSqliteStore, type Store } from "../index.js";
import { migrationsOf } from "../database/migrator.js";

const stores: Store[] = [];
const directories: string[] = [];
afterEach(() => {
  for (const store of stores.splice(0)) void store.close();
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function sqliteStash(): Stash {
  const directory = mkdtempSync(path.join(tmpdir(), "troupe-stash-"));
  directories.push(directory);
  const store = openSqliteStore(directory);
  stores.push(store);
  return store.stash;
}

// The same contract for every implementation of the Stash interface.
describe.each([
  ["SqliteStash", sqliteStash],
  ["MemoryStash", () => new MemoryStash()],
])("%s", (_name, create: () => Stash) => {
  const key = { runId: "run-1", subtaskId: "s1" };

  it("keeps a result by run and subtask, returns a handle and its size, and replaces it on a redo", async () => {
    const stash = create();
    const value = { users: [{ id: "u1", name: "Ada" }], note: "naïve" };
    const entry = await stash.put(key, value, TRUSTED);
    expect(entry).toEqual({ ref: "stash:run-1/s1", bytes: Buffer.byteLength(JSON.stringify(value)) });
    expect(await stash.get(entry.ref)).toEqual(value);
    await stash.put(key, "second attempt", TRUSTED);
    expect(await stash.get(entry.ref)).toBe("second attempt");
    expect((await stash.put({ runId: "run-2", subtaskId: "s1" }, null, TRUSTED)).ref).toBe("stash:run-2/s1");
    expect(await stash.get(entry.ref)).toBe("second attempt");
    expect((await stash.put({ runId: "run-3", subtaskId: "s1" }, undefined, TRUSTED)).bytes).toBe(4);
  });

  it("refuses a handle with nothing behind it", async () => {
    const stash = create();
    await expect(stash.get("stash:run-9/s9")).rejects.toThrow("nothing is stashed under stash:run-9/s9");
    await expect(stash.get("s1")).rejects.toThrow('"s1" is not a stash reference');
  });

  it("keeps map items by index, replacing an index written again", async () => {
    const stash = create();
    const base = { fingerprint: "f", round: 0, durationMs: 3, label: TRUSTED };
    await stash.putItem(key, { ...base, index: 2, status: "success", input: { id: "u3" }, output: [1, 2] });
    await stash.putItem(key, { ...base, index: 0, status: "error", input: "u1", error: "timeout" });
    await stash.putItem(key, { ...base, index: 0, round: 1, status: "success", input: "u1", output: null });
    expect(await stash.items(key)).toEqual([
      { ...base, index: 0, round: 1, status: "success", input: "u1", output: null },
      { ...base, index: 2, status: "success", input: { id: "u3" }, output: [1, 2] },
    ]);
    expect(await stash.items({ runId: "run-1", subtaskId: "s2" })).toEqual([]);
  });
});

describe("the SQLite stash", () => {
  it("survives closing and reopening the data directory (migration 2 creates its tables once)", async () => {
    const directory = mkdtempSync(path.join(tmpdir(), "troupe-stash-"));
    directories.push(directory);
    const first = openSqliteStore(directory);
    const { ref } = await first.stash.put({ runId: "r", subtaskId: "s" }, { big: "x".repeat(100_000) }, TRUSTED);
    await first.close();
    const second = openSqliteStore(directory);
    stores.push(second);
    expect(((await second.stash.get(ref)) as { big: string }).big).toHaveLength(100_000);
    const versions = second.db.prepare("SELECT version FROM schema_version ORDER BY version").all() as Array<{ version: number }>;
    expect(versions.map((row) => row.version)).toEqual(migrationsOf("sqlite").map((migration) => migration.version));
  });

  it("reads a label it cannot parse — malformed, oversized, or forged as trusted in the wrong shape — as untrusted, and a missing one as unlabelled", async () => {
    const directory = mkdtempSync(path.join(tmpdir(), "troupe-stash-"));
    directories.push(directory);
    const store = openSqliteStore(directory);
    stores.push(store);
    const web = untrustedLabel([sourceOf("web", "https://example.test/")]);
    await store.stash.put({ runId: "r", subtaskId: "ok" }, 1, web);
    const rows: Array<[string, string | null]> = [
      ["null", null],
      ["bad", "{not json"],
      ["huge", JSON.stringify({ trust: "untrusted", sources: [{ kind: "web", name: "x".repeat(9_000) }] })],
      ["extra", JSON.stringify({ trust: "trusted", sources: [] })],
      ["kind", JSON.stringify({ trust: "trusted-by-tool" })],
    ];
    for (const [subtask, label] of rows) {
      store.db.prepare("INSERT INTO stash (run_id, subtask_id, value, bytes, created_at, label) VALUES ('r', ?, '1', 1, 0, ?)").run(subtask, label);
    }
    expect((await store.stash.read("stash:r/ok")).label).toEqual(web);
    expect((await store.stash.read("stash:r/null")).label).toEqual(UNLABELLED);
    for (const subtask of ["bad", "huge", "extra", "kind"]) expect((await store.stash.read(`stash:r/${subtask}`)).label).toEqual(UNREADABLE_LABEL);
  });
});
