import { execFileSync } from "node:child_process";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { workspaceRoot } from "./workspace.js";
import { readContainedFile, walkRegularFiles } from "./workspace-read.js";

let base: string;
let root: string;

beforeAll(async () => {
  base = await mkdtemp(path.join(tmpdir(), "troupe-read-"));
  root = await workspaceRoot(path.join(base, "ws"));
  writeFileSync(path.join(base, "outside.txt"), "outside");
  mkdirSync(path.join(root, "docs"));
  mkdirSync(path.join(base, "outside-dir"));
  writeFileSync(path.join(base, "outside-dir", "x.txt"), "outside");
  writeFileSync(path.join(root, "docs", "a.txt"), "alpha");
  writeFileSync(path.join(root, "big.txt"), "b".repeat(2_000));
  symlinkSync(path.join(base, "outside.txt"), path.join(root, "link.txt"));
  symlinkSync(path.join(root, "docs", "a.txt"), path.join(root, "inside-link.txt"));
  symlinkSync(path.join(base, "outside-dir"), path.join(root, "out"));
  execFileSync("mkfifo", [path.join(root, "pipe.txt")]);
});

afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

const codeOf = async (requested: string, maxBytes = 1_000): Promise<string> => {
  try {
    await readContainedFile(root, requested, maxBytes);
    return "read";
  } catch (error) {
    return (error as { code: string }).code;
  }
};

describe("reading workspace files by path through descriptors", () => {
  it("reads regular files, bounded, and refuses symlinks, FIFOs, sockets and paths out", async () => {
    expect(await readContainedFile(root, "docs/a.txt", 100)).toMatchObject({ relative: "docs/a.txt", size: 5 });
    expect((await readContainedFile(root, "docs/a.txt", 100)).bytes.toString()).toBe("alpha");
    expect(await codeOf("big.txt")).toBe("too_large");
    expect(await codeOf("big.txt", 2_000)).toBe("read");
    expect(await codeOf("link.txt")).toBe("not_a_regular_file");
    expect(await codeOf("inside-link.txt")).toBe("not_a_regular_file");
    expect(await codeOf("pipe.txt")).toBe("not_a_regular_file"); // and it did not hang
    expect(await codeOf("out/x.txt")).toBe("path_outside_workspace");
    expect(await codeOf("../outside.txt")).toBe("path_outside_workspace");
    expect(await codeOf("missing.txt")).toBe("not_found");
    const socketPath = path.join(root, "sock.txt");
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    try {
      expect(await codeOf("sock.txt")).toBe("not_a_regular_file");
    } finally {
      server.close();
    }
  });

  it("walks only real folders and lists only regular files", async () => {
    const files = await walkRegularFiles(root, { maxFiles: 100, include: () => true, skipFolder: () => false });
    expect(files.map((file) => file.relative)).toEqual(["big.txt", "docs/a.txt"]);
    expect(await walkRegularFiles(path.join(base, "missing"), { maxFiles: 100, include: () => true, skipFolder: () => false })).toEqual([]);
  });
});
