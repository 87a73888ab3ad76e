import pg from "pg";
import { ConfigError } from "../../core/errors.js";

/** A database URL as it may be shown: the password replaced. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "(an unreadable URL)";
  }
}

/** Checks a database URL's form; a bad one is a ConfigError naming the variable. */
export function parseDatabaseUrl(url: string, source = "TROUPE_DATABASE_URL"): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigError("database_url_invalid", `${source}: not a URL (expected postgres://user:password@host:5432/database)`, { variable: source });
  }
  if (parsed.protocol !== "postgres:" && parsed.protocol !== "postgresql:") {
    throw new ConfigError("database_url_invalid", `${source}: ${parsed.protocol.replace(/:$/, "")} is not a Postgres URL (expected postgres://user:password@host:5432/database)`, {
      variable: source,
    });
  }
  if (!parsed.hostname && !parsed.searchParams.get("host")) {
    throw new ConfigError("database_url_invalid", `${source}: the URL names no host (expected postgres://user:password@host:5432/database)`, { variable: source });
  }
  return url;
}

export { isConnectionError } from "./errors.js";

/** A connection error as troupe reports it: the database named (without its password), exit 2 from the CLI. */
export function unreachable(url: string, error: unknown): ConfigError {
  const reason = (error as { code?: string }).code ?? (error as Error).message;
  return new ConfigError("database_unreachable", `cannot reach the database at ${redactUrl(url)} (${reason})`, { url: redactUrl(url) });
}

/** Numbers come back as numbers: BIGINT timestamps and counts are below 2^53. */
const types = {
  getTypeParser: ((oid: number, format?: string) => {
    if (oid === 20) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format as never);
  }) as typeof pg.types.getTypeParser,
};

/**
 * A pool on the database, with BIGINT read as numbers and a name the database shows in
 * pg_stat_activity; `settings` are the sessions' own (e.g. `synchronous_commit: "off"`).
 */
export function createPool(url: string, max: number, name = "troupe", settings: Record<string, string> = {}): pg.Pool {
  const options = Object.entries(settings).map(([key, value]) => `-c ${key}=${value}`).join(" ");
  const pool = new pg.Pool({ connectionString: url, max, types, application_name: name, connectionTimeoutMillis: 10_000, keepAlive: true, ...(options ? { options } : {}) });
  // An idle client's error (the server restarted) is reported on the pool; its next checkout reconnects.
  pool.on("error", () => {});
  return pool;
}

/** A single connection outside the pool (LISTEN, session locks), same settings. */
export function createClient(url: string, name: string): pg.Client {
  return new pg.Client({ connectionString: url, types, application_name: name, connectionTimeoutMillis: 10_000, keepAlive: true });
}

/** Runs `work` in a transaction on a client of the pool. */
export async function inTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}
