import type { Statement } from "better-sqlite3";
import { z } from "zod";
import { NotFoundError } from "../core/errors.js";
import type { Label } from "../core/provenance.js";
import { labelColumn, type LabelledEntry, type MapItemRecord, parseStashRef, type Stash, type StashEntry, type StashKey, serializeStashValue, stashRef, storedLabel } from "../core/stash.js";
import type { Sqlite } from "./database.js";
import { TurnBatch } from "./turn-batch.js";

/** A stored map item (either database), validated on the way out. */
export const ItemRow = z
  .object({
    item_index: z.number().int(),
    fingerprint: z.string(),
    round: z.number().int(),
    status: z.enum(["success", "error"]),
    input: z.string(),
    output: z.string().nullable(),
    error: z.string().nullable(),
    duration_ms: z.coerce.number(),
    label: z.string().nullable().default(null),
  })
  .transform((row): MapItemRecord => {
    const record: MapItemRecord = {
      index: row.item_index,
      fingerprint: row.fingerprint,
      round: row.round,
      status: row.status,
      input: JSON.parse(row.input) as unknown,
      durationMs: row.duration_ms,
      label: storedLabel(row.label),
    };
    if (row.output !== null) record.output = JSON.parse(row.output) as unknown;
    if (row.error !== null) record.error = row.error;
    return record;
  });

/** The data stash as the store keeps it: the graph's `Stash`, and a flush of the writes waiting. */
export interface StashStore extends Stash {
  /** Commits the items waiting to be written, and tells their writers. */
  flush(): Promise<void>;
  /**
   * Copies subtasks' results (and their map items) from one run to another — a fork keeps the
   * results it does not run again under its own run, so the first run can be deleted. Returns
   * how many results were copied.
   */
  copyResults(fromRunId: string, toRunId: string, subtaskIds: readonly string[]): Promise<number>;
}

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

/**
 * The data stash in SQLite (`stash` and `stash_items` in troupe.db), on its own connection with
 * `synchronous = NORMAL`: a finished map item is committed without an fsync of its own. In WAL
 * mode a commit survives a crash of the process; the checkpoint that later records the
 * subtask's handle is written with `synchronous = FULL`, which syncs these rows with it.
 * Items that finish together are committed together (one transaction per turn of the event
 * loop), and `putItem` resolves only once its row is committed.
 */
export class SqliteStash implements StashStore {
  readonly #put: Statement<[string, string, string, number, number, string | null]>;
  readonly #get: Statement<[string, string], { value: string; label: string | null }>;
  readonly #items: Statement<[string, string], unknown>;
  readonly #batch: TurnBatch<ItemValues>;
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
    const writeItems = db.transaction((rows: ItemValues[]) => {
      for (const row of rows) putItem.run(...row);
    });
    this.#batch = new TurnBatch((rows) => {
      if (!db.open) throw new Error("the stash is closed");
      writeItems(rows);
    });
  }

  flush(): Promise<void> {
    return this.#batch.flush();
  }

  async put(key: StashKey, value: unknown, label: Label): Promise<StashEntry> {
    const { text, bytes } = serializeStashValue(value);
    this.#put.run(key.runId, key.subtaskId, text, bytes, Date.now(), labelColumn(label));
    return { ref: stashRef(key), bytes };
  }

  async get(ref: string): Promise<unknown> {
    return (await this.read(ref)).value;
  }

  async read(ref: string): Promise<LabelledEntry> {
    const key = parseStashRef(ref);
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
    return this.#batch.add(values);
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
