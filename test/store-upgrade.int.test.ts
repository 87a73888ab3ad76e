import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { isTroupeError } from "../src/core/errors.js";
import { migrationsOf, schemaVersionOf } from "../src/store/database/migrator.js";
import { openStore, type Store } from "../src/store/index.js";
import { findPostgresBin } from "../src/testing/postgres-cluster.js";
import { freshDatabase } from "./postgres.js";

/**
 * A Postgres database as the troupe of merge-work4 left it (troupe schema 7, its checkpointer's
 * and pg-boss's tables, two finished runs on one thread), dumped by
 * test/fixtures/databases/make-fixtures.mjs and restored here with psql.
 */
const DUMP = fileURLToPath(new URL("./fixtures/databases/postgres-schema-7.sql", import.meta.url));

const stores: Store[] = [];
const directories: string[] = [];

afterAll(async () => {
  for (const store of stores.splice(0)) await store.close();
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

async function restoredFixture(prefix: string): Promise<string> {
  const url = await freshDatabase(prefix);
  const bin = findPostgresBin();
  const psql = bin ? path.join(bin, "psql") : "psql";
  execFileSync(psql, ["--quiet", "--no-psqlrc", "-v", "ON_ERROR_STOP=1", "--dbname", url, "--file", DUMP], { stdio: ["ignore", "ignore", "pipe"] });
  return url;
}

function dataDir(): string {
  const directory = mkdtempSync(path.join(tmpdir(), "troupe-upgrade-pg-"));
  directories.push(directory);
  return directory;
}

async function appliedVersions(url: string): Promise<number[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<{ version: number }>("SELECT version FROM troupe_schema ORDER BY version")).rows.map((row) => row.version);
  } finally {
    await client.end();
  }
}

/** troupe's tables as Postgres describes them: every column's type, default and nullability, and every index. */
async function schemaOf(url: string): Promise<unknown[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const columns = await client.query(
      `SELECT table_name, column_name, data_type, column_default, is_nullable FROM information_schema.columns
       WHERE table_schema = 'public' AND table_name NOT LIKE 'checkpoint%' ORDER BY table_name, column_name`,
    );
    const indexes = await client.query("SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename NOT LIKE 'checkpoint%' ORDER BY indexname");
    const functions = await client.query("SELECT proname, prosrc FROM pg_proc WHERE pronamespace = 'public'::regnamespace ORDER BY proname");
    return [...columns.rows, ...indexes.rows, ...functions.rows];
  } finally {
    await client.end();
  }
}

describe("a Postgres database made by an earlier troupe", () => {
  it("has, once opened, the schema a new database gets from the migration files", async () => {
    const fresh = await freshDatabase("fresh");
    await (await openStore({ dataDir: dataDir(), databaseUrl: fresh })).close();
    const restored = await restoredFixture("compare");
    await (await openStore({ dataDir: dataDir(), databaseUrl: restored })).close();
    expect(await schemaOf(fresh)).toEqual(await schemaOf(restored));
  });

  it("opens (its checkpointer and queue set up again) and reads its runs, their events and their thread's checkpoints", async () => {
    const url = await restoredFixture("upgrade");
    expect(await appliedVersions(url)).toEqual([1, 2, 5, 6, 7]);
    const store = await openStore({ dataDir: dataDir(), databaseUrl: url });
    expect(await appliedVersions(url)).toEqual(migrationsOf("postgres").map((migration) => migration.version));
    stores.push(store);
    const runs = await store.runs.list({ threadId: "fixture-thread" });
    expect(runs.map((run) => [run.task, run.status])).toEqual([
      ["compute 12*12", "completed"],
      ["compute 17% of 2,340 and save it to result.txt", "completed"],
    ]);
    expect(runs[1]?.answer).toMatch(/397\.8/);
    expect(await store.runs.listUnsettled()).toEqual([]);
    expect((await store.events.list(runs[1]?.id ?? "")).length).toBeGreaterThan(5);
    expect((await store.checkpointer.getTuple({ configurable: { thread_id: "fixture-thread" } }))?.checkpoint.id).toBeTruthy();
    // A new queued run goes on the same thread and into the queue.
    await store.runs.create({ id: "run-new", threadId: "fixture-thread", task: "more", status: "queued", request: { task: "more" }, pid: null, host: null });
    expect((await store.runs.latestForThread("fixture-thread"))?.id).toBe("run-new");
    expect(await store.queue?.depth()).toBe(1);
    expect(runs[1]?.answerFormat).toBeNull();
    // The versions shipped since were applied (9: threads by owner; 12: MCP credentials; 14: runs by owner and change; 16: answers' formats; 17: the Agent Protocol's threads).
    expect(await appliedVersions(url)).toEqual(migrationsOf("postgres").map((migration) => migration.version));
  });

  it("moves an API key's threads into its own namespace (9), with their checkpoints, blobs, writes, audit rows and forks' origins; the unkeyed owners keep their names", async () => {
    const url = await restoredFixture("threads");
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const run = (id: string, thread: string, at: number, owner: string, forkedFrom: string | null = null) =>
        client.query("INSERT INTO runs (id, thread_id, task, status, request, created_at, updated_at, owner, forked_from) VALUES ($1, $2, 't', 'completed', '{}', $3, $3, $4, $5)", [id, thread, at, owner, forkedFrom]);
      await run("run-a1", "daily", 1, "alice");
      await run("run-b1", "shared", 2, "bob");
      await run("run-a2", "shared", 3, "alice");
      await run("run-l1", "mine", 4, "local");
      await run("run-a3", "forked", 5, "alice", JSON.stringify({ runId: "run-a1", threadId: "daily", checkpointId: "c1" }));
      for (const thread of ["daily", "shared"]) {
        await client.query("INSERT INTO checkpoints SELECT $1, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints WHERE thread_id = 'fixture-thread'", [thread]);
        await client.query("INSERT INTO checkpoint_blobs SELECT $1, checkpoint_ns, channel, version, type, blob FROM checkpoint_blobs WHERE thread_id = 'fixture-thread'", [thread]);
        await client.query("INSERT INTO checkpoint_writes SELECT $1, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, blob FROM checkpoint_writes WHERE thread_id = 'fixture-thread'", [thread]);
      }
      await client.query("INSERT INTO audit (at, run_id, thread_id, agent, tool, args, decision, status, level, duration_ms, attempts, cached, principal) VALUES (1, 'run-a1', 'daily', 'execute', 'calculator', '{}', 'allow', 'ok', 'NONE', 1, 1, 0, 'alice')");
    } finally {
      await client.end();
    }
    const store = await openStore({ dataDir: dataDir(), databaseUrl: url });
    stores.push(store);
    const threadOf = async (id: string) => (await store.runs.get(id))?.threadId;
    expect(await Promise.all(["run-a1", "run-b1", "run-a2", "run-l1", "run-a3"].map(threadOf))).toEqual(["alice/daily", "bob/shared", "alice/shared", "mine", "alice/forked"]);
    expect((await store.runs.get("run-a3"))?.forkedFrom).toEqual({ runId: "run-a1", threadId: "alice/daily", checkpointId: "c1" });
    expect((await store.runs.list({ threadId: "fixture-thread" })).map((item) => item.owner)).toEqual([null, null]);
    const check = new pg.Client({ connectionString: url });
    await check.connect();
    try {
      const count = async (table: string, thread: string) => Number((await check.query(`SELECT count(*) AS n FROM ${table} WHERE thread_id = $1`, [thread])).rows[0].n);
      for (const table of ["checkpoints", "checkpoint_blobs", "checkpoint_writes"]) {
        const original = await count(table, "fixture-thread");
        expect([table, await count(table, "alice/daily"), await count(table, "daily"), await count(table, "alice/shared"), await count(table, "bob/shared")]).toEqual([table, original, 0, original, 0]);
      }
    } finally {
      await check.end();
    }
    expect((await store.checkpointer.getTuple({ configurable: { thread_id: "alice/daily" } }))?.checkpoint.id).toBeTruthy();
    expect((await store.audit.list({ runId: "run-a1" }))[0]?.threadId).toBe("alice/daily");
  });

  it("is refused when a newer troupe migrated it (database_too_new), with nothing applied", async () => {
    const url = await restoredFixture("too_new");
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query("INSERT INTO troupe_schema (version, applied_at) VALUES (99, 0)");
    await client.end();
    let caught: unknown;
    try {
      stores.push(await openStore({ dataDir: dataDir(), databaseUrl: url }));
    } catch (error) {
      caught = error;
    }
    expect(isTroupeError(caught) && caught.code).toBe("database_too_new");
    expect((caught as Error).message).toMatch(new RegExp(`has troupe schema version 99, newer than this troupe knows \\(${schemaVersionOf("postgres")}\\): upgrade troupe, or use another database$`));
    expect(await appliedVersions(url)).toEqual([1, 2, 5, 6, 7, 99]);
  });
});
