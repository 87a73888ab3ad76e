import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ToolOutcome } from "../define-tool.js";
import { workspaceRoot } from "../workspace.js";
import { MAX_FORMATTED_BYTES, prettySizeWithin } from "./json.js";
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
    ["a parent segment after a dot", "./../outside.txt"],
    ["a trailing parent segment", "sub/.."],
    ["a nested parent segment", "a/../../outside.txt"],
    ["a backslash parent segment", "..\\outside.txt"],
    ["an absolute path", path.join(tmpdir(), "outside.txt")],
    ["a home path", "~/outside.txt"],
    ["the sibling that shares the prefix", "../ws-evil/secret.txt"],
  ])("refuses %s for every operation", async (_name, requested) => {
    expect(errorCode(await call("file_read", { path: requested }))).toBe("path_outside_workspace");
    expect(errorCode(await call("file_write", { path: requested, content: "x" }))).toBe("path_outside_workspace");
    expect(errorCode(await call("file_list", { path: requested }))).toBe("path_outside_workspace");
    expect(errorCode(await call("file_append", { path: requested, content: "x" }))).toBe("path_outside_workspace");
    expect(errorCode(await call("file_delete", { path: requested, recursive: true }))).toBe("path_outside_workspace");
    expect(errorCode(await call("file_move", { from: requested, to: "moved.txt" }))).toBe("path_outside_workspace");
    expect(errorCode(await call("file_move", { from: "moved.txt", to: requested }))).toBe("path_outside_workspace");
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

  it("reads through the workspace's containment: symlinks out and prefix siblings are refused", async () => {
    symlinkSync(path.join(base, "outside.txt"), path.join(workspace, "link.txt"));
    symlinkSync(path.join(base, "ws-evil"), path.join(workspace, "linkdir"));
    writeFileSync(path.join(workspace, "real.txt"), "in side\n");
    symlinkSync(path.join(workspace, "real.txt"), path.join(workspace, "alias.txt"));
    expect(errorCode(await call("text_stats", { path: "link.txt" }))).toBe("path_outside_workspace");
    expect(errorCode(await call("text_stats", { path: "linkdir/secret.txt" }))).toBe("path_outside_workspace");
    expect(errorCode(await call("text_stats", { path: "../ws-evil/secret.txt" }))).toBe("path_outside_workspace");
    expect(await call("text_stats", { path: "alias.txt" })).toMatchObject({ ok: true, value: { path: "real.txt", lines: 1, words: 2 } });
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

  it("refuses to pretty-print nesting that would print as gigabytes, before building it", async () => {
    // 2.4 MB of nested brackets: indented, about 4.8 GB.
    const deep = `[${Array(300).fill(`${"[".repeat(4_000)}${"]".repeat(4_000)}`).join(",")}]`;
    expect(await call("json", { operation: "format", text: deep })).toMatchObject({ ok: false, error: { code: "result_too_large", message: expect.stringContaining(`more than ${MAX_FORMATTED_BYTES} bytes pretty-printed`) } });
    for (const document of [[1, 2], { a: { b: [1, "ü", null, {}], c: [] } }, [[[[]]]], "text"]) {
      const measured = prettySizeWithin(document, Number.MAX_SAFE_INTEGER).bytes;
      const real = Buffer.byteLength(JSON.stringify(document, null, 2));
      expect(measured).toBeGreaterThanOrEqual(real);
      expect(measured - real).toBeLessThanOrEqual(4);
    }
  });
});

describe("tool registry", () => {
  it("refuses a duplicate tool name", () => {
    const tool = registry.get("calculator");
    expect(() => createBuiltinRegistry().register(tool!)).toThrow(/already registered/);
  });
});

/** Everything under `directory`, as relative paths (to prove nothing was added outside). */
function tree(directory: string): string[] {
  return readdirSync(directory, { recursive: true, encoding: "utf8" }).sort();
}

describe("path corpus: nothing outside the workspace is ever touched", () => {
  it("treats encoded and look-alike dots as plain names inside the workspace", async () => {
    const before = tree(base).filter((entry) => !entry.startsWith("ws/") && entry !== "ws");
    for (const requested of ["%2e%2e/outside.txt", "..%2foutside.txt", "%2E%2E%2Foutside.txt", "．．/outside.txt", "..%5coutside.txt", "...", "....//outside.txt"]) {
      const written = await call("file_write", { path: requested, content: "inside" });
      expect(written.ok, requested).toBe(true);
      const real = path.join(workspace, ...requested.split("/").filter(Boolean));
      expect(readFileSync(real, "utf8")).toBe("inside");
    }
    expect(tree(base).filter((entry) => !entry.startsWith("ws/") && entry !== "ws")).toEqual(before);
    expect(readFileSync(path.join(base, "outside.txt"), "utf8")).toBe("outside");
  });

  it("refuses symlinks that lead out, through any operation, and removes a link without its target", async () => {
    symlinkSync(path.join(base, "outside.txt"), path.join(workspace, "link.txt"));
    symlinkSync(path.join(base, "ws-evil"), path.join(workspace, "evil"));
    mkdirSync(path.join(workspace, "inner"));
    symlinkSync("../evil", path.join(workspace, "inner", "chain")); // inside → inside → outside
    expect(errorCode(await call("file_read", { path: "inner/chain/secret.txt" }))).toBe("path_outside_workspace");
    expect(errorCode(await call("file_append", { path: "link.txt", content: "x" }))).toBe("path_outside_workspace");
    expect(errorCode(await call("file_write", { path: "evil/new.txt", content: "x" }))).toBe("path_outside_workspace");
    expect(errorCode(await call("file_list", { path: "evil" }))).toBe("path_outside_workspace");
    expect(errorCode(await call("file_delete", { path: "evil/secret.txt" }))).toBe("path_outside_workspace");
    expect(errorCode(await call("file_move", { from: "evil/secret.txt", to: "stolen.txt" }))).toBe("path_outside_workspace");
    expect(errorCode(await call("file_move", { from: "link.txt", to: "evil/link.txt" }))).toBe("path_outside_workspace");
    // Deleting or moving the link itself only touches the link.
    expect(await call("file_move", { from: "link.txt", to: "moved-link.txt" })).toMatchObject({ ok: true });
    expect(await call("file_delete", { path: "moved-link.txt" })).toMatchObject({ ok: true, value: { type: "symlink" } });
    expect(await call("file_delete", { path: "evil", recursive: true })).toMatchObject({ ok: true, value: { type: "symlink", removed: 1 } });
    expect(readFileSync(path.join(base, "outside.txt"), "utf8")).toBe("outside");
    expect(readFileSync(path.join(base, "ws-evil", "secret.txt"), "utf8")).toBe("outside");
  });

  it("appends, moves and deletes inside the workspace, refusing what would lose data silently", async () => {
    expect(await call("file_append", { path: "log/a.txt", content: "one\n" })).toMatchObject({ ok: true, value: { created: true, bytes: 4 } });
    expect(await call("file_append", { path: "log/a.txt", content: "two\n" })).toMatchObject({ ok: true, value: { created: false, bytes: 8 } });
    expect(readFileSync(path.join(workspace, "log", "a.txt"), "utf8")).toBe("one\ntwo\n");
    await call("file_write", { path: "b.txt", content: "b" });
    expect(errorCode(await call("file_move", { from: "b.txt", to: "log/a.txt" }))).toBe("exists");
    expect(await call("file_move", { from: "b.txt", to: "archive/2024/b.txt" })).toMatchObject({ ok: true, value: { from: "b.txt", to: "archive/2024/b.txt" } });
    expect(errorCode(await call("file_move", { from: "archive", to: "archive/inside" }))).toBe("invalid_path");
    expect(errorCode(await call("file_delete", { path: "log" }))).toBe("not_empty");
    expect(await call("file_delete", { path: "log", recursive: true })).toMatchObject({ ok: true, value: { type: "directory", removed: 2 } });
    expect(errorCode(await call("file_delete", { path: "." }))).toBe("invalid_path");
    expect(errorCode(await call("file_delete", { path: "log" }))).toBe("not_found");
    expect(errorCode(await call("file_write", { path: "big.txt", content: "x".repeat(16 * 1024 * 1024 + 1) }))).toBe("too_large");
    expect(await readdir(workspace)).toEqual(["archive"]);
  });

  it("does not hang on a FIFO and refuses it as not a file", async () => {
    const fifo = path.join(workspace, "pipe");
    await new Promise<void>((resolve, reject) => spawn("mkfifo", [fifo]).on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`mkfifo ${code}`)))));
    expect(errorCode(await call("file_read", { path: "pipe" }))).toBe("invalid_path");
    expect(errorCode(await call("file_write", { path: "pipe", content: "x" }))).toBe("invalid_path");
  });

  it("stays inside while another process swaps a folder for a symlink to outside, again and again", async () => {
    const outsideDir = path.join(base, "ws-evil");
    mkdirSync(path.join(workspace, "sub"));
    // A separate process races the tools: sub is a real folder one moment, a link out the next.
    const swapper = spawn(
      process.execPath,
      [
        "-e",
        `const fs = require("fs"); const ws = ${JSON.stringify(workspace)}; const out = ${JSON.stringify(outsideDir)};
         process.stdout.write("ready\\n");
         for (;;) { try { fs.renameSync(ws + "/sub", ws + "/sub-real"); fs.symlinkSync(out, ws + "/sub"); fs.unlinkSync(ws + "/sub"); fs.renameSync(ws + "/sub-real", ws + "/sub"); } catch {} }`,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    await new Promise((resolve) => swapper.stdout.once("data", resolve));
    const codes = new Map<string, string>();
    try {
      for (let round = 0; round < 150; round += 1) {
        const outcomes = await Promise.all([
          call("file_write", { path: `sub/w${round}.txt`, content: "data" }),
          call("file_append", { path: "sub/log.txt", content: "line\n" }),
          call("file_read", { path: "sub/secret.txt" }),
          call("file_list", { path: "sub", recursive: true }),
          call("file_delete", { path: `sub/w${round}.txt` }),
          call("file_move", { from: "sub/log.txt", to: "sub/log2.txt" }),
        ]);
        for (const outcome of outcomes) if (!outcome.ok) codes.set(outcome.error.code, outcome.error.message);
        for (const outcome of outcomes) {
          if (outcome.ok && typeof outcome.value === "object" && outcome.value && "content" in outcome.value) {
            expect((outcome.value as { content: string }).content).not.toBe("outside");
          }
        }
      }
    } finally {
      swapper.kill("SIGKILL");
    }
    expect(readdirSync(outsideDir)).toEqual(["secret.txt"]);
    expect(readFileSync(path.join(outsideDir, "secret.txt"), "utf8")).toBe("outside");
    for (const [code, message] of codes) expect(["path_outside_workspace", "not_found", "exists", "invalid_path"], message).toContain(code);
  });
});

describe("atomic writes under SIGKILL", () => {
  const writer = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../dist/src/tools/workspace-files.js");

  it("leaves the old content or the new one, never a torn file", async () => {
    const size = 2 * 1024 * 1024;
    for (let round = 0; round < 6; round += 1) {
      writeFileSync(path.join(workspace, "data.txt"), "a".repeat(size));
      const child = spawn(
        process.execPath,
        [
          "--input-type=module",
          "-e",
          `const { writeWorkspaceFile } = await import(${JSON.stringify(writer)});
           let n = 0;
           for (;;) { await writeWorkspaceFile(${JSON.stringify(workspace)}, "data.txt", (n % 2 ? "a" : "b").repeat(${size}), { maxBytes: ${size} }); n += 1; process.stdout.write("w"); }`,
        ],
        { stdio: ["ignore", "pipe", "inherit"] },
      );
      // Kill it at a different point of its write loop each round.
      let written = 0;
      await new Promise<void>((resolve) => {
        child.stdout.on("data", (chunk: Buffer) => {
          written += chunk.length;
          if (written >= 1 + round) resolve();
        });
      });
      await new Promise((resolve) => setTimeout(resolve, round * 7));
      child.kill("SIGKILL");
      await new Promise((resolve) => child.once("exit", resolve));
      const content = readFileSync(path.join(workspace, "data.txt"), "utf8");
      expect(content.length).toBe(size);
      expect(content === "a".repeat(size) || content === "b".repeat(size)).toBe(true);
    }
    // Leftover temporary files (a write cut short) are hidden from listings.
    const listing = await call("file_list", {});
    expect(listing).toMatchObject({ ok: true, value: { entries: [{ path: "data.txt", type: "file" }] } });
  });
});
