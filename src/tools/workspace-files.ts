import { createHash, randomBytes } from "node:crypto";
import { constants as fsConstants } from "node:fs";
import { type FileHandle, lstat, open, readdir, realpath, rename, rmdir, unlink } from "node:fs/promises";
import path from "node:path";
import { ToolError } from "../core/errors.js";
import type { FileIdentity } from "../core/file-labels.js";
import { type FileFacts, factsOf, sha256Of } from "./file-trust.js";
import { reserveQuota } from "./workspace-quota.js";
import { readBounded } from "./workspace-read.js";
import { checkRelativePath, directoryAt, errnoOf, isInside, type OpenDirectory, openDirectory, openFileForRead, openParent, refuse, translated } from "./workspace.js";

/**
 * The operations of the file tools, on top of workspace.ts's containment: every entry is
 * addressed through a directory held open, writes are atomic, links are never followed for
 * writing or deleting, and operations on the same path in this process run one at a time.
 */

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK, O_WRONLY, O_CREAT, O_EXCL } = fsConstants;

/** Refuses to write over a symlink or a directory; returns whether a file is there. */
async function checkWriteTarget(directory: OpenDirectory, name: string, requested: string, root: string): Promise<boolean> {
  const existing = await lstat(`${directory.anchor}/${name}`).catch((error: unknown) => {
    if (errnoOf(error) === "ENOENT") return undefined;
    throw error;
  });
  if (!existing) return false;
  if (existing.isSymbolicLink()) {
    const target = await realpath(path.join(root, ...directory.segments, name)).catch(() => undefined);
    if (target === undefined || !isInside(root, target)) refuse(`"${requested}" is a symlink that leads outside the workspace`, requested);
    throw new ToolError("invalid_path", `"${requested}" is a symlink; troupe does not write through symlinks`, { path: requested });
  }
  if (existing.isDirectory()) throw new ToolError("invalid_path", `"${requested}" is a directory`, { path: requested });
  if (!existing.isFile()) throw new ToolError("invalid_path", `"${requested}" is not a regular file`, { path: requested });
  return true;
}

/**
 * Replaces `name` in an open directory atomically: a temporary file beside it, fsync, rename,
 * then fsync of the directory — a crash leaves the old content or the new, never a torn file.
 */
async function replaceInDirectory(directory: OpenDirectory, name: string, bytes: Uint8Array): Promise<WrittenIdentity> {
  const temporary = `.${name}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
  const temporaryPath = `${directory.anchor}/${temporary}`;
  const handle = await open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o644);
  let written: WrittenIdentity;
  try {
    await handle.writeFile(bytes);
    await handle.sync();
    // The file the rename puts in place: its identity is what a label recorded for it is keyed by.
    const info = await handle.stat({ bigint: true });
    written = { identity: { device: info.dev.toString(), inode: info.ino.toString() }, mtimeMs: Number(info.mtimeMs) };
  } catch (error) {
    await handle.close().catch(() => undefined);
    await unlink(temporaryPath).catch(() => undefined);
    throw error;
  }
  await handle.close();
  try {
    await rename(temporaryPath, `${directory.anchor}/${name}`);
  } catch (error) {
    await unlink(temporaryPath).catch(() => undefined);
    throw error;
  }
  await directory.handle.sync().catch(() => undefined);
  return written;
}

/** A file just written: its device and inode, and its modification time. */
interface WrittenIdentity {
  identity: FileIdentity;
  mtimeMs: number;
}

/** Whether a name is one of troupe's temporary files (hidden from listings). */
export function isTemporaryName(name: string): boolean {
  return /^\..+\.\d+\.[0-9a-f]{12}\.tmp$/.test(name);
}

const locks = new Map<string, Promise<unknown>>();

/** Runs `work` after every earlier operation on the same key (a path) in this process has finished. */
export async function withPathLock<T>(key: string, work: () => Promise<T>): Promise<T> {
  const previous = locks.get(key) ?? Promise.resolve();
  const current = previous.then(work, work);
  const settled = current.catch(() => undefined);
  locks.set(key, settled);
  try {
    return await current;
  } finally {
    if (locks.get(key) === settled) locks.delete(key);
  }
}

export interface WriteResult {
  relative: string;
  bytes: number;
  created: boolean;
  /** The SHA-256 of what was written, and the file's identity: what its label is recorded by (src/tools/file-trust.ts). */
  sha256: string;
  identity: FileIdentity;
  mtimeMs: number;
  /** The file appended to, as it was (its digest and identity), so the new file's label can join its label. */
  previous?: FileFacts;
}

/** Writes a workspace file atomically (parents created); `append` adds to what is there. */
export async function writeWorkspaceFile(
  root: string,
  requested: string,
  content: string | Uint8Array,
  options: { overwrite?: boolean; append?: boolean; maxBytes: number; beforeWrite?: (about: { relative: string; sha256: string; previous?: FileFacts }) => Promise<void> },
): Promise<WriteResult> {
  checkRelativePath(requested);
  return translated(requested, () => withPathLock(`${root}\u0000${requested}`, async () => {
    const { directory, name } = await openParent(root, requested, true);
    try {
      const existed = await checkWriteTarget(directory, name, requested, root);
      if (existed && options.overwrite === false && !options.append) throw new ToolError("exists", `"${requested}" already exists`, { path: requested });
      let bytes = typeof content === "string" ? Buffer.from(content, "utf8") : Buffer.from(content.buffer, content.byteOffset, content.byteLength);
      const relative = [...directory.segments, name].join("/");
      let previous: FileFacts | undefined;
      if (options.append && existed) {
        const handle = await open(`${directory.anchor}/${name}`, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
        try {
          const size = (await handle.stat()).size;
          if (size + bytes.byteLength > options.maxBytes) {
            throw new ToolError("too_large", `"${requested}" would grow past ${options.maxBytes} bytes`, { path: requested });
          }
          const before = await readBounded(handle, options.maxBytes - bytes.byteLength);
          if (before.larger) throw new ToolError("too_large", `"${requested}" would grow past ${options.maxBytes} bytes`, { path: requested });
          // What was there, judged by the bytes actually read: the appended file carries its label too.
          previous = await factsOf(handle, relative, before.bytes);
          bytes = Buffer.concat([before.bytes, bytes]);
        } finally {
          await handle.close();
        }
      }
      if (bytes.byteLength > options.maxBytes) throw new ToolError("too_large", `the content is larger than ${options.maxBytes} bytes`, { path: requested });
      const oldSize = existed ? ((await lstat(`${directory.anchor}/${name}`).catch(() => undefined))?.size ?? 0) : 0;
      await reserveQuota(root, { bytes: bytes.byteLength - oldSize, files: existed ? 0 : 1 });
      const sha256 = sha256Of(bytes);
      // Before the file exists: a label that must follow the content is kept first, so no crash leaves the file without it.
      await options.beforeWrite?.({ relative, sha256, ...(previous ? { previous } : {}) });
      const written = await replaceInDirectory(directory, name, bytes);
      return { relative, bytes: bytes.byteLength, created: !existed, sha256, ...written, ...(previous ? { previous } : {}) };
    } finally {
      await directory.close();
    }
  }));
}

export interface ListedEntry {
  path: string;
  type: "file" | "directory" | "symlink" | "other";
  bytes?: number;
}

/**
 * Lists a workspace folder (optionally recursively) without following symlinks. With
 * `identities`, also each entry's real path and device and inode (for the labels of the names).
 */
export async function listWorkspace(
  root: string,
  requested: string,
  options: { recursive: boolean; maxEntries: number; identities?: boolean },
): Promise<{ relative: string; entries: ListedEntry[]; truncated: boolean; identities?: Array<{ relative: string; identity?: FileIdentity }> }> {
  const segments = checkRelativePath(requested.trim() === "" ? "." : requested);
  const start = await translated(requested, () => openDirectory(root, segments, { requested }));
  const entries: ListedEntry[] = [];
  const identities: Array<{ relative: string; identity?: FileIdentity }> = [];
  const identify = async (directory: OpenDirectory, name: string): Promise<void> => {
    if (!options.identities) return;
    const info = await lstat(`${directory.anchor}/${name}`, { bigint: true }).catch(() => undefined);
    identities.push({ relative: [...directory.segments, name].join("/"), ...(info ? { identity: { device: info.dev.toString(), inode: info.ino.toString() } } : {}) });
  };
  let truncated = false;
  const walk = async (directory: OpenDirectory, prefix: string): Promise<void> => {
    const names = (await readdir(directory.anchor, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name));
    for (const dirent of names) {
      if (isTemporaryName(dirent.name)) continue;
      if (entries.length >= options.maxEntries) {
        truncated = true;
        return;
      }
      const relative = prefix ? `${prefix}/${dirent.name}` : dirent.name;
      await identify(directory, dirent.name);
      if (dirent.isSymbolicLink()) entries.push({ path: relative, type: "symlink" });
      else if (dirent.isDirectory()) {
        entries.push({ path: relative, type: "directory" });
        if (!options.recursive) continue;
        let child: FileHandle;
        try {
          child = await open(`${directory.anchor}/${dirent.name}`, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
        } catch {
          continue; // replaced while listing: not followed
        }
        const opened = directoryAt(child, [...directory.segments, dirent.name], `${directory.anchor}/${dirent.name}`);
        try {
          await walk(opened, relative);
        } finally {
          await opened.close();
        }
      } else if (dirent.isFile()) {
        const info = await lstat(`${directory.anchor}/${dirent.name}`).catch(() => undefined);
        entries.push({ path: relative, type: "file", ...(info ? { bytes: info.size } : {}) });
      } else entries.push({ path: relative, type: "other" });
    }
  };
  try {
    await translated(requested, () => walk(start, start.segments.join("/")));
  } finally {
    await start.close();
  }
  return { relative: start.segments.join("/") || ".", entries, truncated, ...(options.identities ? { identities } : {}) };
}

/** Removes a directory's contents and then itself, never following a symlink; returns the entries removed. */
async function removeTree(parent: OpenDirectory, name: string, budget: { left: number }, requested: string): Promise<number> {
  let handle: FileHandle;
  try {
    handle = await open(`${parent.anchor}/${name}`, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  } catch (error) {
    if (errnoOf(error) === "ELOOP" || errnoOf(error) === "ENOTDIR") {
      await unlink(`${parent.anchor}/${name}`);
      return 1;
    }
    throw error;
  }
  const directory = directoryAt(handle, [...parent.segments, name], `${parent.anchor}/${name}`);
  let removed = 0;
  try {
    for (const dirent of await readdir(directory.anchor, { withFileTypes: true })) {
      budget.left -= 1;
      if (budget.left < 0) throw new ToolError("too_large", `"${requested}" holds too many entries to delete at once`, { path: requested });
      if (dirent.isDirectory()) removed += await removeTree(directory, dirent.name, budget, requested);
      else {
        await unlink(`${directory.anchor}/${dirent.name}`);
        removed += 1;
      }
    }
  } finally {
    await directory.close();
  }
  await rmdir(`${parent.anchor}/${name}`);
  return removed + 1;
}

/** Deletes a file, a symlink (not its target) or, with `recursive`, a folder of the workspace. */
export async function deleteWorkspaceEntry(root: string, requested: string, options: { recursive: boolean; maxEntries: number }): Promise<{ relative: string; removed: number; type: ListedEntry["type"] }> {
  checkRelativePath(requested);
  return translated(requested, () => withPathLock(`${root}\u0000${requested}`, async () => {
    const { directory, name } = await openParent(root, requested, false);
    try {
      const info = await lstat(`${directory.anchor}/${name}`).catch((error: unknown) => {
        if (errnoOf(error) === "ENOENT") throw new ToolError("not_found", `"${requested}" does not exist in the workspace`, { path: requested });
        throw error;
      });
      const relative = [...directory.segments, name].join("/");
      if (info.isDirectory()) {
        if (!options.recursive) {
          try {
            await rmdir(`${directory.anchor}/${name}`);
          } catch (error) {
            if (errnoOf(error) === "ENOTEMPTY" || errnoOf(error) === "EEXIST") {
              throw new ToolError("not_empty", `"${requested}" is a folder that is not empty; pass recursive: true to delete it with its contents`, { path: requested });
            }
            throw error;
          }
          return { relative, removed: 1, type: "directory" as const };
        }
        const removed = await removeTree(directory, name, { left: options.maxEntries }, requested);
        return { relative, removed, type: "directory" as const };
      }
      await unlink(`${directory.anchor}/${name}`);
      return { relative, removed: 1, type: info.isSymbolicLink() ? ("symlink" as const) : info.isFile() ? ("file" as const) : ("other" as const) };
    } finally {
      await directory.close();
    }
  }));
}

/** Moves (renames) an entry inside the workspace; a symlink moves as a link. */
export async function moveWorkspaceEntry(root: string, from: string, to: string, options: { overwrite: boolean }): Promise<{ from: string; to: string }> {
  checkRelativePath(from);
  checkRelativePath(to);
  return translated(from, () => withPathLock(`${root}\u0000${from}`, () =>
    withPathLock(`${root}\u0000${to}`, async () => {
      const source = await openParent(root, from, false);
      try {
        await lstat(`${source.directory.anchor}/${source.name}`).catch((error: unknown) => {
          if (errnoOf(error) === "ENOENT") throw new ToolError("not_found", `"${from}" does not exist in the workspace`, { path: from });
          throw error;
        });
        const destination = await openParent(root, to, true);
        try {
          const existing = await lstat(`${destination.directory.anchor}/${destination.name}`).catch(() => undefined);
          if (existing?.isDirectory()) throw new ToolError("invalid_path", `"${to}" is a folder; give the full new path`, { path: to });
          if (existing && !options.overwrite) throw new ToolError("exists", `"${to}" already exists`, { path: to });
          try {
            await rename(`${source.directory.anchor}/${source.name}`, `${destination.directory.anchor}/${destination.name}`);
          } catch (error) {
            if (errnoOf(error) === "EINVAL") throw new ToolError("invalid_path", `cannot move "${from}" into itself`, { path: to });
            throw error;
          }
          await destination.directory.handle.sync().catch(() => undefined);
          return { from: [...source.directory.segments, source.name].join("/"), to: [...destination.directory.segments, destination.name].join("/") };
        } finally {
          await destination.directory.close();
        }
      } finally {
        await source.directory.close();
      }
    }),
  ));
}

/**
 * Writes a file at an absolute path atomically (temp file, fsync, rename, fsync of the folder).
 * For troupe's own files outside any workspace; workspace files go through writeWorkspaceFile.
 */
export async function writeFileAtomic(target: string, content: string | Uint8Array): Promise<number> {
  const directory = path.dirname(target);
  const handle = await open(directory, O_RDONLY | O_DIRECTORY);
  const bytes = typeof content === "string" ? Buffer.from(content, "utf8") : content;
  try {
    await replaceInDirectory({ handle, anchor: directory, segments: [], close: () => handle.close() }, path.basename(target), bytes);
  } finally {
    await handle.close().catch(() => undefined);
  }
  return bytes.byteLength;
}

/**
 * A workspace file's size and SHA-256, read through the workspace's containment; undefined when it
 * is not there. With `keepUpTo`, a file no larger than that comes back with its bytes too (read
 * once, for the digest and for whoever keeps them).
 */
export async function fileDigest(root: string, requested: string, options: { keepUpTo?: number } = {}): Promise<{ bytes: number; sha256: string; content?: Buffer } | undefined> {
  let file;
  try {
    file = await openFileForRead(root, requested);
  } catch (error) {
    if (error instanceof ToolError && error.code === "not_found") return undefined;
    throw error;
  }
  try {
    const hash = createHash("sha256");
    const keepUpTo = options.keepUpTo ?? -1;
    let kept: Buffer[] | undefined = keepUpTo >= 0 ? [] : undefined;
    let reusable: Buffer | undefined;
    let position = 0;
    for (;;) {
      // A fresh buffer per read while the bytes are kept; otherwise one, reused.
      const buffer = kept ? Buffer.allocUnsafe(64 * 1024) : (reusable ??= Buffer.alloc(64 * 1024));
      const { bytesRead } = await file.handle.read(buffer, 0, buffer.length, position);
      if (bytesRead === 0) break;
      hash.update(buffer.subarray(0, bytesRead));
      position += bytesRead;
      if (kept && position > keepUpTo) kept = undefined;
      kept?.push(buffer.subarray(0, bytesRead));
    }
    const digest = { bytes: position, sha256: hash.digest("hex") };
    return kept ? { ...digest, content: Buffer.concat(kept, position) } : digest;
  } finally {
    await file.handle.close();
  }
}
