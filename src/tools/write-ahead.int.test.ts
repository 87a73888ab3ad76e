import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { openStore, type Store } from "../store/index.js";
import type { AuditSink, CallEffect } from "./audit.js";
import { FILE_EFFECTS } from "./builtin/file-effects.js";
import { createBuiltinTools } from "./builtin/index.js";
import { defineTool, type ToolContext, type ToolEffect, type ToolOutcome } from "./define-tool.js";
import { ToolRegistry } from "./registry.js";
import { workspaceRoot } from "./workspace.js";

const made: string[] = [];
const stores: Store[] = [];
afterEach(() => {
  for (const store of stores.splice(0)) void store.close();
  for (const directory of made.splice(0)) rmSync(directory, { recursive: true, force: true });
});

async function setup(): Promise<{ store: Store; workspace: string; registry: ToolRegistry }> {
  const directory = mkdtempSync(path.join(tmpdir(), "troupe-wal-"));
  made.push(directory);
  const store = await openStore(path.join(directory, "data"));
  stores.push(store);
  const workspace = await workspaceRoot(path.join(directory, "ws"));
  const registry = new ToolRegistry({ audit: store.audit });
  for (const tool of createBuiltinTools()) registry.register(tool);
  return { store, workspace, registry };
}

/**
 * A registry over the same store that "crashes" in the middle of a call: its sink commits the
 * started row and then never completes it — after the tool ran (`after: "effect"`), or before it
 * could (`after: "begin"`: the call is cancelled as its row commits, so the tool never runs).
 */
function crashingRegistry(store: Store, after: "begin" | "effect"): { registry: ToolRegistry; context: (workspace: string, callId: string) => ToolContext } {
  const controller = new AbortController();
  const sink: AuditSink = {
    record: (entry) => store.audit.record(entry),
    begin: async (entry, effect) => {
      const id = await store.audit.begin(entry, effect);
      if (after === "begin") controller.abort();
      return id;
    },
    complete: () => Promise.reject(new Error("the process died before this")),
    findCall: (callId) => store.audit.findCall(callId),
  };
  const registry = new ToolRegistry({ audit: sink });
  for (const tool of createBuiltinTools()) registry.register(tool);
  return { registry, context: (workspace, callId) => ({ workspace, runId: "run-1", agent: "code", callId, signal: controller.signal }) };
}

const call = (registry: ToolRegistry, name: string, args: unknown, workspace: string, callId?: string): Promise<ToolOutcome> =>
  registry.call(name, args, { workspace, runId: "run-1", agent: "code", ...(callId ? { callId } : {}) });

describe("the write-ahead audit", () => {
  it("commits a started row before the tool runs and completes the same row after", async () => {
    const { store, workspace, registry } = await setup();
    const seen: Array<Array<{ id: number; status: string }>> = [];
    registry.register(
      defineTool({
        name: "look",
        description: "reports the rows of its own run while it runs",
        schema: z.object({}),
        permission: "NONE",
        riskLevel: "low",
        idempotent: false,
        timeoutMs: 1_000,
        async execute() {
          seen.push((await store.audit.unfinished({ runId: "run-1" })).map((row) => ({ id: row.id, status: row.status })));
          return "looked";
        },
      }),
    );
    expect(await call(registry, "look", {}, workspace)).toMatchObject({ ok: true });
    const rows = await store.audit.list({ runId: "run-1" });
    expect(seen).toEqual([[{ id: rows[0]?.id, status: "started" }]]);
    expect(rows.map((row) => [row.tool, row.status, row.resultPreview])).toEqual([["look", "ok", "looked"]]);
    expect(await store.audit.unfinished({ runId: "run-1" })).toEqual([]);
    // A call refused before it runs writes its one row at the end, as before.
    expect(await call(registry, "file_read", { path: "../x" }, workspace)).toMatchObject({ ok: false });
    expect((await store.audit.list({ runId: "run-1" })).map((row) => row.status)).toEqual(["ok", "error"]);
  });

  it("leaves a started row that `unfinished` reports when the process is killed inside a tool", async () => {
    const directory = mkdtempSync(path.join(tmpdir(), "troupe-wal-kill-"));
    made.push(directory);
    const dist = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../dist/src");
    const child = spawn(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `const { openStore } = await import(${JSON.stringify(`${dist}/store/index.js`)});
         const { ToolRegistry } = await import(${JSON.stringify(`${dist}/tools/registry.js`)});
         const { z } = await import("zod");
         const store = await openStore(${JSON.stringify(path.join(directory, "data"))});
         const registry = new ToolRegistry({ audit: store.audit });
         registry.register({ name: "boom", description: "", schema: z.object({}), permission: "NONE", riskLevel: "low", idempotent: false, timeoutMs: 5000,
           async execute() { process.kill(process.pid, "SIGKILL"); await new Promise(() => {}); } });
         await registry.call("calculator", {}, { workspace: "/tmp", runId: "run-k" });
         await registry.call("boom", {}, { workspace: "/tmp", runId: "run-k", agent: "execute", callId: "run-k/s1/0/0" });`,
      ],
      { cwd: path.resolve(dist, "../.."), stdio: ["ignore", "inherit", "inherit"] },
    );
    const signal = await new Promise((resolve) => child.once("exit", (_code, received) => resolve(received)));
    expect(signal).toBe("SIGKILL");
    const store = await openStore(path.join(directory, "data"));
    stores.push(store);
    expect((await store.audit.unfinished({ runId: "run-k" })).map((row) => [row.tool, row.agent, row.status, row.callId])).toEqual([["boom", "execute", "started", "run-k/s1/0/0"]]);
    // What a person sees: `troupe audit list --status started`.
    const listed = execFileSync(process.execPath, [path.join(dist, "cli/main.js"), "audit", "list", "--status", "started", "--data-dir", path.join(directory, "data")], { encoding: "utf8" });
    expect(listed.trim().split("\n")).toHaveLength(1);
    expect(listed).toMatch(/run-k\s+execute\s+boom\s+allowed\s+started .*not finished: running, or its process died while it ran \(outcome unknown\)/);
  });
});

describe("a call id answers the same call again without running it twice", () => {
  it("returns a completed call's recorded outcome without running it", async () => {
    const { store, workspace, registry } = await setup();
    const first = await call(registry, "file_append", { path: "log.txt", content: "one\n" }, workspace, "run-1/s1/0/0");
    expect(first).toMatchObject({ ok: true, value: { path: "log.txt", bytes: 4, created: true } });
    expect(await call(registry, "file_append", { path: "log.txt", content: "one\n" }, workspace, "run-1/s1/0/0")).toEqual(first);
    expect(readFileSync(path.join(workspace, "log.txt"), "utf8")).toBe("one\n");
    // A different call id is a different call.
    await call(registry, "file_append", { path: "log.txt", content: "one\n" }, workspace, "run-1/s1/0/1");
    expect(readFileSync(path.join(workspace, "log.txt"), "utf8")).toBe("one\none\n");
    expect((await store.audit.list({ runId: "run-1" })).map((row) => [row.callId, row.status])).toEqual([
      ["run-1/s1/0/0", "ok"],
      ["run-1/s1/0/1", "ok"],
    ]);
  });

  it("settles a file_append cut short after its write: the derived result, appended once", async () => {
    const { store, workspace, registry } = await setup();
    writeFileSync(path.join(workspace, "log.txt"), "zero\n");
    const crashing = crashingRegistry(store, "effect");
    expect(await crashing.registry.call("file_append", { path: "log.txt", content: "one\n" }, crashing.context(workspace, "c1"))).toMatchObject({ ok: true });
    expect((await store.audit.unfinished({ runId: "run-1" })).map((row) => row.callId)).toEqual(["c1"]);
    const again = await call(registry, "file_append", { path: "log.txt", content: "one\n" }, workspace, "c1");
    expect(again).toMatchObject({ ok: true, value: { path: "log.txt", bytes: 9, created: false } });
    expect(readFileSync(path.join(workspace, "log.txt"), "utf8")).toBe("zero\none\n");
    const rows = await store.audit.list({ runId: "run-1" });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: "ok", callId: "c1", reason: expect.stringContaining("settled after a crash") });
  });

  it("runs a file_append cut short before its write, once", async () => {
    const { store, workspace, registry } = await setup();
    writeFileSync(path.join(workspace, "log.txt"), "zero\n");
    const crashing = crashingRegistry(store, "begin");
    expect(await crashing.registry.call("file_append", { path: "log.txt", content: "one\n" }, crashing.context(workspace, "c2"))).toMatchObject({ ok: false, error: { code: "cancelled" } });
    expect(readFileSync(path.join(workspace, "log.txt"), "utf8")).toBe("zero\n");
    expect(await call(registry, "file_append", { path: "log.txt", content: "one\n" }, workspace, "c2")).toMatchObject({ ok: true, value: { bytes: 9 } });
    expect(readFileSync(path.join(workspace, "log.txt"), "utf8")).toBe("zero\none\n");
    expect((await store.audit.list({ runId: "run-1" })).map((row) => [row.status, row.reason])).toEqual([["ok", "run again after a crash: the workspace did not hold this call's effect"]]);
  });

  it("refuses with outcome_unknown when the file changed otherwise, and for a non-idempotent tool with no effect", async () => {
    const { store, workspace, registry } = await setup();
    writeFileSync(path.join(workspace, "log.txt"), "zero\n");
    const crashing = crashingRegistry(store, "begin");
    await crashing.registry.call("file_append", { path: "log.txt", content: "one\n" }, crashing.context(workspace, "c3"));
    writeFileSync(path.join(workspace, "log.txt"), "someone else wrote this\n");
    const unknown = await call(registry, "file_append", { path: "log.txt", content: "one\n" }, workspace, "c3");
    expect(unknown).toMatchObject({ ok: false, error: { code: "outcome_unknown", message: expect.stringContaining("the workspace holds neither the state before it nor the state it was to leave") } });
    expect(readFileSync(path.join(workspace, "log.txt"), "utf8")).toBe("someone else wrote this\n");

    let runs = 0;
    const counted = (name: string, idempotent: boolean) =>
      defineTool({ name, description: "counts", schema: z.object({}), permission: "NONE", riskLevel: "low", idempotent, timeoutMs: 1_000, execute: async () => (runs += 1) });
    for (const target of [registry, crashing.registry]) target.register(counted("send", false)).register(counted("lookup", true));
    await crashing.registry.call("send", {}, crashing.context(workspace, "c4"));
    await crashing.registry.call("lookup", {}, crashing.context(workspace, "c5"));
    expect(runs).toBe(0);
    expect(await call(registry, "send", {}, workspace, "c4")).toMatchObject({ ok: false, error: { code: "outcome_unknown", message: expect.stringContaining("the tool is not idempotent") } });
    expect(runs).toBe(0);
    expect(await call(registry, "lookup", {}, workspace, "c5")).toMatchObject({ ok: true, value: 1 });
    expect(await store.audit.unfinished({ runId: "run-1" })).toEqual([]);
  });

  it("describes base64 content by its bytes, and file_copy by its source", async () => {
    const { workspace } = await setup();
    writeFileSync(path.join(workspace, "source.bin"), Buffer.from([0, 1, 2, 255]));
    const [write, copy] = [FILE_EFFECTS.file_write, FILE_EFFECTS.file_copy] as [ToolEffect, ToolEffect];
    const context = { workspace };
    const written = await write.capture({ path: "out.bin", content: Buffer.from([0, 1, 2, 255]).toString("base64"), encoding: "base64" }, context);
    const copied = await copy.capture({ from: "source.bin", to: "copy.bin" }, context);
    expect(written?.targets[0]?.after).toEqual(copied?.targets[0]?.after);
    expect(written?.targets[0]?.after).toMatchObject({ type: "file", bytes: 4 });
    writeFileSync(path.join(workspace, "copy.bin"), Buffer.from([0, 1, 2, 255]));
    expect(await copy.check(copied as CallEffect, context)).toBe("after");
    expect(copy.derive({ from: "source.bin", to: "copy.bin" }, copied as CallEffect)).toEqual({ from: "source.bin", to: "copy.bin", bytes: 4, created: true });
  });

  it("settles file_write, file_delete and file_move cut short after their effect", async () => {
    const { store, workspace, registry } = await setup();
    writeFileSync(path.join(workspace, "a.txt"), "old");
    writeFileSync(path.join(workspace, "gone.txt"), "bye");
    writeFileSync(path.join(workspace, "from.txt"), "moving");
    const crashing = crashingRegistry(store, "effect");
    const cases: Array<[string, Record<string, unknown>, unknown]> = [
      ["file_write", { path: "a.txt", content: "new" }, { path: "a.txt", bytes: 3, created: false }],
      ["file_delete", { path: "gone.txt" }, { path: "gone.txt", type: "file", removed: 1 }],
      ["file_move", { from: "from.txt", to: "sub/to.txt" }, { from: "from.txt", to: "sub/to.txt" }],
    ];
    for (const [name, args] of cases) expect(await crashing.registry.call(name, args, crashing.context(workspace, `w-${name}`))).toMatchObject({ ok: true });
    for (const [name, args, value] of cases) expect(await call(registry, name, args, workspace, `w-${name}`)).toMatchObject({ ok: true, value });
    expect(readFileSync(path.join(workspace, "a.txt"), "utf8")).toBe("new");
    expect(readFileSync(path.join(workspace, "sub/to.txt"), "utf8")).toBe("moving");
    expect((await store.audit.list({ runId: "run-1" })).map((row) => row.status)).toEqual(["ok", "ok", "ok"]);
  });
});
