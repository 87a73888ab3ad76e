import { closeSync, fdatasync, fstatSync, openSync } from "node:fs";
import { promisify } from "node:util";
import type { Statement } from "better-sqlite3";
import type { Sqlite } from "./sqlite.js";

const datasync = promisify(fdatasync);

/** The WAL file's descriptor, kept open between syncs (a holder the finalizer can close without keeping the WalSync alive). */
interface OpenWal {
  fd: number | undefined;
}

/** Closes the descriptor of a WalSync collected without `close()` (its connection was closed and dropped). */
const descriptors = new FinalizationRegistry<OpenWal>((held) => {
  if (held.fd !== undefined) closeSync(held.fd);
});

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
 * The WAL file stays open between syncs: a sync is one trip to a libuv thread (the fdatasync),
 * not three (open, fdatasync, close), and each trip waits for a turn of a busy event loop to come
 * back — a request acknowledged after its commit's sync waited for all three. SQLite keeps the
 * WAL file while a connection is open (it resets it in place after a checkpoint); should the file
 * at the path be another one (the kept one has no name left), the next sync opens that one. `close()` lets
 * the descriptor go once the syncs under way are done.
 *
 * A failed sync fails every later one too, with its error. After a failed fsync the kernel may
 * have dropped the unwritten pages and cleared the error, so a later fsync can succeed without
 * the earlier frames on disk; and SQLite's recovery ignores every WAL frame after a damaged one
 * (the frames' checksums chain), so a commit that a later sync "covered" could still be lost to a
 * power cut. Nothing is acknowledged as durable once a sync has failed: the writes that wait
 * reject, and the process must be restarted (the WAL is recovered from what reached the disk).
 */
export class WalSync {
  readonly #file: string;
  readonly #wal: OpenWal = { fd: undefined };
  #closed = false;
  #running: Promise<void> | undefined;
  #next: Promise<void> | undefined;
  #failure: unknown;
  #failed = false;

  constructor(walFile: string) {
    this.#file = walFile;
    descriptors.register(this, this.#wal, this);
  }

  /** The WAL sync of a connection's database, or none for a database without a WAL file (in memory, another journal mode). */
  static of(db: Sqlite): WalSync | undefined {
    if (db.memory || db.name === "" || String(db.pragma("journal_mode", { simple: true })).toLowerCase() !== "wal") return undefined;
    return new WalSync(`${db.name}-wal`);
  }

  /** The error of the sync that failed, once one has: every later sync rejects with it. */
  get failure(): { error: unknown } | undefined {
    return this.#failed ? { error: this.#failure } : undefined;
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

  /** Lets the WAL file's descriptor go, once the syncs under way are done; a later sync opens the file for itself. */
  close(): void {
    this.#closed = true;
    descriptors.unregister(this);
    this.#release();
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
        if (this.#closed) this.#release();
      });
    this.#running = running;
    return running;
  }

  /** One sync of the WAL file (one at a time: `#start` runs after the sync before it settled). */
  async #syncFile(): Promise<void> {
    const fd = this.#descriptor();
    // No WAL file: nothing was written since the last connection closed (closing checkpoints the WAL into the database, synced).
    if (fd === undefined) return;
    await datasync(fd);
  }

  /**
   * The WAL file's descriptor: the one kept while its file still has a name (SQLite resets the WAL
   * in place; a WAL removed, or replaced at the path, has none left), else the file now at the
   * path; undefined without a file. An fstat of the kept descriptor, not a stat of the path: the
   * path's lookup was most of a sync's cost on the event loop.
   */
  #descriptor(): number | undefined {
    // fstat and open are metadata calls (no disk write); made here, between two syncs, no descriptor is in use by another thread.
    if (this.#wal.fd !== undefined && fstatSync(this.#wal.fd).nlink > 0) return this.#wal.fd;
    this.#closeDescriptor();
    try {
      this.#wal.fd = openSync(this.#file, "r");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
    return this.#wal.fd;
  }

  /** Closed: the descriptor goes as soon as no sync is running or waiting to run. */
  #release(): void {
    if (this.#running === undefined && this.#next === undefined) this.#closeDescriptor();
  }

  #closeDescriptor(): void {
    const fd = this.#wal.fd;
    this.#wal.fd = undefined;
    if (fd !== undefined) closeSync(fd);
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
  let result: T;
  try {
    result = durable ? unsynced(durable, write) : write();
  } catch (error) {
    return Promise.reject(error);
  }
  return durable ? durable.sync.sync().then(() => result) : Promise.resolve(result);
}

/** `write` committed at `synchronous = NORMAL`, the connection's own level restored after, whatever happens. */
function unsynced<T>(durable: Durable, write: () => T): T {
  durable.relaxed.run();
  try {
    return write();
  } finally {
    durable.restore.run();
  }
}

/**
 * Runs `write` like `durably`, but resolves with its result once it is committed, not once it is
 * on disk: the WAL's sync starts at once, on a libuv thread, and nothing waits for it. The write
 * survives a killed process when this resolves; a power cut before the sync ends can lose it. For
 * writes whose loss to a power cut costs only work done again, never an effect: a run's
 * checkpoints, which `onDisk` puts on disk before any call with an effect runs (tools/write-ahead.ts)
 * and which every later synced commit covers (a run's status). Once a sync has failed it rejects,
 * having written nothing: the process acknowledges nothing more (see WalSync).
 */
export function committed<T>(db: Sqlite, write: () => T): Promise<T> {
  const durable = db.inTransaction ? null : durableOf(db);
  if (!durable) return durably(db, write);
  if (durable.sync.failure !== undefined) return Promise.reject(durable.sync.failure.error);
  let result: T;
  try {
    result = unsynced(durable, write);
  } catch (error) {
    return Promise.reject(error);
  }
  // Its failure is kept by the WalSync: every later sync, and so every later acknowledgement, rejects with it.
  durable.sync.sync().catch(() => undefined);
  return Promise.resolve(result);
}

/**
 * Resolves once everything committed to the database's file so far, by any of its connections, is
 * on disk (an fdatasync of the WAL started after this call): what a call with an effect waits for,
 * so that a power cut can never lose the steps that led to it. At once for a database without a
 * WAL or with no synced connection (in memory).
 */
export function onDisk(db: Sqlite): Promise<void> {
  const durable = durableOf(db);
  return durable ? durable.sync.sync() : Promise.resolve();
}

/** Before a connection closes: its WAL sync lets the file's descriptor go once the syncs under way are done. */
export function releaseWal(db: Sqlite): void {
  durables.get(db)?.sync.close();
}
