import { constants as fsConstants, existsSync, statSync } from "node:fs";
import { type FileHandle, lstat, mkdir, open, realpath } from "node:fs/promises";
import path from "node:path";
import { ensureDirectory } from "../core/user-files.js";
import { ConfigError, errorMessage, ToolError, type ToolErrorCode } from "../core/errors.js";

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
const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = fsConstants;

export function refuse(message: string, requested: string): never {
  throw new ToolError("path_outside_workspace", message, { path: requested });
}

export function errnoOf(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

/** File system errors as tool errors a caller can act on (a concurrent change shows up as one of these). */
const ERRNO_CODES: Record<string, [ToolErrorCode, string]> = {
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

/** Runs `work`, turning file system errors into ToolErrors that name `requested`. */
export async function translated<T>(requested: string, work: () => Promise<T>): Promise<T> {
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

/** Refuses a workspace path that exists and is not a folder (or runs through a file), without creating anything. */
export function checkWorkspacePath(directory: string): void {
  const resolved = path.resolve(directory);
  let current = resolved;
  for (;;) {
    let info;
    try {
      info = statSync(current);
    } catch (error) {
      const parent = path.dirname(current);
      if (errnoOf(error) === "ENOENT" && parent !== current) {
        current = parent;
        continue;
      }
      if (errnoOf(error) === "ENOTDIR") throw new ConfigError("workspace_invalid", `the workspace ${resolved} is not a folder (a file is in the way)`, { path: resolved });
      return; // anything else is reported when the workspace is created
    }
    if (!info.isDirectory()) throw new ConfigError("workspace_invalid", `the workspace ${resolved} is not a folder (a file is in the way${current === resolved ? "" : `: ${current}`})`, { path: resolved });
    return;
  }
}

/** The real path of the workspace root, created if missing; a path that is not a folder is a ConfigError. */
export async function workspaceRoot(directory: string): Promise<string> {
  try {
    await ensureDirectory(directory);
    return await realpath(directory);
  } catch (error) {
    const code = errnoOf(error);
    const why = code === "EEXIST" || code === "ENOTDIR" ? "is not a folder (a file is in the way)" : code === "EACCES" || code === "EPERM" ? "cannot be created or entered (permission denied)" : `cannot be used (${code ?? errorMessage(error)})`;
    throw new ConfigError("workspace_invalid", `the workspace ${path.resolve(directory)} ${why}`, { path: path.resolve(directory) });
  }
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
export function directoryAt(handle: FileHandle, segments: string[], plainPath: string): OpenDirectory {
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
