import { constants as fsConstants } from "node:fs";
import { type FileHandle, lstat, open, readdir } from "node:fs/promises";
import type { FileIdentity } from "../core/file-labels.js";
import { directoryAt, type OpenDirectory, openDirectory } from "./workspace.js";

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW } = fsConstants;

/** The most entries looked at to find a file's other names: past it, the names not found count as unknown. */
export const HARD_LINK_SEARCH_ENTRIES = 20_000;

/** Walks into a subdirectory by its entry, never through a link: one that cannot be opened so (gone, a link, no access) is passed over. */
async function intoChild(directory: OpenDirectory, name: string, walk: (opened: OpenDirectory) => Promise<void>): Promise<void> {
  let child: FileHandle;
  try {
    child = await open(`${directory.anchor}/${name}`, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  } catch {
    return;
  }
  const opened = directoryAt(child, [...directory.segments, name], `${directory.anchor}/${name}`);
  try {
    await walk(opened);
  } finally {
    await opened.close();
  }
}

/**
 * The workspace paths of a file with more than one name (a hard link): a walk of the workspace
 * through descriptors (no symlink followed), bounded, comparing each regular file's device and
 * inode. `missing` counts the names not found — outside the workspace, or past the bound — which
 * nobody can vouch for.
 */
export async function findOtherNames(root: string, identity: FileIdentity, links: number, limit = HARD_LINK_SEARCH_ENTRIES): Promise<{ found: string[]; missing: number; truncated: boolean }> {
  const found: string[] = [];
  let seen = 0;
  let truncated = false;
  const walk = async (directory: OpenDirectory, prefix: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(directory.anchor, { withFileTypes: true });
    } catch {
      truncated = true;
      return;
    }
    for (const entry of entries) {
      if (found.length >= links) return;
      seen += 1;
      if (seen > limit) {
        truncated = true;
        return;
      }
      const relative = prefix ? `${prefix}/${entry.name}` : entry.name;
      if (entry.isFile()) {
        const info = await lstat(`${directory.anchor}/${entry.name}`, { bigint: true }).catch(() => undefined);
        if (info && info.nlink > 1n && info.dev.toString() === identity.device && info.ino.toString() === identity.inode) found.push(relative);
      } else if (entry.isDirectory()) {
        await intoChild(directory, entry.name, (opened) => walk(opened, relative));
      }
    }
  };
  const start = await openDirectory(root, []);
  try {
    await walk(start, "");
  } finally {
    await start.close();
  }
  return { found, missing: Math.max(0, links - found.length), truncated };
}

/** An entry of a tree, with its identity as the file system has it. */
export interface IdentifiedEntry {
  relative: string;
  directory: boolean;
  identity: FileIdentity;
  size: number;
  mtimeMs: number;
}

/**
 * The entry at a workspace path and, for a folder, everything under it (through descriptors, no
 * symlink followed; a symlink is not an entry here, it moves as a link), at most `limit`:
 * undefined past it.
 */
export async function identitiesUnder(root: string, relative: string, limit: number): Promise<IdentifiedEntry[] | undefined> {
  const segments = relative.split("/").filter(Boolean);
  const parent = await openDirectory(root, segments.slice(0, -1));
  const entries: IdentifiedEntry[] = [];
  let over = false;
  const note = async (directory: OpenDirectory, name: string, at: string): Promise<boolean> => {
    const info = await lstat(`${directory.anchor}/${name}`, { bigint: true }).catch(() => undefined);
    if (!info || info.isSymbolicLink() || !(info.isFile() || info.isDirectory())) return false;
    if (entries.length >= limit) {
      over = true;
      return false;
    }
    entries.push({ relative: at, directory: info.isDirectory(), identity: { device: info.dev.toString(), inode: info.ino.toString() }, size: Number(info.size), mtimeMs: Number(info.mtimeMs) });
    return info.isDirectory();
  };
  const walk = async (directory: OpenDirectory, prefix: string): Promise<void> => {
    for (const entry of await readdir(directory.anchor, { withFileTypes: true }).catch(() => [])) {
      if (over) return;
      const at = `${prefix}/${entry.name}`;
      if (!(await note(directory, entry.name, at))) continue;
      await intoChild(directory, entry.name, (opened) => walk(opened, at));
    }
  };
  try {
    const name = segments[segments.length - 1];
    if (name !== undefined && (await note(parent, name, [...parent.segments, name].join("/")))) {
      const top = await openDirectory(root, [...parent.segments, name]);
      try {
        await walk(top, [...parent.segments, name].join("/"));
      } finally {
        await top.close();
      }
    }
  } finally {
    await parent.close();
  }
  return over ? undefined : entries;
}
