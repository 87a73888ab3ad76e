import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { SqliteAuditStore } from "../store/audit/sqlite.js";
import { openSqliteStore, type SqliteStore } from "../store/index.js";
import { defineTool } from "./define-tool.js";
import { ToolRegistry } from "./registry.js";

const made: string[] = [];
const stores: SqliteStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  for (const directory of made.splice(0)) rmSync(directory, { recursive: true, force: true });
});

function tool(name: string, idempotent: boolean, done: string[]) {
  return defineTool({
    name,
    description: `${name} a message`,
    schema: z.object({ text: z.string() }),
    permission: "NONE",
    powers: ["network.send"],
    idempotent,
    timeoutMs: 1_000,
    async execute({ text }) {
      done.push(`${name} ${text}`);
      return `${name} ${text}`;
    },
  });
}

/** A SQLite store in a directory of its own, closed and removed after the test. */
function openStoreInTemp(): { directory: string; store: SqliteStore } {
  const directory = mkdtempSync(path.join(tmpdir(), "troupe-on-disk-"));
  made.push(directory);
  const store = openSqliteStore(path.join(directory, "data"));
  stores.push(store);
  return { directory, store };
}

/** An audit store on a real database whose disk syncs the test lets finish (or fail), one by one. */
function withHeldDisk(store: SqliteStore) {
  const held: Array<{ finish: () => void; fail: (error: Error) => void }> = [];
  let asked: () => void = () => undefined;
  const audit = new SqliteAuditStore(
    store.db,
    () =>
      new Promise<void>((resolve, reject) => {
        held.push({ finish: resolve, fail: reject });
        asked();
      }),
  );
  const nextSync = () => new Promise<void>((resolve) => (asked = resolve));
  return { audit, held, nextSync };
}

describe("a call that must not run twice waits for the disk", () => {
  it("runs a tool that is not idempotent only once its row and everything before it are synced; an idempotent one at once", async () => {
    const { directory, store } = openStoreInTemp();
    const { audit, held, nextSync } = withHeldDisk(store);
    const done: string[] = [];
    const registry = new ToolRegistry({ audit }).register(tool("send", false, done)).register(tool("look", true, done));
    const context = (callId: string) => ({ workspace: directory, runId: "run-1", agent: "execute", callId });

    expect(await registry.call("look", { text: "up" }, context("c0"))).toMatchObject({ ok: true });
    expect(held).toHaveLength(0);

    const asked = nextSync();
    const sending = registry.call("send", { text: "money" }, context("c1"));
    await asked;
    // Its row is committed as started, and the tool has not run: it waits for the sync.
    expect(done).toEqual(["look up"]);
    expect((await audit.findCall("c1"))?.status).toBe("started");
    held[0]?.finish();
    expect(await sending).toMatchObject({ ok: true, value: "send money" });
    expect(done).toEqual(["look up", "send money"]);
  });

  it("refuses the call when the disk cannot be synced, and records why", async () => {
    const { directory, store } = openStoreInTemp();
    const { audit, held, nextSync } = withHeldDisk(store);
    const done: string[] = [];
    const registry = new ToolRegistry({ audit }).register(tool("send", false, done));
    const asked = nextSync();
    const sending = registry.call("send", { text: "money" }, { workspace: directory, runId: "run-1", agent: "execute", callId: "c1" });
    await asked;
    held[0]?.fail(Object.assign(new Error("EIO: i/o error, fdatasync"), { code: "EIO" }));
    expect(await sending).toEqual({
      ok: false,
      error: { code: "database_unavailable", message: "send was not run: the database could not be synced to disk (EIO: i/o error, fdatasync); restart troupe" },
    });
    expect(done).toEqual([]);
    const row = await audit.findCall("c1");
    expect(row).toMatchObject({ status: "error", entry: { errorCode: "database_unavailable" } });
    expect(row?.entry.reason).toMatch(/not run: the database could not be synced to disk/);
  });

  it("through the store's own audit trail, a real sync of the WAL lets the call run", async () => {
    const { directory, store } = openStoreInTemp();
    const done: string[] = [];
    const registry = new ToolRegistry({ audit: store.audit }).register(tool("send", false, done));
    expect(await registry.call("send", { text: "money" }, { workspace: directory, runId: "run-1", agent: "execute", callId: "c1" })).toMatchObject({ ok: true });
    expect((await store.audit.findCall("c1"))?.status).toBe("ok");
  });
});
