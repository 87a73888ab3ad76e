import type pg from "pg";
import type { FileIdentity, FileLabelRecord, FileLabelStore, NewFileLabel } from "../../core/file-labels.js";
import { FILE_LABEL_LOOKUP_LIMIT } from "../../core/file-labels.js";
import { inTransaction } from "../database/postgres.js";
import { FILE_LABEL_COLUMNS, fileLabelOf, type FileLabelRow, fileLabelValues } from "./contract.js";

const PLACEHOLDERS = Array.from({ length: 14 }, (_, index) => `$${index + 1}`).join(", ");

/** File labels on Postgres (migration 8): every process sharing the database reads every label. */
export class PostgresFileLabels implements FileLabelStore {
  readonly #pool: pg.Pool;

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  async record(records: readonly NewFileLabel[]): Promise<void> {
    if (records.length === 0) return;
    const now = Date.now();
    await inTransaction(this.#pool, async (client) => {
      for (const record of records) await client.query(`INSERT INTO file_labels (${FILE_LABEL_COLUMNS}) VALUES (${PLACEHOLDERS})`, fileLabelValues(record, now));
    });
  }

  async find(query: { sha256?: string; identities?: readonly FileIdentity[] }): Promise<FileLabelRecord[]> {
    const clauses: string[] = [];
    const values: unknown[] = [];
    if (query.sha256 !== undefined) {
      values.push(query.sha256);
      clauses.push(`sha256 = $${values.length}`);
    }
    const identities = query.identities ?? [];
    if (identities.length > 0) {
      values.push(identities.map((identity) => identity.device), identities.map((identity) => identity.inode));
      clauses.push(`(device, inode) IN (SELECT * FROM unnest($${values.length - 1}::text[], $${values.length}::text[]))`);
    }
    if (clauses.length === 0) return [];
    values.push(FILE_LABEL_LOOKUP_LIMIT * Math.max(1, identities.length));
    const { rows } = await this.#pool.query<FileLabelRow>(`SELECT ${FILE_LABEL_COLUMNS} FROM file_labels WHERE ${clauses.join(" OR ")} ORDER BY created_at DESC, id DESC LIMIT $${values.length}`, values);
    return rows.map(fileLabelOf);
  }

  async atPath(workspace: string, path: string, limit: number): Promise<FileLabelRecord[]> {
    const { rows } = await this.#pool.query<FileLabelRow>(`SELECT ${FILE_LABEL_COLUMNS} FROM file_labels WHERE workspace = $1 AND path = $2 ORDER BY created_at DESC, id DESC LIMIT $3`, [workspace, path, limit]);
    return rows.map(fileLabelOf);
  }

  async anyUntrusted(workspace: string): Promise<boolean> {
    const { rows } = await this.#pool.query("SELECT 1 FROM file_labels WHERE workspace = $1 AND trust = 'untrusted' LIMIT 1", [workspace]);
    return rows.length > 0;
  }
}
