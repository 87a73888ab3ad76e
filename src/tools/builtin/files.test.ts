import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ToolOutcome } from "../define-tool.js";
import { workspaceRoot } from "../workspace.js";
import { createBuiltinRegistry } from "./index.js";

let base: string;
let workspace: string;
const registry = createBuiltinRegistry();
const call = (name: string, args: unknown): Promise<ToolOutcome> => registry.call(name, args, { workspace });

beforeEach(async () => {
  base = await mkdtemp(path.join(tmpdir(), "troupe-files-"));
  mkdirSync(path.join(base, "ws"));
  workspace = await workspaceRoot(path.join(base, "ws"));
  mkdirSync(path.join(base, "ws-evil"));
  writeFileSync(path.join(base, "ws-evil", "secret.txt"), "outside");
  writeFileSync(path.join(base, "outside.txt"), "outside");
});

afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

function errorCode(outcome: ToolOutcome): string | undefined {
  return outcome.ok ? undefined : outcome.error.code;
}

describe("workspace file tools", () => {
  it("writes, reads and lists inside the workspace, creating parent folders", async () => {
    const written = await call("file_write", { path: "out/answer.txt", content: "42" });
    expect(written).toMatchObject({ ok: true, value: { path: "out/answer.txt", bytes: 2, created: true } });
    expect(readFileSync(path.join(workspace, "out", "answer.txt"), "utf8")).toBe("42");
    expect(await call("file_read", { path: "out/answer.txt" })).toMatchObject({ ok: true, value: { content: "42", bytes: 2, truncated: false } });
    const listing = await call("file_list", { path: ".", recursive: true });
    expect(listing).toMatchObject({ ok: true, value: { entries: [{ path: "out", type: "directory" }, { path: "out/answer.txt", type: "file", bytes: 2 }] } });
  });

  it.each([
    ["a parent segment", "../outside.txt"],
    ["a nested parent segment", "a/../../outside.txt"],
    ["a backslash parent segment", "..\\outside.txt"],
    ["an absolute path", path.join(tmpdir(), "outside.txt")],
    ["a home path", "~/outside.txt"],
    ["the sibling that shares the prefix", "../ws-evil/secret.txt"],
  ])("refuses %s for every operation", async (_name, requested) => {
    expect(errorCode(await call("file_read", { path: requested }))).toBe("path_outside_workspace");
    expect(errorCode(await call("file_write", { path: requested, content: "x" }))).toBe("path_outside_workspace");
    expect(errorCode(await call("file_list", { path: requested }))).toBe("path_outside_workspace");
    expect(readFileSync(path.join(base, "outside.txt"), "utf8")).toBe("outside");
    expect(readFileSync(path.join(base, "ws-evil", "secret.txt"), "utf8")).toBe("outside");
  });

  it("does not follow symlinks that leave the workspace, for reading or writing", async () => {
    symlinkSync(path.join(base, "outside.txt"), path.join(workspace, "link.txt"));
    symlinkSync(path.join(base, "ws-evil"), path.join(workspace, "linkdir"));
    expect(errorCode(await call("file_read", { path: "link.txt" }))).toBe("path_outside_workspace");
    expect(errorCode(await call("file_read", { path: "linkdir/secret.txt" }))).toBe("path_outside_workspace");
    expect(errorCode(await call("file_write", { path: "link.txt", content: "pwned" }))).toBe("path_outside_workspace");
    expect(errorCode(await call("file_write", { path: "linkdir/new.txt", content: "pwned" }))).toBe("path_outside_workspace");
    expect(readFileSync(path.join(base, "outside.txt"), "utf8")).toBe("outside");
    expect(existsSync(path.join(base, "ws-evil", "new.txt"))).toBe(false);
    const listing = await call("file_list", { recursive: true });
    expect(listing.ok && (listing.value as { entries: Array<{ type: string }> }).entries.map((entry) => entry.type)).toEqual(["symlink", "symlink"]);
  });

  it("follows symlinks that stay inside the workspace when reading", async () => {
    writeFileSync(path.join(workspace, "real.txt"), "inside");
    symlinkSync(path.join(workspace, "real.txt"), path.join(workspace, "alias.txt"));
    expect(await call("file_read", { path: "alias.txt" })).toMatchObject({ ok: true, value: { content: "inside", path: "real.txt" } });
  });

  it("writes atomically and leaves no temporary files behind", async () => {
    await call("file_write", { path: "data.txt", content: "old" });
    const outcomes = await Promise.all(Array.from({ length: 20 }, (_, index) => call("file_write", { path: "data.txt", content: `new ${index}`.repeat(1000) })));
    expect(outcomes.every((outcome) => outcome.ok)).toBe(true);
    const content = readFileSync(path.join(workspace, "data.txt"), "utf8");
    expect(content).toMatch(/^(new \d+)+$/);
    expect(new Set(content.match(/new \d+/g)).size).toBe(1);
    expect(await readdir(workspace)).toEqual(["data.txt"]);
  });

  it("reports missing files, folders given as files, refused overwrites and invalid arguments clearly", async () => {
    expect(await call("file_read", { path: "nope.txt" })).toMatchObject({ ok: false, error: { code: "not_found", message: '"nope.txt" does not exist in the workspace' } });
    mkdirSync(path.join(workspace, "folder"));
    expect(errorCode(await call("file_read", { path: "folder" }))).toBe("invalid_path");
    expect(errorCode(await call("file_write", { path: "folder", content: "x" }))).toBe("invalid_path");
    await call("file_write", { path: "keep.txt", content: "keep" });
    expect(errorCode(await call("file_write", { path: "keep.txt", content: "x", overwrite: false }))).toBe("exists");
    expect(errorCode(await call("file_write", { path: "x.txt" }))).toBe("invalid_arguments");
    expect(errorCode(await call("no_such_tool", {}))).toBe("unknown_tool");
  });
});

describe("text_stats", () => {
  it("counts lines as wc -l does plus an unterminated last line, words, and UTF-8 characters, streaming large files", async () => {
    writeFileSync(path.join(workspace, "a.txt"), "one two\nthree\n");
    writeFileSync(path.join(workspace, "b.txt"), "naïve  café\n\nend");
    writeFileSync(path.join(workspace, "empty.txt"), "");
    writeFileSync(path.join(workspace, "big.txt"), "word\n".repeat(300_000));
    expect(await call("text_stats", { path: "a.txt" })).toMatchObject({ ok: true, value: { path: "a.txt", bytes: 14, lines: 2, words: 3, characters: 14 }, summary: "a.txt: 2 lines, 3 words, 14 characters" });
    expect(await call("text_stats", { path: "b.txt" })).toMatchObject({ ok: true, value: { lines: 3, words: 3, characters: 16, bytes: 18 } });
    expect(await call("text_stats", { path: "empty.txt" })).toMatchObject({ ok: true, value: { lines: 0, words: 0, characters: 0 } });
    expect(await call("text_stats", { path: "big.txt" })).toMatchObject({ ok: true, value: { lines: 300_000, words: 300_000, bytes: 1_500_000 } });
    expect(errorCode(await call("text_stats", { path: "../outside.txt" }))).toBe("path_outside_workspace");
    expect(errorCode(await call("text_stats", { path: "." }))).toBe("invalid_path");
  });
});

describe("calculator and json tools", () => {
  it("computes through the parser and reports expression errors", async () => {
    expect(await call("calculator", { expression: "17% of 2,340" })).toEqual({ ok: true, value: 397.8, summary: "17% of 2,340 = 397.8" });
    expect(await call("calculator", { expression: "1/0" })).toMatchObject({ ok: false, error: { code: "invalid_expression" } });
  });

  it("validates, formats and queries JSON, locating syntax errors", async () => {
    expect(await call("json", { text: '{"a": [1, 2]}' })).toMatchObject({ ok: true, value: { valid: true, type: "object" } });
    const invalid = await call("json", { text: '{\n  "a": 1,\n  "b": }' });
    expect(invalid).toMatchObject({ ok: true, value: { valid: false, line: 3 } });
    expect(await call("json", { operation: "query", text: '{"items": [{"n": 1}, {"n": 2}]}', path: "$.items[*].n" })).toMatchObject({ ok: true, value: { matches: [1, 2] } });
    expect(await call("json", { operation: "format", text: "[1,2]" })).toMatchObject({ ok: true, value: { formatted: "[\n  1,\n  2\n]" } });
  });
});

describe("tool registry", () => {
  it("refuses a duplicate tool name", () => {
    const tool = registry.get("calculator");
    expect(() => createBuiltinRegistry().register(tool!)).toThrow(/already registered/);
  });
});
