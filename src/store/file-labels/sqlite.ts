import type { Statement } from "better-sqlite3";
import type { FileIdentity, FileLabelRecord, FileLabelStore, NewFileLabel } from "../../core/file-labels.js";
import { FILE_LABEL_LOOKUP_LIMIT } from "../../core/file-labels.js";
import type { Sqlite } from "../database/sqlite.js";
import { FILE_LABEL_COLUMNS, fileLabelOf, type FileLabelRow, fileLabelValues } from "./contract.js";

/** File labels in SQLite (migration 19), on the event log's connection (WAL, synchronous NORMAL: a process crash keeps a committed label). */
export class SqliteFileLabels implements FileLabelStore {
  readonly #db: Sqlite;
  readonly #insert: Statement<unknown[]>;

  constructor(db: Sqlite) {
    this.#db = db;
    this.#insert = db.prepare(`INSERT INTO file_labels (${FILE_LABEL_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  }

  async record(records: readonly NewFileLabel[]): Promise<void> {
    if (records.length === 0) return;
    const now = Date.now();
    this.#db.transaction(() => {
      for (const record of records) this.#insert.run(...fileLabelValues(record, now));
    })();
  }

  async find(query: { sha256?: string; identities?: readonly FileIdentity[] }): Promise<FileLabelRecord[]> {
    const clauses: string[] = [];
    const values: unknown[] = [];
    if (query.sha256 !== undefined) {
      clauses.push("sha256 = ?");
      values.push(query.sha256);
    }
    const identities = query.identities ?? [];
    if (identities.length > 0) {
      // One indexed lookup per identity, through a JSON list (no statement grows with the listing).
      clauses.push("id IN (SELECT file_labels.id FROM json_each(?) AS wanted JOIN file_labels ON file_labels.inode = json_extract(wanted.value, '$[1]') AND file_labels.device = json_extract(wanted.value, '$[0]'))");
      values.push(JSON.stringify(identities.map((identity) => [identity.device, identity.inode])));
    }
    if (clauses.length === 0) return [];
    const rows = this.#db.prepare(`SELECT ${FILE_LABEL_COLUMNS} FROM file_labels WHERE ${clauses.join(" OR ")} ORDER BY created_at DESC, id DESC LIMIT ?`).all(...values, FILE_LABEL_LOOKUP_LIMIT * Math.max(1, identities.length)) as FileLabelRow[];
    return rows.map(fileLabelOf);
  }

  async atPath(workspace: string, path: string, limit: number): Promise<FileLabelRecord[]> {
    const rows = this.#db.prepare(`SELECT ${FILE_LABEL_COLUMNS} FROM file_labels WHERE workspace = ? AND path = ? ORDER BY created_at DESC, id DESC LIMIT ?`).all(workspace, path, limit) as FileLabelRow[];
    return rows.map(fileLabelOf);
  }

  async anyUntrusted(workspace: string): Promise<boolean> {
    return this.#db.prepare("SELECT 1 FROM file_labels WHERE workspace = ? AND trust = 'untrusted' LIMIT 1").get(workspace) !== undefined;
  }
}
