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

describe("the migrations", () => {
  it("are one file a version, each version kept as it was shipped (SQLite at 22, Postgres at 10)", () => {
    expect(migrationsOf("sqlite").map((migration) => migration.version)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 10, 14, 16, 18, 21, 22]);
    expect(migrationsOf("postgres").map((migration) => migration.version)).toEqual([1, 2, 5, 6, 7, 10]);
    expect(schemaVersionOf("sqlite")).toBe(22);
    expect(schemaVersionOf("postgres")).toBe(10);
    for (const dialect of ["sqlite", "postgres"] as const) {
      const folder = fileURLToPath(new URL(`../migrations/${dialect}/`, import.meta.url));
      expect(readdirSync(folder).filter((file) => file.endsWith(".sql"))).toHaveLength(migrationsOf(dialect).length);
    }
  });

  it("plans by set: only the versions a database lacks, in order, whatever order they were applied in", () => {
    expect(pendingMigrations("sqlite", [1, 2, 3, 4, 5, 6, 7, 8, 10, 16, 18, 21, 22], "db").map((migration) => migration.version)).toEqual([14]);
    expect(pendingMigrations("postgres", [7, 1, 2, 6, 5, 10], "db")).toEqual([]);
    expect(pendingMigrations("postgres", [7, 1, 2, 6, 5], "db").map((migration) => migration.version)).toEqual([10]);
    expect(pendingMigrations("sqlite", [], "db")).toHaveLength(14);
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
    const upgraded = fixtureDirectory();
    await openSqliteStore(upgraded).close();
    expect(schemaOf(path.join(fresh, "troupe.db"))).toEqual(schemaOf(path.join(upgraded, "troupe.db")));
  });

  it("opens with what it lacks applied (21, 22) and reads its runs, their events and their thread's checkpoints", async () => {
    const directory = fixtureDirectory();
    expect(versionsOf(path.join(directory, "troupe.db"))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 10, 14, 16, 18]);
    const before = [1, 2, 3, 4, 5, 6, 7, 8, 10, 14, 16, 18, 21, 22];
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
    await store.close();
    expect(versionsOf(path.join(directory, "troupe.db"))).toEqual(before);
  });

  it("applies a version it lacks (14 here, as if written before provenance labels) and keeps its rows", async () => {
    const directory = fixtureDirectory();
    const file = path.join(directory, "troupe.db");
    const db = new Database(file);
    db.exec("ALTER TABLE stash DROP COLUMN label; ALTER TABLE stash_items DROP COLUMN label; DELETE FROM schema_version WHERE version = 14");
    db.close();
    const store = openSqliteStore(directory);
    stores.push(store);
    expect(versionsOf(file)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 10, 14, 16, 18, 21, 22]);
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
    expect((caught as Error).message).toBe(`${file} has schema version 99, newer than this troupe knows (22): upgrade troupe, or use another database`);
    expect(statSync(file).size).toBe(size);
    expect(versionsOf(file)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 10, 14, 16, 18, 99]);
  });
});
