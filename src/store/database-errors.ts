/** Connection failures (the server is down, unreachable, restarting): errors of the deployment, not of a query. */
const CONNECTION_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "EPIPE", "57P01", "57P02", "57P03", "08000", "08001", "08003", "08004", "08006", "53300"]);

/** Whether an error is a lost or refused connection (a query that may succeed once the database is back). */
export function isConnectionError(error: unknown): boolean {
  const code = (error as { code?: string } | undefined)?.code;
  if (code !== undefined && CONNECTION_CODES.has(code)) return true;
  const message = (error as Error | undefined)?.message ?? "";
  return /Connection terminated|connection timeout|Client has encountered a connection error|terminating connection|the database system is (starting up|shutting down)|not queryable/i.test(message);
}
