import { close, fdatasync, open } from "node:fs";
import { promisify } from "node:util";
import type { Statement } from "better-sqlite3";
import type { Sqlite } from "./sqlite.js";

/**
 * Puts a SQLite database's write-ahead log on disk off the event loop. A commit made at
 * `synchronous = NORMAL` is in the WAL file (it survives a killed process) but not yet synced;
 * `sync()` resolves once an fdatasync of the WAL, started after it was called, is done — on one
 * of libuv's threads, where `synchronous = FULL` would block the event loop for each commit's
 * fsync. A commit followed by `sync()` is as durable as a FULL one when the promise resolves.
 *
 * Calls that come while a sync is running share the next one (their commits may be later than
 * what the running one covers); calls that come before it starts share it too, so a burst of
 * commits costs one or two syncs.
 *
 * A failed sync fails every later one too, with its error. After a failed fsync the kernel may
 * have dropped the unwritten pages and cleared the error, so a later fsync can succeed without
 * the earlier frames on disk; and SQLite's recovery ignores every WAL frame after a damaged one
 * (the frames' checksums chain), so a commit that a later sync "covered" could still be lost to a
 * power cut. Nothing is acknowledged as durable once a sync has failed: the writes that wait
 * reject, and the process must be restarted (the WAL is recovered from what reached the disk).
 */
const openFile = promisify(open);
const syncData = promisify(fdatasync);

/** The WAL file kept open between syncs, closed when its WalSync is collected (its connection gone). */
interface OpenWal {
  fd: number | undefined;
}

const openWals = new FinalizationRegistry<OpenWal>((wal) => {
  if (wal.fd !== undefined) close(wal.fd, () => {});
});

export class WalSync {
  readonly #file: string;
  /**
   * The WAL file's descriptor, opened at the first sync and kept: SQLite reuses the file (same
   * inode) while a connection is open, so opening and closing it for each sync (two more calls
   * into libuv, a quarter of a sync's cost on the event loop) bought nothing.
   */
  readonly #wal: OpenWal = { fd: undefined };
  #running: Promise<void> | undefined;
  #next: Promise<void> | undefined;
  #failure: unknown;
  #failed = false;

  constructor(walFile: string) {
    this.#file = walFile;
    openWals.register(this, this.#wal);
  }

  /** The WAL sync of a connection's database, or none for a database without a WAL file (in memory, another journal mode). */
  static of(db: Sqlite): WalSync | undefined {
    if (db.memory || db.name === "" || String(db.pragma("journal_mode", { simple: true })).toLowerCase() !== "wal") return undefined;
    return new WalSync(`${db.name}-wal`);
  }

  sync(): Promise<void> {
    if (this.#failed) return Promise.reject(this.#failure);
    if (this.#running === undefined) return this.#start();
    this.#next ??= this.#running.then(
      () => this.#start(),
      () => this.#start(),
    );
    return this.#next;
  }

  #start(): Promise<void> {
    this.#next = undefined;
    if (this.#failed) return Promise.reject(this.#failure);
    const running = this.#syncFile()
      .catch((error: unknown) => {
        if (!this.#failed) [this.#failed, this.#failure] = [true, error];
        throw this.#failure;
      })
      .finally(() => {
        if (this.#running === running) this.#running = undefined;
      });
    this.#running = running;
    return running;
  }

  async #syncFile(): Promise<void> {
    const wal = this.#wal;
    if (wal.fd === undefined) {
      try {
        wal.fd = await openFile(this.#file, "r");
      } catch (error) {
        // No WAL file: nothing was written since the last connection closed (closing checkpoints the WAL into the database, synced).
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
        throw error;
      }
    }
    try {
      await syncData(wal.fd);
    } catch (error) {
      // Failed: the descriptor is let go (every later sync fails anyway, see above).
      close(wal.fd, () => {});
      wal.fd = undefined;
      throw error;
    }
  }
}

interface Durable {
  sync: WalSync;
  relaxed: Statement<[]>;
  restore: Statement<[]>;
}

/** Per connection: its WAL's sync (shared by every write of the connection) and its sync level's switches; null without a WAL. */
const durables = new WeakMap<Sqlite, Durable | null>();

function durableOf(db: Sqlite): Durable | null {
  let durable = durables.get(db);
  if (durable === undefined) {
    const sync = WalSync.of(db);
    const level = Number(db.pragma("synchronous", { simple: true }));
    // Only a connection that syncs each commit (FULL = 2, EXTRA = 3) has an fsync to move off the event loop.
    durable = sync && level >= 2 ? { sync, relaxed: db.prepare("PRAGMA synchronous = NORMAL"), restore: db.prepare(`PRAGMA synchronous = ${level}`) } : null;
    durables.set(db, durable);
  }
  return durable;
}

/**
 * Runs `write` (synchronous SQL that commits on `db`, a connection at `synchronous = FULL`) with
 * its commit unsynced, and resolves with what it returned once the WAL is on disk: the commit is
 * as durable as a FULL one when the promise resolves, and its fsync ran on a libuv thread instead
 * of blocking the event loop (every run, request and stream of the process waited for each).
 * The write is made at once, before this returns, as a FULL one was; a reader sees it at once.
 * Inside a transaction, on a connection without a WAL or one that does not sync each commit, the
 * write is made as it is.
 */
export function durably<T>(db: Sqlite, write: () => T): Promise<T> {
  const durable = db.inTransaction ? null : durableOf(db);
  if (!durable) {
    try {
      return Promise.resolve(write());
    } catch (error) {
      return Promise.reject(error);
    }
  }
  let result: T;
  durable.relaxed.run();
  try {
    result = write();
  } catch (error) {
    return Promise.reject(error);
  } finally {
    durable.restore.run();
  }
  return durable.sync.sync().then(() => result);
}
