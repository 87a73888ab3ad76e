import type { Grant } from "../../tools/permissions.js";
import type { RuntimeGrant } from "../../tools/permissions.js";
import { type Sqlite, prepared } from "../database/sqlite.js";
import { GRANT_INSERT, GrantRow, type GrantStore, grantValues, newGrantId } from "./contract.js";

/** The grants table in SQLite; the version is a counter in `maintenance`, bumped in the same transaction. */
export class SqliteGrantStore implements GrantStore {
  readonly #db: Sqlite;
  /** Read before every tool call: compiled once. */
  readonly #version: ReturnType<Sqlite["prepare"]>;

  constructor(db: Sqlite) {
    this.#db = db;
    this.#version = db.prepare("SELECT value FROM maintenance WHERE name = 'grants.version'");
  }

  #bump(): void {
    prepared(this.#db, "INSERT INTO maintenance (name, value, updated_at) VALUES ('grants.version', '1', @now) ON CONFLICT (name) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT), updated_at = @now")
      .run({ now: Date.now() });
  }

  async add(grant: Grant, reason?: string): Promise<RuntimeGrant> {
    const id = newGrantId();
    this.#db.transaction(() => {
      prepared(this.#db, `${GRANT_INSERT} (?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(...grantValues(id, grant, reason, Date.now()));
      this.#bump();
    })();
    return (await this.get(id)) as RuntimeGrant;
  }

  async revoke(id: string, by: string, reason?: string): Promise<RuntimeGrant | undefined> {
    this.#db.transaction(() => {
      const changed = prepared(this.#db, "UPDATE grants SET revoked_at = ?, revoked_by = ?, revoke_reason = ? WHERE id = ? AND revoked_at IS NULL").run(Date.now(), by, reason ?? null, id).changes;
      if (changed > 0) this.#bump();
    })();
    return this.get(id);
  }

  async get(id: string): Promise<RuntimeGrant | undefined> {
    const row = prepared(this.#db, "SELECT * FROM grants WHERE id = ?").get(id);
    return row === undefined ? undefined : GrantRow.parse(row);
  }

  async list(options: { agent?: string; includeRevoked?: boolean } = {}): Promise<RuntimeGrant[]> {
    const clauses = [...(options.agent !== undefined ? ["agent = @agent"] : []), ...(options.includeRevoked === false ? ["revoked_at IS NULL"] : [])];
    const where = clauses.length > 0 ? `WHERE ${clauses.join(" AND ")}` : "";
    return prepared(this.#db, `SELECT * FROM grants ${where} ORDER BY created_at, rowid`)
      .all(options.agent !== undefined ? { agent: options.agent } : {})
      .map((row) => GrantRow.parse(row));
  }

  async version(): Promise<string> {
    const row = this.#version.get([] as never) as { value: string } | undefined;
    return row?.value ?? "0";
  }
}
