import { randomBytes } from "node:crypto";
import { constants as fsConstants, existsSync } from "node:fs";
import { type FileHandle, lstat, mkdir, open, readdir, realpath, rename, rmdir, unlink } from "node:fs/promises";
import path from "node:path";
import { ToolError } from "../core/errors.js";

/**
 * Containment of file tools in the workspace.
 *
 * A path is accepted only when it is relative and has no `..` segment; it is then walked from
 * the workspace root one directory at a time, each opened with O_NOFOLLOW through the file
 * descriptor of its parent (`/proc/self/fd/N/<name>`, Linux's way to do `openat` from Node).
 * Every access happens inside a directory troupe holds open, so swapping a directory for a
 * symlink in the middle of an operation cannot lead it outside. A symlink met on the way is
 * followed only when its real path (realpath, then a path.relative check — never a string
 * prefix) stays inside the workspace, and then by walking its real path again the same way.
 * Writes never go through a symlink. Without /proc, the same walk uses real path strings.
 */

const USE_DESCRIPTORS = process.platform === "linux" && existsSync("/proc/self/fd");
const MAX_LINK_HOPS = 16;
const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK, O_WRONLY, O_CREAT, O_EXCL } = fsConstants;

function refuse(message: string, requested: string): never {
  throw new ToolError("path_outside_workspace", message, { path: requested });
}

function errnoOf(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

/** File system errors as tool errors a caller can act on (a concurrent change shows up as one of these). */
const ERRNO_CODES: Record<string, [string, string]> = {
  ENOENT: ["not_found", "does not exist (it may have changed while it was being used)"],
  ENOTDIR: ["invalid_path", "goes through something that is not a folder"],
  ELOOP: ["invalid_path", "goes through a symlink"],
  EISDIR: ["invalid_path", "is a folder"],
  EEXIST: ["exists", "already exists"],
  ENOTEMPTY: ["not_empty", "is a folder that is not empty"],
  EACCES: ["access_denied", "is not accessible to troupe"],
  EPERM: ["access_denied", "is not accessible to troupe"],
  ENOSPC: ["disk_full", "cannot be written: the disk is full"],
  EROFS: ["read_only", "is on a read-only file system"],
  ENAMETOOLONG: ["invalid_path", "has a name that is too long"],
};

async function translated<T>(requested: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof ToolError) throw error;
    const known = ERRNO_CODES[errnoOf(error) ?? ""];
    if (!known) throw error;
    throw new ToolError(known[0], `"${requested}" ${known[1]}`, { path: requested, errno: errnoOf(error) });
  }
}

/** Whether `candidate` (a real path) is `root` or inside it. */
export function isInside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  return relative === "" || (!relative.startsWith("..") && !path.isAbsolute(relative));
}

/** Rejects paths that are not plain relative paths before touching the filesystem; returns the segments. */
export function checkRelativePath(requested: string): string[] {
  if (requested.includes("\0")) refuse("the path contains a NUL byte", requested);
  const trimmed = requested.trim();
  if (trimmed === "") throw new ToolError("invalid_path", "the path is empty", { path: requested });
  if (path.isAbsolute(trimmed) || /^[A-Za-z]:[\\/]/.test(trimmed) || trimmed.startsWith("~") || trimmed.startsWith("\\\\")) {
    refuse(`"${requested}" is an absolute path; give a path relative to the workspace`, requested);
  }
  const segments = trimmed.split(/[\\/]+/).filter((segment) => segment !== "" && segment !== ".");
  if (segments.includes("..")) refuse(`"${requested}" leaves the workspace ("..")`, requested);
  return segments;
}

/** The real path of the workspace root, created if missing. */
export async function workspaceRoot(directory: string): Promise<string> {
  await mkdir(directory, { recursive: true });
  return realpath(directory);
}

/** The workspace-relative form of a real path inside it, with forward slashes. */
export function relativeToRoot(root: string, real: string): string {
  return path.relative(root, real).split(path.sep).join("/") || ".";
}

/** A directory inside the workspace, held open; `anchor` prefixes names to address entries in it. */
export interface OpenDirectory {
  handle: FileHandle;
  anchor: string;
  /** Its real path from the workspace root, as segments. */
  segments: string[];
  close(): Promise<void>;
}

/** `plainPath` is where the directory is by name, used only where /proc/self/fd is missing. */
function directoryAt(handle: FileHandle, segments: string[], plainPath: string): OpenDirectory {
  return {
    handle,
    anchor: USE_DESCRIPTORS ? `/proc/self/fd/${handle.fd}` : plainPath,
    segments,
    close: () => handle.close().catch(() => undefined),
  };
}

/** Where a symlink found at `segments` really leads, as segments from the root; refused when outside. */
async function followLink(root: string, segments: string[], requested: string, hops: number): Promise<string[]> {
  if (hops >= MAX_LINK_HOPS) throw new ToolError("invalid_path", `"${requested}" has too many symlinks`, { path: requested });
  let target: string;
  try {
    target = await realpath(path.join(root, ...segments));
  } catch (error) {
    if (errnoOf(error) === "ENOENT") throw new ToolError("not_found", `"${requested}" is a broken symlink`, { path: requested });
    throw error;
  }
  if (!isInside(root, target)) refuse(`"${requested}" resolves outside the workspace`, requested);
  return path.relative(root, target).split(path.sep).filter(Boolean);
}

/**
 * Opens a directory of the workspace by walking its segments with O_NOFOLLOW. Missing
 * directories are created when `create` is set; symlinks that stay inside are followed.
 */
export async function openDirectory(root: string, segments: readonly string[], options: { create?: boolean; requested?: string } = {}, hops = 0): Promise<OpenDirectory> {
  const requested = options.requested ?? segments.join("/");
  let current = await open(root, O_RDONLY | O_DIRECTORY);
  const walked: string[] = [];
  try {
    for (let index = 0; index < segments.length; index += 1) {
      const segment = segments[index] as string;
      const anchor = directoryAt(current, walked, path.join(root, ...walked)).anchor;
      let next: FileHandle;
      try {
        next = await open(`${anchor}/${segment}`, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
      } catch (error) {
        const code = errnoOf(error);
        if (code === "ENOENT" && options.create) {
          await mkdir(`${anchor}/${segment}`).catch((mkdirError: unknown) => {
            if (errnoOf(mkdirError) !== "EEXIST") throw mkdirError;
          });
          index -= 1;
          continue;
        }
        if (code === "ENOENT") throw new ToolError("not_found", `"${requested}" does not exist in the workspace`, { path: requested });
        if (code === "ELOOP" || code === "ENOTDIR") {
          const info = await lstat(`${anchor}/${segment}`);
          if (info.isSymbolicLink()) {
            const real = await followLink(root, [...walked, segment], requested, hops);
            await current.close();
            return openDirectory(root, [...real, ...segments.slice(index + 1)], { ...options, requested }, hops + 1);
          }
          throw new ToolError("invalid_path", `"${segment}" in "${requested}" is not a directory`, { path: requested });
        }
        throw error;
      }
      await current.close();
      current = next;
      walked.push(segment);
    }
    return directoryAt(current, walked, path.join(root, ...walked));
  } catch (error) {
    await current.close().catch(() => undefined);
    throw error;
  }
}

/** A path split into its parent directory (opened) and the entry's name. */
export async function openParent(root: string, requested: string, create: boolean): Promise<{ directory: OpenDirectory; name: string }> {
  const segments = checkRelativePath(requested);
  if (segments.length === 0) throw new ToolError("invalid_path", "the path names the workspace itself", { path: requested });
  const directory = await openDirectory(root, segments.slice(0, -1), { create, requested });
  return { directory, name: segments[segments.length - 1] as string };
}

export interface OpenFile {
  handle: FileHandle;
  /** Its real path relative to the workspace, with forward slashes. */
  relative: string;
  size: number;
}

/** Opens an existing regular file for reading; symlinks are followed only while they stay inside. */
export async function openFileForRead(root: string, requested: string, hops = 0): Promise<OpenFile> {
  return translated(requested, () => openFileInside(root, requested, hops));
}

async function openFileInside(root: string, requested: string, hops: number): Promise<OpenFile> {
  const { directory, name } = await openParent(root, requested, false);
  try {
    let handle: FileHandle;
    try {
      // O_NONBLOCK: a FIFO must not hang the call; it is refused below as not a regular file.
      handle = await open(`${directory.anchor}/${name}`, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    } catch (error) {
      const code = errnoOf(error);
      if (code === "ENOENT") throw new ToolError("not_found", `"${requested}" does not exist in the workspace`, { path: requested });
      if (code === "ELOOP") {
        const real = await followLink(root, [...directory.segments, name], requested, hops);
        return openFileInside(root, real.join("/"), hops + 1);
      }
      throw error;
    }
    const info = await handle.stat();
    if (!info.isFile()) {
      await handle.close();
      throw new ToolError("invalid_path", `"${requested}" is not a file`, { path: requested });
    }
    return { handle, relative: [...directory.segments, name].join("/"), size: info.size };
  } finally {
    await directory.close();
  }
}

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
async function replaceInDirectory(directory: OpenDirectory, name: string, bytes: Uint8Array): Promise<void> {
  const temporary = `.${name}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
  const temporaryPath = `${directory.anchor}/${temporary}`;
  const handle = await open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o644);
  try {
    await handle.writeFile(bytes);
    await handle.sync();
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
}

/** Writes a workspace file atomically (parents created); `append` adds to what is there. */
export async function writeWorkspaceFile(
  root: string,
  requested: string,
  content: string,
  options: { overwrite?: boolean; append?: boolean; maxBytes: number },
): Promise<WriteResult> {
  checkRelativePath(requested);
  return translated(requested, () => withPathLock(`${root}\u0000${requested}`, async () => {
    const { directory, name } = await openParent(root, requested, true);
    try {
      const existed = await checkWriteTarget(directory, name, requested, root);
      if (existed && options.overwrite === false && !options.append) throw new ToolError("exists", `"${requested}" already exists`, { path: requested });
      let bytes = Buffer.from(content, "utf8");
      if (options.append && existed) {
        const handle = await open(`${directory.anchor}/${name}`, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
        try {
          const size = (await handle.stat()).size;
          if (size + bytes.byteLength > options.maxBytes) {
            throw new ToolError("too_large", `"${requested}" would grow past ${options.maxBytes} bytes`, { path: requested });
          }
          bytes = Buffer.concat([await handle.readFile(), bytes]);
        } finally {
          await handle.close();
        }
      }
      if (bytes.byteLength > options.maxBytes) throw new ToolError("too_large", `the content is larger than ${options.maxBytes} bytes`, { path: requested });
      await replaceInDirectory(directory, name, bytes);
      return { relative: [...directory.segments, name].join("/"), bytes: bytes.byteLength, created: !existed };
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

/** Lists a workspace folder (optionally recursively) without following symlinks. */
export async function listWorkspace(root: string, requested: string, options: { recursive: boolean; maxEntries: number }): Promise<{ relative: string; entries: ListedEntry[]; truncated: boolean }> {
  const segments = checkRelativePath(requested.trim() === "" ? "." : requested);
  const start = await translated(requested, () => openDirectory(root, segments, { requested }));
  const entries: ListedEntry[] = [];
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
  return { relative: start.segments.join("/") || ".", entries, truncated };
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
