import { mkdtempSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DATABASE_FILE, openDatabase, openEventConnection } from "./sqlite.js";
import { durably, WalSync } from "./wal-sync.js";

let directory: string;
beforeEach(() => {
  directory = mkdtempSync(path.join(tmpdir(), "troupe-wal-sync-"));
});
afterEach(() => {
  rmSync(directory, { recursive: true, force: true });
});

describe("durably", () => {
  it("makes the write at once, resolves with its result once synced, and leaves the connection at FULL", async () => {
    const db = openDatabase(directory);
    db.exec("CREATE TABLE items (name TEXT NOT NULL UNIQUE)");
    const insert = db.prepare("INSERT INTO items (name) VALUES (?)");
    const written = durably(db, () => insert.run("first").changes);
    // Committed before durably returned: another connection reads it.
    const reader = new Database(path.join(directory, DATABASE_FILE), { readonly: true });
    expect(reader.prepare("SELECT name FROM items").all()).toEqual([{ name: "first" }]);
    expect(db.pragma("synchronous", { simple: true })).toBe(2);
    await expect(written).resolves.toBe(1);
    // Several in one turn share the syncs, and each resolves.
    await expect(Promise.all(["a", "b", "c"].map((name) => durably(db, () => insert.run(name).changes)))).resolves.toEqual([1, 1, 1]);
    reader.close();
    db.close();
  });

  it("rejects with the write's error, having written nothing, and restores FULL", async () => {
    const db = openDatabase(directory);
    db.exec("CREATE TABLE items (name TEXT NOT NULL UNIQUE)");
    const insertTwo = db.transaction(() => {
      db.prepare("INSERT INTO items (name) VALUES ('x')").run();
      db.prepare("INSERT INTO items (name) VALUES ('x')").run();
    });
    await expect(durably(db, insertTwo)).rejects.toThrow(/UNIQUE/);
    expect(db.prepare("SELECT COUNT(*) AS n FROM items").get()).toEqual({ n: 0 });
    expect(db.pragma("synchronous", { simple: true })).toBe(2);
    db.close();
  });

  it("leaves a connection that does not sync each commit, a transaction's writes and an in-memory database as they are", async () => {
    const db = openDatabase(directory);
    const relaxed = openEventConnection(directory);
    relaxed.exec("CREATE TABLE IF NOT EXISTS items (name TEXT)");
    await expect(durably(relaxed, () => relaxed.prepare("INSERT INTO items VALUES ('r')").run().changes)).resolves.toBe(1);
    expect(relaxed.pragma("synchronous", { simple: true })).toBe(1);
    // Inside a transaction the outer commit decides: the level is not switched under it.
    const levels: unknown[] = [];
    let inner: Promise<number> | undefined;
    db.transaction(() => {
      inner = durably(db, () => levels.push(db.pragma("synchronous", { simple: true })));
    })();
    await inner;
    expect(levels).toEqual([2]);
    const memory = new Database(":memory:");
    await expect(durably(memory, () => memory.prepare("SELECT 7 AS seven").get())).resolves.toEqual({ seven: 7 });
    memory.close();
    relaxed.close();
    db.close();
  });

  it("once a sync has failed, fails every later one with its error, though the file could be synced again", async () => {
    // The WAL's path first leads to a file that cannot be synced (fdatasync on /dev/null: EINVAL), then to one that can.
    const walFile = path.join(directory, "store.db-wal");
    symlinkSync("/dev/null", walFile);
    const sync = new WalSync(walFile);
    await expect(sync.sync()).rejects.toMatchObject({ code: "EINVAL" });
    unlinkSync(walFile);
    writeFileSync(walFile, "frames");
    await expect(new WalSync(walFile).sync()).resolves.toBeUndefined();
    // The commits a later sync would cover may follow frames the failed one lost: none is acknowledged.
    await expect(sync.sync()).rejects.toMatchObject({ code: "EINVAL" });
    await expect(Promise.all([sync.sync(), sync.sync()])).rejects.toMatchObject({ code: "EINVAL" });
  });

  it("keeps the WAL file open from one sync to the next: a later sync syncs the file it opened, whatever its path leads to now", async () => {
    const walFile = path.join(directory, "kept.db-wal");
    writeFileSync(walFile, "frames");
    const sync = new WalSync(walFile);
    await expect(sync.sync()).resolves.toBeUndefined();
    // The path now leads to a file that cannot be synced; the descriptor opened first still can.
    unlinkSync(walFile);
    symlinkSync("/dev/null", walFile);
    await expect(sync.sync()).resolves.toBeUndefined();
  });
});
