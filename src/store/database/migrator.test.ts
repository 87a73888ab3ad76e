import { copyFileSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { isTroupeError } from "../../core/errors.js";
import { openSqliteStore, type SqliteStore } from "../index.js";
import { migrationsOf, pendingMigrations, schemaVersionOf } from "./migrator.js";

/** troupe.db as the troupe of merge-work4 left it: two finished runs on one thread (test/fixtures/databases/make-fixtures.mjs). */
const FIXTURE = fileURLToPath(new URL("../../../test/fixtures/databases/sqlite-schema-18.db", import.meta.url));

const directories: string[] = [];
const stores: SqliteStore[] = [];

afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

/** A data directory holding a copy of the fixture as its troupe.db. */
function fixtureDirectory(): string {
  const directory = mkdtempSync(path.join(tmpdir(), "troupe-upgrade-"));
  directories.push(directory);
  copyFileSync(FIXTURE, path.join(directory, "troupe.db"));
  return directory;
}

function versionsOf(file: string): number[] {
  const db = new Database(file, { readonly: true });
  try {
    return (db.prepare("SELECT version FROM schema_version ORDER BY version").all() as Array<{ version: number }>).map((row) => row.version);
  } finally {
    db.close();
  }
}

/** The versions this troupe ships (a merge adds its own here), and the frozen fixture's. */
const SQLITE_VERSIONS = [1, 2, 3, 4, 5, 6, 7, 8, 10, 14, 16, 18, 19, 20, 21, 22, 23, 25, 27, 28, 29];
const POSTGRES_VERSIONS = [1, 2, 5, 6, 7, 8, 9, 10, 12, 14, 16, 17, 18];
const FIXTURE_VERSIONS = [1, 2, 3, 4, 5, 6, 7, 8, 10, 14, 16, 18];
const latest = (versions: number[]): number => Math.max(...versions);

describe("the migrations", () => {
  it("are one file a version, each version kept as it was shipped", () => {
    expect(migrationsOf("sqlite").map((migration) => migration.version)).toEqual(SQLITE_VERSIONS);
    expect(migrationsOf("postgres").map((migration) => migration.version)).toEqual(POSTGRES_VERSIONS);
    expect(schemaVersionOf("sqlite")).toBe(latest(SQLITE_VERSIONS));
    expect(schemaVersionOf("postgres")).toBe(latest(POSTGRES_VERSIONS));
    for (const dialect of ["sqlite", "postgres"] as const) {
      const folder = fileURLToPath(new URL(`../migrations/${dialect}/`, import.meta.url));
      expect(readdirSync(folder).filter((file) => file.endsWith(".sql"))).toHaveLength(migrationsOf(dialect).length);
    }
  });

  it("plans by set: only the versions a database lacks, in order, whatever order they were applied in", () => {
    expect(pendingMigrations("sqlite", SQLITE_VERSIONS.filter((version) => version !== 14).reverse(), "db").map((migration) => migration.version)).toEqual([14]);
    expect(pendingMigrations("postgres", [...POSTGRES_VERSIONS].reverse(), "db")).toEqual([]);
    expect(pendingMigrations("sqlite", [], "db")).toHaveLength(SQLITE_VERSIONS.length);
  });
});

/** Every table, index and trigger a database holds, with the SQL that made it. */
function schemaOf(file: string): unknown[] {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' AND name NOT LIKE 'checkpoints%' AND name NOT LIKE 'writes%' ORDER BY name").all();
  } finally {
    db.close();
  }
}

describe("a database made by an earlier troupe", () => {
  it("has, once opened, the schema a new database gets from the migration files, table for table", async () => {
    const fresh = mkdtempSync(path.join(tmpdir(), "troupe-fresh-"));
    directories.push(fresh);
    await openSqliteStore(fresh).close();
    const directory = fixtureDirectory();
    await openSqliteStore(directory).close();
    expect(schemaOf(path.join(fresh, "troupe.db"))).toEqual(schemaOf(path.join(directory, "troupe.db")));
  });

  it("opens with the versions shipped since applied (20: threads by owner, 23: MCP credentials, 25: runs by owner and change, 27: answers' formats, 28: the Agent Protocol's threads and runs) and reads its runs, their events and their thread's checkpoints", async () => {
    const directory = fixtureDirectory();
    expect(versionsOf(path.join(directory, "troupe.db"))).toEqual(FIXTURE_VERSIONS);
    const store = openSqliteStore(directory);
    stores.push(store);
    const runs = await store.runs.list({ threadId: "fixture-thread" });
    expect(runs.map((run) => [run.task, run.status, run.stopReason])).toEqual([
      ["compute 12*12", "completed", "completed"],
      ["compute 17% of 2,340 and save it to result.txt", "completed", "completed"],
    ]);
    expect(runs[1]?.answer).toMatch(/397\.8/);
    expect(await store.runs.listUnsettled()).toEqual([]);
    const events = await store.events.list(runs[1]?.id ?? "");
    expect(events.length).toBeGreaterThan(5);
    expect(events[0]?.seq).toBe(1);
    const tuple = await store.checkpointer.getTuple({ configurable: { thread_id: "fixture-thread" } });
    expect(tuple?.checkpoint.id).toBeTruthy();
    expect((await store.audit.list({ runId: runs[1]?.id })).length).toBeGreaterThan(0);
    // A new run goes on the same thread, after the old ones.
    await store.runs.create({ id: "run-new", threadId: "fixture-thread", task: "more", status: "queued", request: { task: "more" }, pid: null, host: null });
    expect((await store.runs.latestForThread("fixture-thread"))?.id).toBe("run-new");
    // A run recorded before answers carried their format has none.
    expect(runs[1]?.answerFormat).toBeNull();
    await store.close();
    expect(versionsOf(path.join(directory, "troupe.db"))).toEqual(SQLITE_VERSIONS);
  });

  it("moves an API key's threads into its own namespace (20), with their checkpoints, writes, audit rows and forks' origins; the unkeyed owners keep their names", async () => {
    const directory = fixtureDirectory();
    const file = path.join(directory, "troupe.db");
    const db = new Database(file);
    const run = db.prepare("INSERT INTO runs (id, thread_id, task, status, request, created_at, updated_at, owner, forked_from) VALUES (?, ?, 't', 'completed', '{}', ?, ?, ?, ?)");
    run.run("run-a1", "daily", 1, 1, "alice", null);
    run.run("run-a2", "daily", 2, 2, "alice", null);
    // "shared": bob's run first, then alice's (main refused the second owner through the API, but a race could make it): the checkpoints go with the latest.
    run.run("run-b1", "shared", 3, 3, "bob", null);
    run.run("run-a3", "shared", 4, 4, "alice", null);
    run.run("run-l1", "mine", 5, 5, "local", null);
    run.run("run-a4", "forked", 6, 6, "alice", JSON.stringify({ runId: "run-a2", threadId: "daily", checkpointId: "c1" }));
    // The fixture thread's checkpoints and writes, copied onto the keyed threads.
    for (const thread of ["daily", "shared"]) {
      db.prepare("INSERT INTO checkpoints SELECT ?, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints WHERE thread_id = 'fixture-thread'").run(thread);
      db.prepare("INSERT INTO writes SELECT ?, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value FROM writes WHERE thread_id = 'fixture-thread'").run(thread);
    }
    const audit = db.prepare("INSERT INTO audit (at, run_id, thread_id, agent, tool, args, decision, status, level, duration_ms, attempts, cached, principal) VALUES (1, ?, ?, 'execute', 'calculator', '{}', 'allow', 'ok', 'NONE', 1, 1, 0, ?)");
    audit.run("run-a1", "daily", "alice");
    audit.run("run-l1", "mine", "local");
    db.close();

    const store = openSqliteStore(directory);
    stores.push(store);
    const threadOf = async (id: string) => (await store.runs.get(id))?.threadId;
    expect(await Promise.all(["run-a1", "run-a2", "run-b1", "run-a3", "run-l1", "run-a4"].map(threadOf))).toEqual(["alice/daily", "alice/daily", "bob/shared", "alice/shared", "mine", "alice/forked"]);
    expect((await store.runs.get("run-a4"))?.forkedFrom).toEqual({ runId: "run-a2", threadId: "alice/daily", checkpointId: "c1" });
    expect((await store.runs.list({ threadId: "fixture-thread" })).map((item) => item.owner)).toEqual([null, null]);
    const count = (table: string, thread: string) => (store.db.prepare(`SELECT count(*) AS n FROM ${table} WHERE thread_id = ?`).get(thread) as { n: number }).n;
    expect([count("checkpoints", "alice/daily"), count("checkpoints", "daily"), count("checkpoints", "alice/shared"), count("checkpoints", "bob/shared"), count("checkpoints", "fixture-thread")]).toEqual([14, 0, 14, 0, 14]);
    expect([count("writes", "alice/daily"), count("writes", "daily"), count("writes", "alice/shared")]).toEqual([143, 0, 143]);
    expect((await store.checkpointer.getTuple({ configurable: { thread_id: "alice/daily" } }))?.checkpoint.id).toBeTruthy();
    expect(await store.checkpointer.getTuple({ configurable: { thread_id: "daily" } })).toBeUndefined();
    expect((await store.audit.list({ runId: "run-a1" }))[0]?.threadId).toBe("alice/daily");
    expect((await store.audit.list({ runId: "run-l1" }))[0]?.threadId).toBe("mine");
  });

  it("applies a version it lacks (14 here, as if written before provenance labels) and keeps its rows", async () => {
    const directory = fixtureDirectory();
    const file = path.join(directory, "troupe.db");
    const db = new Database(file);
    db.exec("ALTER TABLE stash DROP COLUMN label; ALTER TABLE stash_items DROP COLUMN label; DELETE FROM schema_version WHERE version = 14");
    db.close();
    const store = openSqliteStore(directory);
    stores.push(store);
    expect(versionsOf(file)).toEqual(SQLITE_VERSIONS);
    const columns = (store.db.prepare("PRAGMA table_info(stash)").all() as Array<{ name: string }>).map((column) => column.name);
    expect(columns).toContain("label");
    expect(await store.runs.count({ threadId: "fixture-thread" })).toBe(2);
  });

  it("is refused, untouched, when a newer troupe wrote it (database_too_new)", () => {
    const directory = fixtureDirectory();
    const file = path.join(directory, "troupe.db");
    const db = new Database(file);
    db.prepare("INSERT INTO schema_version (version) VALUES (99)").run();
    db.close();
    const size = statSync(file).size;
    let caught: unknown;
    try {
      stores.push(openSqliteStore(directory));
    } catch (error) {
      caught = error;
    }
    expect(isTroupeError(caught) && caught.code).toBe("database_too_new");
    expect((caught as Error).message).toBe(`${file} has schema version 99, newer than this troupe knows (${latest(SQLITE_VERSIONS)}): upgrade troupe, or use another database`);
    expect(statSync(file).size).toBe(size);
    expect(versionsOf(file)).toEqual([...FIXTURE_VERSIONS, 99]);
  });
});
