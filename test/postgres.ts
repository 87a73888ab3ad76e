import { randomBytes } from "node:crypto";
import pg from "pg";
import { inject } from "vitest";

/** A new, empty database on the test run's Postgres cluster (see test/setup/postgres.ts); returns its URL. */
export async function freshDatabase(prefix = "t"): Promise<string> {
  const admin = inject("postgresUrl");
  const name = `${prefix.toLowerCase().replace(/[^a-z0-9_]/g, "_").slice(0, 40)}_${randomBytes(4).toString("hex")}`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return url.toString();
}
