import type pg from "pg";
import type { CredentialKind, McpCredentialStore, SealedCredential } from "../../core/mcp-credentials.js";
import { credentialOf, type CredentialRow } from "./contract.js";

/** MCP servers' sealed OAuth credentials on Postgres (migration 12), shared by every process. */
export class PostgresMcpCredentials implements McpCredentialStore {
  readonly #pool: pg.Pool;

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  async get(server: string, kind: CredentialKind): Promise<SealedCredential | undefined> {
    const { rows } = await this.#pool.query<CredentialRow>("SELECT server, kind, resource, sealed, updated_at FROM mcp_credentials WHERE server = $1 AND kind = $2", [server, kind]);
    return rows[0] ? credentialOf(rows[0]) : undefined;
  }

  async put(credential: SealedCredential): Promise<void> {
    await this.#pool.query(
      `INSERT INTO mcp_credentials (server, kind, resource, sealed, updated_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (server, kind) DO UPDATE SET resource = EXCLUDED.resource, sealed = EXCLUDED.sealed, updated_at = EXCLUDED.updated_at`,
      [credential.server, credential.kind, credential.resource, credential.sealed, credential.updatedAt],
    );
  }

  async delete(server: string, kind?: CredentialKind): Promise<number> {
    const result = kind ? await this.#pool.query("DELETE FROM mcp_credentials WHERE server = $1 AND kind = $2", [server, kind]) : await this.#pool.query("DELETE FROM mcp_credentials WHERE server = $1", [server]);
    return result.rowCount ?? 0;
  }

  async list(): Promise<Array<Omit<SealedCredential, "sealed">>> {
    const { rows } = await this.#pool.query<CredentialRow>("SELECT server, kind, resource, '' AS sealed, updated_at FROM mcp_credentials ORDER BY server, kind");
    return rows.map((row) => {
      const { sealed: _sealed, ...rest } = credentialOf(row);
      return rest;
    });
  }
}
