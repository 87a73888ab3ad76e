import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createBuiltinTools } from "./builtin/index.js";
import type { ToolOutcome } from "./define-tool.js";
import { ToolRegistry } from "./registry.js";
import { workspaceRoot } from "./workspace.js";
import { setWorkspaceQuota, workspaceUsage } from "./workspace-quota.js";

let base: string;
const registry = new ToolRegistry();
for (const tool of createBuiltinTools({ sandbox: { timeoutMs: 20_000, maxFileBytes: 4 * 1024 * 1024 } })) registry.register(tool);

beforeAll(async () => {
  base = await mkdtemp(path.join(tmpdir(), "troupe-quota-"));
});
afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

async function workspace(quota: { maxBytes?: number; maxFiles?: number }): Promise<string> {
  const root = await workspaceRoot(path.join(base, `ws-${Math.random().toString(36).slice(2)}`));
  setWorkspaceQuota(root, quota);
  return root;
}

const call = (root: string, name: string, args: Record<string, unknown>): Promise<ToolOutcome> => registry.call(name, args, { workspace: root });

describe("the workspace quota", () => {
  it("refuses a file tool's write that would pass the bytes or the files quota, with quota_exceeded", async () => {
    const root = await workspace({ maxBytes: 1_000_000, maxFiles: 5 });
    expect(await call(root, "file_write", { path: "a.txt", content: "a".repeat(600_000) })).toMatchObject({ ok: true });
    const refused = await call(root, "file_write", { path: "b.txt", content: "b".repeat(600_000) });
    expect(refused).toEqual({
      ok: false,
      error: { code: "quota_exceeded", message: "the workspace would hold 1200000 bytes, over the workspace quota of 1000000 bytes (tools.quota in the config file)" },
    });
    expect(readdirSync(root)).toEqual(["a.txt"]);
    // Replacing a file counts only the difference; shrinking is always allowed.
    expect(await call(root, "file_write", { path: "a.txt", content: "a".repeat(900_000) })).toMatchObject({ ok: true });
    expect(await call(root, "file_append", { path: "a.txt", content: "a".repeat(200_000) })).toMatchObject({ ok: false, error: { code: "quota_exceeded" } });
    expect(statSync(path.join(root, "a.txt")).size).toBe(900_000);
    expect(await call(root, "file_write", { path: "a.txt", content: "small" })).toMatchObject({ ok: true });
    for (const name of ["b", "c", "d", "e"]) expect(await call(root, "file_write", { path: `${name}.txt`, content: name })).toMatchObject({ ok: true });
    expect(await call(root, "file_write", { path: "f.txt", content: "f" })).toMatchObject({ ok: false, error: { code: "quota_exceeded", message: expect.stringContaining("6 files and folders, over the workspace quota of 5") } });
  });

  it("applies none of a script's writes when the run would leave the workspace over its quota (it ran on a staged copy)", async () => {
    const root = await workspace({ maxBytes: 3 * 1024 * 1024 });
    writeFileSync(path.join(root, "log.txt"), "kept\n");
    mkdirSync(path.join(root, "old"));
    writeFileSync(path.join(root, "old", "keep.txt"), "old");
    const before = await workspaceUsage(root);
    const script = [
      "import os",
      "os.makedirs('/workspace/out/deep', exist_ok=True)",
      "for i in range(5):",
      "    open(f'/workspace/out/deep/part{i}.bin', 'wb').write(b'x' * 1024 * 1024)",
      "open('/workspace/log.txt', 'a').write('appended by the run\\n')",
      "open('/workspace/old/new.txt', 'w').write('new')",
    ].join("\n");
    const outcome = await call(root, "code_run", { language: "python", code: script });
    expect(outcome).toMatchObject({ ok: false, error: { code: "quota_exceeded" } });
    expect(!outcome.ok && outcome.error.message).toMatch(/^the script would leave the workspace holding \d+ bytes \(quota 3145728\), over its quota \(tools\.quota in the config file\); nothing it wrote was applied$/);
    expect(readdirSync(root).sort()).toEqual(["log.txt", "old"]);
    expect(readdirSync(path.join(root, "old"))).toEqual(["keep.txt"]);
    expect(readFileSync(path.join(root, "log.txt"), "utf8")).toBe("kept\n");
    expect(await workspaceUsage(root)).toEqual(before);
    // Within the quota, a script's writes stay.
    expect(await call(root, "code_run", { language: "python", code: "open('/workspace/small.txt', 'w').write('ok')" })).toMatchObject({ ok: true });
    expect(readFileSync(path.join(root, "small.txt"), "utf8")).toBe("ok");
  });
});
