import type { Statement } from "better-sqlite3";
import { NotFoundError } from "../../core/errors.js";
import type { Label } from "../../core/provenance.js";
import { labelColumn, type LabelledEntry, type MapItemRecord, parseStashRef, type StashEntry, type StashKey, serializeStashValue, stashRef, storedLabel } from "../../core/stash.js";
import type { Sqlite } from "../database/sqlite.js";
import { TurnBatch } from "../turn-batch.js";
import { ItemRow, type StashStore } from "./contract.js";

type ItemValues = [
  runId: string,
  subtaskId: string,
  index: number,
  fingerprint: string,
  round: number,
  status: string,
  input: string,
  output: string | null,
  error: string | null,
  durationMs: number,
  createdAt: number,
  label: string | null,
];

type PutValues = [runId: string, subtaskId: string, value: string, bytes: number, createdAt: number, label: string | null];

/** A write waiting for its turn's transaction: a subtask's result, or one item of a map. */
type StashWrite = { kind: "put"; values: PutValues } | { kind: "item"; values: ItemValues };

/**
 * The data stash in SQLite (`stash` and `stash_items` in troupe.db), on its own connection with
 * `synchronous = NORMAL`: a result or a finished map item is committed without an fsync of its
 * own. In WAL mode a commit survives a crash of the process; the checkpoint that later records
 * the subtask's handle is committed after it in the same WAL, whose next sync covers both.
 * Results and items that finish together are committed together (one transaction per turn of
 * the event loop: a wave of subtasks finishing at once made a commit each), `put` and `putItem`
 * resolve only once their row is committed, and a read commits what waits first.
 */
export class SqliteStash implements StashStore {
  readonly #put: Statement<PutValues>;
  readonly #get: Statement<[string, string], { value: string; label: string | null }>;
  readonly #items: Statement<[string, string], unknown>;
  readonly #batch: TurnBatch<StashWrite>;
  readonly #db: Sqlite;
  readonly #copy: Statement<[string, string, string]>;
  readonly #copyItems: Statement<[string, string, string]>;

  constructor(db: Sqlite) {
    this.#db = db;
    this.#copy = db.prepare(
      `INSERT OR REPLACE INTO stash (run_id, subtask_id, value, bytes, created_at, label)
       SELECT ?, subtask_id, value, bytes, created_at, label FROM stash WHERE run_id = ? AND subtask_id IN (SELECT value FROM json_each(?))`,
    );
    this.#copyItems = db.prepare(
      `INSERT OR REPLACE INTO stash_items (run_id, subtask_id, item_index, fingerprint, round, status, input, output, error, duration_ms, created_at, label)
       SELECT ?, subtask_id, item_index, fingerprint, round, status, input, output, error, duration_ms, created_at, label FROM stash_items
       WHERE run_id = ? AND subtask_id IN (SELECT value FROM json_each(?))`,
    );
    this.#put = db.prepare(
      `INSERT INTO stash (run_id, subtask_id, value, bytes, created_at, label) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (run_id, subtask_id) DO UPDATE SET value = excluded.value, bytes = excluded.bytes, created_at = excluded.created_at, label = excluded.label`,
    );
    this.#get = db.prepare("SELECT value, label FROM stash WHERE run_id = ? AND subtask_id = ?");
    const putItem = db.prepare<ItemValues>(
      `INSERT OR REPLACE INTO stash_items (run_id, subtask_id, item_index, fingerprint, round, status, input, output, error, duration_ms, created_at, label)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.#items = db.prepare(
      "SELECT item_index, fingerprint, round, status, input, output, error, duration_ms, label FROM stash_items WHERE run_id = ? AND subtask_id = ? ORDER BY item_index",
    );
    const writeAll = db.transaction((writes: StashWrite[]) => {
      for (const write of writes) {
        if (write.kind === "put") this.#put.run(...write.values);
        else putItem.run(...write.values);
      }
    });
    this.#batch = new TurnBatch((writes) => {
      if (!db.open) throw new Error("the stash is closed");
      writeAll(writes);
    });
  }

  flush(): Promise<void> {
    return this.#batch.flush();
  }

  async put(key: StashKey, value: unknown, label: Label): Promise<StashEntry> {
    const { text, bytes } = serializeStashValue(value);
    await this.#batch.add({ kind: "put", values: [key.runId, key.subtaskId, text, bytes, Date.now(), labelColumn(label)] });
    return { ref: stashRef(key), bytes };
  }

  async get(ref: string): Promise<unknown> {
    return (await this.read(ref)).value;
  }

  async read(ref: string): Promise<LabelledEntry> {
    const key = parseStashRef(ref);
    // The write is synchronous: done before the read below.
    void this.#batch.flush();
    const row = this.#get.get(key.runId, key.subtaskId);
    if (!row) throw new NotFoundError("stash_missing", `nothing is stashed under ${ref}`, { ref });
    return { value: JSON.parse(row.value) as unknown, label: storedLabel(row.label) };
  }

  putItem(key: StashKey, item: MapItemRecord): Promise<void> {
    const output = item.output === undefined ? null : serializeStashValue(item.output).text;
    const values: ItemValues = [
      key.runId,
      key.subtaskId,
      item.index,
      item.fingerprint,
      item.round,
      item.status,
      serializeStashValue(item.input).text,
      output,
      item.error ?? null,
      Math.round(item.durationMs),
      Date.now(),
      labelColumn(item.label),
    ];
    return this.#batch.add({ kind: "item", values });
  }

  async copyResults(fromRunId: string, toRunId: string, subtaskIds: readonly string[]): Promise<number> {
    if (subtaskIds.length === 0) return 0;
    void this.#batch.flush();
    const ids = JSON.stringify(subtaskIds);
    return this.#db.transaction(() => {
      const copied = this.#copy.run(toRunId, fromRunId, ids).changes;
      this.#copyItems.run(toRunId, fromRunId, ids);
      return copied;
    })();
  }

  async items(key: StashKey): Promise<MapItemRecord[]> {
    // The write is synchronous: done before the read below.
    void this.#batch.flush();
    return this.#items.all(key.runId, key.subtaskId).map((row) => ItemRow.parse(row));
  }
}
