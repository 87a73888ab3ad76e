import type pg from "pg";
import { NotFoundError } from "../../core/errors.js";
import type { Label } from "../../core/provenance.js";
import { labelColumn, type LabelledEntry, type MapItemRecord, parseStashRef, type StashEntry, type StashKey, serializeStashValue, stashRef, storedLabel } from "../../core/stash.js";
import { ItemRow, type StashStore } from "./contract.js";
import { TurnBatch } from "../turn-batch.js";

interface Item {
  key: StashKey;
  item: MapItemRecord;
}

/**
 * The data stash on Postgres: each subtask's result as UTF-8 JSON in a `bytea` (TOAST keeps large
 * values compressed and out of line; still outside the graph state and its checkpoints), and the
 * finished items of maps, committed together per turn of the event loop — `putItem` resolves only
 * once its row is committed, as on SQLite.
 */
export class PostgresStash implements StashStore {
  readonly #pool: pg.Pool;
  readonly #batch: TurnBatch<Item>;

  constructor(pool: pg.Pool) {
    this.#pool = pool;
    this.#batch = new TurnBatch<Item>(async (batch) => {
      const now = Date.now();
      // One row per item: a later write of the same item in the batch replaces an earlier one.
      const items = [...new Map(batch.map((entry) => [`${entry.key.runId}\n${entry.key.subtaskId}\n${entry.item.index}`, entry])).values()];
      await this.#pool.query(
        `INSERT INTO stash_items (run_id, subtask_id, item_index, fingerprint, round, status, input, output, error, duration_ms, created_at, label)
         SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::int[], $6::text[], $7::text[], $8::text[], $9::text[], $10::bigint[], $11::bigint[], $12::text[])
         ON CONFLICT (run_id, subtask_id, item_index) DO UPDATE SET fingerprint = excluded.fingerprint, round = excluded.round, status = excluded.status,
           input = excluded.input, output = excluded.output, error = excluded.error, duration_ms = excluded.duration_ms, created_at = excluded.created_at, label = excluded.label`,
        [
          items.map(({ key }) => key.runId),
          items.map(({ key }) => key.subtaskId),
          items.map(({ item }) => item.index),
          items.map(({ item }) => item.fingerprint),
          items.map(({ item }) => item.round),
          items.map(({ item }) => item.status),
          items.map(({ item }) => serializeStashValue(item.input).text),
          items.map(({ item }) => (item.output === undefined ? null : serializeStashValue(item.output).text)),
          items.map(({ item }) => item.error ?? null),
          items.map(({ item }) => Math.round(item.durationMs)),
          items.map(() => now),
          items.map(({ item }) => labelColumn(item.label)),
        ],
      );
    });
  }

  flush(): Promise<void> {
    return this.#batch.flush();
  }

  async put(key: StashKey, value: unknown, label: Label): Promise<StashEntry> {
    const { text, bytes } = serializeStashValue(value);
    await this.#pool.query(
      `INSERT INTO stash (run_id, subtask_id, value, bytes, created_at, label) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (run_id, subtask_id) DO UPDATE SET value = excluded.value, bytes = excluded.bytes, created_at = excluded.created_at, label = excluded.label`,
      [key.runId, key.subtaskId, Buffer.from(text, "utf8"), bytes, Date.now(), labelColumn(label)],
    );
    return { ref: stashRef(key), bytes };
  }

  async get(ref: string): Promise<unknown> {
    return (await this.read(ref)).value;
  }

  async read(ref: string): Promise<LabelledEntry> {
    const key = parseStashRef(ref);
    const { rows } = await this.#pool.query<{ value: Buffer; label: string | null }>("SELECT value, label FROM stash WHERE run_id = $1 AND subtask_id = $2", [key.runId, key.subtaskId]);
    if (!rows[0]) throw new NotFoundError("stash_missing", `nothing is stashed under ${ref}`, { ref });
    return { value: JSON.parse(rows[0].value.toString("utf8")) as unknown, label: storedLabel(rows[0].label) };
  }

  putItem(key: StashKey, item: MapItemRecord): Promise<void> {
    return this.#batch.add({ key, item });
  }

  async copyResults(fromRunId: string, toRunId: string, subtaskIds: readonly string[]): Promise<number> {
    if (subtaskIds.length === 0) return 0;
    await this.flush();
    const client = await this.#pool.connect();
    try {
      await client.query("BEGIN");
      const { rowCount } = await client.query(
        `INSERT INTO stash (run_id, subtask_id, value, bytes, created_at, label) SELECT $1, subtask_id, value, bytes, created_at, label FROM stash WHERE run_id = $2 AND subtask_id = ANY($3)
         ON CONFLICT (run_id, subtask_id) DO UPDATE SET value = EXCLUDED.value, bytes = EXCLUDED.bytes, created_at = EXCLUDED.created_at, label = EXCLUDED.label`,
        [toRunId, fromRunId, subtaskIds],
      );
      await client.query(
        `INSERT INTO stash_items (run_id, subtask_id, item_index, fingerprint, round, status, input, output, error, duration_ms, created_at, label)
         SELECT $1, subtask_id, item_index, fingerprint, round, status, input, output, error, duration_ms, created_at, label FROM stash_items WHERE run_id = $2 AND subtask_id = ANY($3)
         ON CONFLICT (run_id, subtask_id, item_index) DO NOTHING`,
        [toRunId, fromRunId, subtaskIds],
      );
      await client.query("COMMIT");
      return rowCount ?? 0;
    } catch (error) {
      await client.query("ROLLBACK").catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }

  async items(key: StashKey): Promise<MapItemRecord[]> {
    await this.flush();
    const { rows } = await this.#pool.query(
      "SELECT item_index, fingerprint, round, status, input, output, error, duration_ms, label FROM stash_items WHERE run_id = $1 AND subtask_id = $2 ORDER BY item_index",
      [key.runId, key.subtaskId],
    );
    return rows.map((row) => ItemRow.parse(row));
  }
}
