import { constants as fsConstants } from "node:fs";
import { type FileHandle, lstat, open, readdir } from "node:fs/promises";
import { ToolError } from "../core/errors.js";
import { checkRelativePath, directoryAt, errnoOf, type OpenDirectory, openDirectory, translated } from "./workspace.js";

/**
 * Reading files by path, for every reader that is not a file tool (the search index, code_run's
 * `path`, file_append's old content): the same descriptor-anchored walk as the file tools, then
 * the entry opened with O_NOFOLLOW | O_NONBLOCK, checked with fstat to be a regular file, and read
 * from that descriptor up to a byte cap. A symlink, FIFO, socket or device is refused (a FIFO
 * read by path would block a libuv thread for good; a symlink swapped in would lead out).
 */

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = fsConstants;
const CHUNK_BYTES = 64 * 1024;

/** Reads from an open descriptor, at most `maxBytes`; `larger` when there was more. */
export async function readBounded(handle: FileHandle, maxBytes: number): Promise<{ bytes: Buffer; larger: boolean }> {
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    // One byte past the cap tells a file that grew since it was measured.
    const room = maxBytes + 1 - total;
    if (room <= 0) break;
    const buffer = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, room));
    const { bytesRead } = await handle.read(buffer, 0, buffer.byteLength, total);
    if (bytesRead === 0) break;
    chunks.push(buffer.subarray(0, bytesRead));
    total += bytesRead;
  }
  const bytes = Buffer.concat(chunks, total);
  return total > maxBytes ? { bytes: bytes.subarray(0, maxBytes), larger: true } : { bytes, larger: false };
}

/** Opens `name` in a directory held open, only when it is a regular file; throws a ToolError otherwise. */
export async function openRegularFile(directory: OpenDirectory, name: string, requested: string): Promise<{ handle: FileHandle; size: number; mtimeMs: number }> {
  // lstat first, so a device is never opened (opening one can act on it); fstat after, for a swap in between.
  const before = await lstat(`${directory.anchor}/${name}`).catch((error: unknown) => {
    if (errnoOf(error) === "ENOENT") throw new ToolError("not_found", `"${requested}" does not exist`, { path: requested });
    throw error;
  });
  if (!before.isFile()) throw notRegular(requested, before.isSymbolicLink() ? "a symlink" : "not a regular file");
  let handle: FileHandle;
  try {
    handle = await open(`${directory.anchor}/${name}`, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch (error) {
    const code = errnoOf(error);
    if (code === "ELOOP") throw notRegular(requested, "a symlink");
    if (code === "ENXIO") throw notRegular(requested, "not a regular file"); // a socket
    if (code === "ENOENT") throw new ToolError("not_found", `"${requested}" does not exist`, { path: requested });
    throw error;
  }
  const info = await handle.stat();
  if (!info.isFile()) {
    await handle.close();
    throw notRegular(requested, "not a regular file");
  }
  return { handle, size: info.size, mtimeMs: info.mtimeMs };
}

function notRegular(requested: string, what: string): ToolError {
  return new ToolError("not_a_regular_file", `"${requested}" is ${what}; only regular files are read`, { path: requested });
}

export interface ContainedFile {
  /** Its path relative to the root, with forward slashes (the real one, after symlinked folders inside). */
  relative: string;
  bytes: Buffer;
  size: number;
}

/**
 * Reads a regular file under `root` by relative path, at most `maxBytes` (more is `too_large`).
 * Folders on the way may be symlinks that stay inside (as for the file tools); the file itself may not.
 */
export async function readContainedFile(root: string, requested: string, maxBytes: number): Promise<ContainedFile> {
  const segments = checkRelativePath(requested);
  if (segments.length === 0) throw new ToolError("invalid_path", "the path names the folder itself", { path: requested });
  return translated(requested, async () => {
    const directory = await openDirectory(root, segments.slice(0, -1), { requested });
    const name = segments[segments.length - 1] as string;
    try {
      const file = await openRegularFile(directory, name, requested);
      try {
        if (file.size > maxBytes) throw tooLarge(requested, maxBytes);
        const { bytes, larger } = await readBounded(file.handle, maxBytes);
        if (larger) throw tooLarge(requested, maxBytes);
        return { relative: [...directory.segments, name].join("/"), bytes, size: bytes.byteLength };
      } finally {
        await file.handle.close();
      }
    } finally {
      await directory.close();
    }
  });
}

function tooLarge(requested: string, maxBytes: number): ToolError {
  return new ToolError("too_large", `"${requested}" is larger than ${maxBytes} bytes`, { path: requested, maxBytes });
}

export interface WalkedFile {
  relative: string;
  size: number;
  mtimeMs: number;
}

/**
 * The regular files under `root`, walked through descriptors (O_NOFOLLOW at every folder, so a
 * folder swapped for a symlink is not entered), with their sizes and modification times.
 * `include` picks entries by name; `skipFolder` prunes folders. At most `maxFiles`.
 */
export async function walkRegularFiles(
  root: string,
  options: { maxFiles: number; include: (name: string) => boolean; skipFolder: (name: string) => boolean },
): Promise<WalkedFile[]> {
  const found: WalkedFile[] = [];
  let start: OpenDirectory;
  try {
    start = await openDirectory(root, []);
  } catch {
    return found; // a folder that is missing or unreadable has nothing to search
  }
  const walk = async (directory: OpenDirectory, prefix: string): Promise<void> => {
    let entries;
    try {
      entries = (await readdir(directory.anchor, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name));
    } catch {
      return;
    }
    for (const entry of entries) {
      if (found.length >= options.maxFiles) return;
      const relative = prefix ? `${prefix}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        if (options.skipFolder(entry.name)) continue;
        let child: FileHandle;
        try {
          child = await open(`${directory.anchor}/${entry.name}`, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
        } catch {
          continue; // replaced by something else while listing: not followed
        }
        const opened = directoryAt(child, [...directory.segments, entry.name], `${directory.anchor}/${entry.name}`);
        try {
          await walk(opened, relative);
        } finally {
          await opened.close();
        }
      } else if (entry.isFile() && options.include(entry.name)) {
        const info = await lstat(`${directory.anchor}/${entry.name}`).catch(() => undefined);
        if (info?.isFile()) found.push({ relative, size: info.size, mtimeMs: info.mtimeMs });
      }
    }
  };
  try {
    await walk(start, "");
  } finally {
    await start.close();
  }
  return found;
}
