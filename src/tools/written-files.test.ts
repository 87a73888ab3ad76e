import { createHash } from "node:crypto";
import { symlinkSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { workspaceRoot } from "./workspace.js";
import { fileDigest } from "./workspace-files.js";
import { WRITTEN_FILE_KEEP_BYTES, WrittenFiles } from "./written-files.js";

const sha = (bytes: Buffer): string => createHash("sha256").update(bytes).digest("hex");

let base: string;
let root: string;

beforeAll(async () => {
  base = await mkdtemp(path.join(tmpdir(), "troupe-written-"));
  root = await workspaceRoot(path.join(base, "ws"));
  writeFileSync(path.join(root, "small.txt"), "alpha");
  writeFileSync(path.join(root, "chunks.bin"), Buffer.alloc(200 * 1024, 7));
  writeFileSync(path.join(base, "outside.txt"), "outside");
  symlinkSync(path.join(base, "outside.txt"), path.join(root, "link.txt"));
});

afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

describe("fileDigest with the bytes kept", () => {
  it("returns the bytes with the digest only up to the bound, read once through the workspace's containment", async () => {
    const small = await fileDigest(root, "small.txt", { keepUpTo: 10 });
    expect(small).toEqual({ bytes: 5, sha256: sha(Buffer.from("alpha")), content: Buffer.from("alpha") });
    // Several reads' worth of bytes, kept whole.
    const chunks = await fileDigest(root, "chunks.bin", { keepUpTo: 1024 * 1024 });
    expect(chunks?.content?.equals(Buffer.alloc(200 * 1024, 7))).toBe(true);
    expect(chunks?.sha256).toBe(sha(Buffer.alloc(200 * 1024, 7)));
    // Over the bound: the digest alone, the same as without the option.
    const over = await fileDigest(root, "chunks.bin", { keepUpTo: 100 * 1024 });
    expect(over).toEqual(await fileDigest(root, "chunks.bin"));
    expect(over?.content).toBeUndefined();
    expect(await fileDigest(root, "small.txt")).toEqual({ bytes: 5, sha256: sha(Buffer.from("alpha")) });
    await expect(fileDigest(root, "link.txt", { keepUpTo: 10 })).rejects.toMatchObject({ code: "path_outside_workspace" });
    expect(await fileDigest(root, "missing.txt", { keepUpTo: 10 })).toBeUndefined();
  });
});

describe("WrittenFiles", () => {
  it("finds bytes by their hash, keeps none over 4 MB, drops the least recently used past its total, and forgets after its age", async () => {
    const files = new WrittenFiles({ maxTotalBytes: 10, maxAgeMs: 50 });
    const a = Buffer.from("aaaa");
    const b = Buffer.from("bbbb");
    const c = Buffer.from("cccc");
    files.remember(sha(a), a);
    files.remember(sha(b), b);
    expect(files.get(sha(a))).toBe(a);
    files.remember(sha(c), c);
    // 12 bytes do not fit in 10: b, the least recently used, went.
    expect(files.get(sha(b))).toBeUndefined();
    expect(files.get(sha(a))?.toString()).toBe("aaaa");
    expect(files.size).toBe(8);
    await sleep(120);
    expect(files.get(sha(a))).toBeUndefined();

    const large = new WrittenFiles();
    const big = Buffer.alloc(WRITTEN_FILE_KEEP_BYTES + 1);
    large.remember(sha(big), big);
    expect(large.get(sha(big))).toBeUndefined();
    const empty = Buffer.alloc(0);
    large.remember(sha(empty), empty);
    expect(large.get(sha(empty))?.byteLength).toBe(0);
  });
});
