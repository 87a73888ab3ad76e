import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterEach, inject } from "vitest";
import { openStore } from "../src/store/index.js";
import type { PostgresStore } from "../src/store/postgres-store.js";

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

/**
 * Opens troupe's Postgres store on a database, each in its own data folder (`prefix`…); every
 * store opened is closed and its folder removed after each test of the file that calls this.
 */
export function postgresStores(prefix: string): (databaseUrl: string) => Promise<PostgresStore> {
  const directories: string[] = [];
  const stores: PostgresStore[] = [];
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
    for (const dir of directories.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  return async (databaseUrl) => {
    const dataDir = mkdtempSync(path.join(tmpdir(), prefix));
    directories.push(dataDir);
    const store = (await openStore({ dataDir, databaseUrl })) as PostgresStore;
    stores.push(store);
    return store;
  };
}
