import { mkdtempSync, readdirSync, readlinkSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DATABASE_FILE, openDatabase, openEventConnection } from "./sqlite.js";
import { committed, durably, onDisk, releaseWal, WalSync } from "./wal-sync.js";

/** This process's open descriptors on `file`, as /proc/self/fd names them ("… (deleted)" once unlinked). */
function descriptorsOn(file: string): string[] {
  const targets: string[] = [];
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith(file)) targets.push(target);
    } catch {
      // Closed since the listing (the listing's own descriptor).
    }
  }
  return targets;
}

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

  it("keeps the WAL file open between syncs, opens the file now at the path when it was replaced, and lets it go on close", async () => {
    const walFile = path.join(directory, "store.db-wal");
    writeFileSync(walFile, "frames");
    const sync = new WalSync(walFile);
    await sync.sync();
    await Promise.all([sync.sync(), sync.sync(), sync.sync()]);
    // One descriptor, kept: each sync is one fdatasync on a libuv thread, not an open, an fdatasync and a close.
    expect(descriptorsOn(walFile)).toEqual([walFile]);
    unlinkSync(walFile);
    writeFileSync(walFile, "new frames");
    await sync.sync();
    expect(descriptorsOn(walFile)).toEqual([walFile]);
    // Closed while a sync runs: the descriptor goes once it is done; a later sync opens the file for itself only.
    const running = sync.sync();
    sync.close();
    await running;
    expect(descriptorsOn(walFile)).toEqual([]);
    await sync.sync();
    expect(descriptorsOn(walFile)).toEqual([]);
    // No WAL file: nothing to sync.
    unlinkSync(walFile);
    await expect(new WalSync(walFile).sync()).resolves.toBeUndefined();
  });

  it("lets a store connection's WAL go when the connection is released, after the writes waiting for a sync", async () => {
    const db = openDatabase(directory);
    db.exec("CREATE TABLE items (name TEXT)");
    const walFile = path.join(directory, `${DATABASE_FILE}-wal`);
    await durably(db, () => db.prepare("INSERT INTO items VALUES ('a')").run());
    // SQLite's own descriptor, and the sync's.
    expect(descriptorsOn(walFile)).toEqual([walFile, walFile]);
    const last = durably(db, () => db.prepare("INSERT INTO items VALUES ('b')").run().changes);
    releaseWal(db);
    db.close();
    await expect(last).resolves.toBe(1);
    expect(descriptorsOn(walFile)).toEqual([]);
    const reopened = openDatabase(directory);
    expect(reopened.prepare("SELECT COUNT(*) AS n FROM items").get()).toEqual({ n: 2 });
    reopened.close();
  });
});

describe("committed and onDisk", () => {
  it("resolves with the write once committed while its sync runs, and onDisk waits for a sync after everything before it", async () => {
    const db = openDatabase(directory);
    const relaxed = openEventConnection(directory);
    db.exec("CREATE TABLE items (name TEXT)");
    const walFile = path.join(directory, `${DATABASE_FILE}-wal`);
    relaxed.prepare("SELECT COUNT(*) FROM items").get();
    const sqlites = descriptorsOn(walFile).length;
    await expect(committed(db, () => db.prepare("INSERT INTO items VALUES ('a')").run().changes)).resolves.toBe(1);
    // Committed (another connection reads it), the connection back at FULL, and a sync of the WAL under way:
    // its descriptor is open beside SQLite's, though nothing waited for it.
    const reader = new Database(path.join(directory, DATABASE_FILE), { readonly: true });
    expect(reader.prepare("SELECT name FROM items").all()).toEqual([{ name: "a" }]);
    reader.close();
    expect(db.pragma("synchronous", { simple: true })).toBe(2);
    expect(descriptorsOn(walFile)).toHaveLength(sqlites + 1);
    // Another connection's unsynced commit is in the same file: the synced connection's onDisk covers it.
    relaxed.prepare("INSERT INTO items VALUES ('r')").run();
    await expect(onDisk(db)).resolves.toBeUndefined();
    // Without a WAL (in memory), or inside a transaction, committed is durably: the write as it is.
    const memory = new Database(":memory:");
    await expect(committed(memory, () => memory.prepare("SELECT 7 AS seven").get())).resolves.toEqual({ seven: 7 });
    await expect(onDisk(memory)).resolves.toBeUndefined();
    memory.close();
    relaxed.close();
    db.close();
  });

  it("once a sync of the connection's WAL has failed, writes nothing more and rejects, as onDisk does", async () => {
    const db = openDatabase(directory);
    db.exec("CREATE TABLE items (name TEXT)");
    await committed(db, () => db.prepare("INSERT INTO items VALUES ('a')").run());
    await onDisk(db);
    // The WAL's path now leads to a file that cannot be synced (fdatasync on /dev/null: EINVAL); SQLite keeps its own descriptor.
    const walFile = path.join(directory, `${DATABASE_FILE}-wal`);
    unlinkSync(walFile);
    symlinkSync("/dev/null", walFile);
    await expect(committed(db, () => db.prepare("INSERT INTO items VALUES ('b')").run().changes)).resolves.toBe(1);
    await expect(onDisk(db)).rejects.toMatchObject({ code: "EINVAL" });
    await expect(committed(db, () => db.prepare("INSERT INTO items VALUES ('c')").run().changes)).rejects.toMatchObject({ code: "EINVAL" });
    expect(db.prepare("SELECT name FROM items ORDER BY name").all()).toEqual([{ name: "a" }, { name: "b" }]);
    releaseWal(db);
    db.close();
  });
});
