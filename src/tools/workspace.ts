import { randomBytes } from "node:crypto";
import { constants as fsConstants } from "node:fs";
import { lstat, mkdir, open, realpath, rename, stat, unlink } from "node:fs/promises";
import path from "node:path";
import { ToolError } from "../core/errors.js";

/**
 * Containment of file tools in the workspace. A path is accepted only when it is relative,
 * has no `..` segment, and its real path (symlinks resolved) stays inside the real workspace.
 * The check is on real paths with `path.relative`, never on string prefixes, so a sibling
 * directory such as `ws-evil` beside `ws` is outside.
 */

function refuse(message: string, requested: string): never {
  throw new ToolError("path_outside_workspace", message, { path: requested });
}

/** Whether `candidate` (a real path) is `root` or inside it. */
export function isInside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  return relative === "" || (!relative.startsWith("..") && !path.isAbsolute(relative));
}

/** Rejects paths that are not plain relative paths before touching the filesystem. */
export function checkRelativePath(requested: string): string[] {
  if (requested.includes("\0")) refuse("the path contains a NUL byte", requested);
  const trimmed = requested.trim();
  if (trimmed === "") throw new ToolError("invalid_path", "the path is empty", { path: requested });
  if (path.isAbsolute(trimmed) || /^[A-Za-z]:[\\/]/.test(trimmed) || trimmed.startsWith("~")) {
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

/** Resolves an existing file or directory inside the workspace, following symlinks only while they stay inside. */
export async function resolveExisting(root: string, requested: string): Promise<string> {
  const segments = checkRelativePath(requested);
  const joined = path.join(root, ...segments);
  let real: string;
  try {
    real = await realpath(joined);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") {
      throw new ToolError("not_found", `"${requested}" does not exist in the workspace`, { path: requested });
    }
    throw error;
  }
  if (!isInside(root, real)) refuse(`"${requested}" resolves outside the workspace`, requested);
  return real;
}

/**
 * Resolves a path to write: the parent directory is created inside the workspace, and the
 * target, when it exists, must not be a symlink or a directory.
 */
export async function resolveForWrite(root: string, requested: string): Promise<string> {
  const segments = checkRelativePath(requested);
  if (segments.length === 0) throw new ToolError("invalid_path", "the path names the workspace itself", { path: requested });
  const name = segments[segments.length - 1] as string;
  let parent = root;
  for (const segment of segments.slice(0, -1)) {
    const next = path.join(parent, segment);
    const info = await lstat(next).catch((error: NodeJS.ErrnoException) => {
      if (error.code === "ENOENT") return undefined;
      throw error;
    });
    if (info === undefined) {
      await mkdir(next);
      parent = next;
      continue;
    }
    const real = await realpath(next);
    if (!isInside(root, real)) refuse(`"${requested}" resolves outside the workspace`, requested);
    if (!(await stat(real)).isDirectory()) {
      throw new ToolError("invalid_path", `"${segment}" in "${requested}" is not a directory`, { path: requested });
    }
    parent = real;
  }
  const target = path.join(parent, name);
  const existing = await lstat(target).catch(() => undefined);
  if (existing?.isSymbolicLink()) refuse(`"${requested}" is a symlink; troupe does not write through symlinks`, requested);
  if (existing?.isDirectory()) throw new ToolError("invalid_path", `"${requested}" is a directory`, { path: requested });
  return target;
}

/**
 * Writes a file atomically: a temporary file in the same directory, fsync, then rename, so a
 * crash leaves the old content or the new content, never a torn file.
 */
export async function writeFileAtomic(target: string, content: string | Uint8Array): Promise<number> {
  const directory = path.dirname(target);
  const temporary = path.join(directory, `.${path.basename(target)}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`);
  const bytes = typeof content === "string" ? Buffer.from(content, "utf8") : content;
  const handle = await open(temporary, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW, 0o644);
  try {
    await handle.writeFile(bytes);
    await handle.sync();
  } catch (error) {
    await handle.close().catch(() => undefined);
    await unlink(temporary).catch(() => undefined);
    throw error;
  }
  await handle.close();
  try {
    await rename(temporary, target);
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    throw error;
  }
  const directoryHandle = await open(directory, fsConstants.O_RDONLY).catch(() => undefined);
  if (directoryHandle) {
    await directoryHandle.sync().catch(() => undefined);
    await directoryHandle.close();
  }
  return bytes.byteLength;
}

/** The workspace-relative form of a real path inside it, with forward slashes. */
export function relativeToRoot(root: string, real: string): string {
  return path.relative(root, real).split(path.sep).join("/") || ".";
}
