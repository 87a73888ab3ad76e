import type pg from "pg";
import type { Grant } from "../../tools/permissions.js";
import type { RuntimeGrant } from "../../tools/permissions.js";
import { GRANT_INSERT, type GrantStore, GrantRow, grantValues, newGrantId } from "./contract.js";
import { inTransaction } from "../database/postgres.js";
import { positional } from "../database/placeholders.js";

/** The channel a change of grants is announced on, in the transaction that makes it. */
export const GRANTS_CHANNEL = "troupe_grants";

/**
 * The grants table on Postgres. Every process reads the same rows. The version is read from the
 * database for every call that asks (reads asked for at the same moment share one query), so a
 * change committed by any process applies to every call that starts after it; a change is also
 * announced with NOTIFY, for whoever watches.
 */
export class PostgresGrantStore implements GrantStore {
  readonly #pool: pg.Pool;
  #reading: Promise<string> | undefined;

  constructor(pool: pg.Pool) {
    this.#pool = pool;
  }

  async #bump(client: pg.ClientBase): Promise<void> {
    await client.query(
      `INSERT INTO maintenance (name, value, updated_at) VALUES ('grants.version', '1', $1)
       ON CONFLICT (name) DO UPDATE SET value = (maintenance.value::bigint + 1)::text, updated_at = $1`,
      [Date.now()],
    );
    await client.query("SELECT pg_notify($1, '')", [GRANTS_CHANNEL]);
  }

  async add(grant: Grant, reason?: string): Promise<RuntimeGrant> {
    const id = newGrantId();
    await inTransaction(this.#pool, async (client) => {
      await client.query(`${GRANT_INSERT} ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, grantValues(id, grant, reason, Date.now()));
      await this.#bump(client);
    });
    return (await this.get(id)) as RuntimeGrant;
  }

  async revoke(id: string, by: string, reason?: string): Promise<RuntimeGrant | undefined> {
    await inTransaction(this.#pool, async (client) => {
      const { rowCount } = await client.query("UPDATE grants SET revoked_at = $1, revoked_by = $2, revoke_reason = $3 WHERE id = $4 AND revoked_at IS NULL", [Date.now(), by, reason ?? null, id]);
      if ((rowCount ?? 0) > 0) await this.#bump(client);
    });
    return this.get(id);
  }

  async get(id: string): Promise<RuntimeGrant | undefined> {
    const { rows } = await this.#pool.query("SELECT * FROM grants WHERE id = $1", [id]);
    return rows[0] === undefined ? undefined : GrantRow.parse(rows[0]);
  }

  async list(options: { agent?: string; includeRevoked?: boolean } = {}): Promise<RuntimeGrant[]> {
    const clauses = [...(options.agent !== undefined ? ["agent = @agent"] : []), ...(options.includeRevoked === false ? ["revoked_at IS NULL"] : [])];
    const where = clauses.length > 0 ? `WHERE ${clauses.join(" AND ")}` : "";
    const { rows } = await this.#pool.query(
      positional(`SELECT id, agent, tool, level, conditions, expires_at, granted_by, reason, created_at, revoked_at, revoked_by, revoke_reason FROM grants ${where} ORDER BY created_at, row_order`, options),
    );
    return rows.map((row) => GrantRow.parse(row));
  }

  version(): Promise<string> {
    this.#reading ??= this.#pool
      .query<{ value: string }>("SELECT value FROM maintenance WHERE name = 'grants.version'")
      .then((result) => result.rows[0]?.value ?? "0")
      .finally(() => {
        this.#reading = undefined;
      });
    return this.#reading;
  }
}
