import { ConfigError } from "../../core/errors.js";

/** Connection failures (the server is down, unreachable, restarting): errors of the deployment, not of a query. */
const CONNECTION_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "EPIPE", "57P01", "57P02", "57P03", "08000", "08001", "08003", "08004", "08006", "53300"]);

/** Whether an error is a lost or refused connection (a query that may succeed once the database is back). */
export function isConnectionError(error: unknown): boolean {
  const code = (error as { code?: string } | undefined)?.code;
  if (code !== undefined && CONNECTION_CODES.has(code)) return true;
  const message = (error as Error | undefined)?.message ?? "";
  return /Connection terminated|connection timeout|Client has encountered a connection error|terminating connection|the database system is (starting up|shutting down)|not queryable/i.test(message);
}

/** SQLite's answers for a file that is damaged, not a database, or cannot be opened as one. */
const DAMAGE = /^SQLITE_(NOTADB|CORRUPT|CANTOPEN|IOERR)/;

/** Whether an error is SQLite saying the database file is damaged or unusable (not a fault of troupe's own). */
export function isDamagedDatabase(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === "string" && DAMAGE.test(code);
}

/**
 * A damaged or unusable database file as the configuration problem it is (exit 2, naming the
 * file and what to do), instead of a fault: troupe did not break it, and cannot mend it.
 */
export function damagedDatabase(error: unknown, location: string): ConfigError {
  const reason = (error as Error).message;
  return new ConfigError("database_damaged", `the database ${location} cannot be used (${reason}): restore it from a copy, or move it away to start a new one`, { path: location, sqlite: (error as { code?: string }).code });
}
