import type { CredentialKind, McpCredentialStore, SealedCredential } from "../../core/mcp-credentials.js";
import type { Sqlite } from "../database/sqlite.js";
import { credentialOf, type CredentialRow } from "./contract.js";

/** MCP servers' sealed OAuth credentials (migration 23), on the synced connection: a refreshed token is on disk before it is used. */
export class SqliteMcpCredentials implements McpCredentialStore {
  readonly #db: Sqlite;

  constructor(db: Sqlite) {
    this.#db = db;
  }

  async get(server: string, kind: CredentialKind): Promise<SealedCredential | undefined> {
    const row = this.#db.prepare("SELECT server, kind, resource, sealed, updated_at FROM mcp_credentials WHERE server = ? AND kind = ?").get(server, kind) as CredentialRow | undefined;
    return row ? credentialOf(row) : undefined;
  }

  async put(credential: SealedCredential): Promise<void> {
    this.#db
      .prepare(
        `INSERT INTO mcp_credentials (server, kind, resource, sealed, updated_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (server, kind) DO UPDATE SET resource = excluded.resource, sealed = excluded.sealed, updated_at = excluded.updated_at`,
      )
      .run(credential.server, credential.kind, credential.resource, credential.sealed, credential.updatedAt);
  }

  async delete(server: string, kind?: CredentialKind): Promise<number> {
    const result = kind ? this.#db.prepare("DELETE FROM mcp_credentials WHERE server = ? AND kind = ?").run(server, kind) : this.#db.prepare("DELETE FROM mcp_credentials WHERE server = ?").run(server);
    return result.changes;
  }

  async list(): Promise<Array<Omit<SealedCredential, "sealed">>> {
    const rows = this.#db.prepare("SELECT server, kind, resource, '' AS sealed, updated_at FROM mcp_credentials ORDER BY server, kind").all() as CredentialRow[];
    return rows.map((row) => {
      const { sealed: _sealed, ...rest } = credentialOf(row);
      return rest;
    });
  }
}
