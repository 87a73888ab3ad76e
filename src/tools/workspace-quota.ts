import { constants as fsConstants } from "node:fs";
import { type FileHandle, lstat, open, readdir, rmdir, unlink } from "node:fs/promises";
import { ToolError } from "../core/errors.js";
import { directoryAt, type OpenDirectory, openDirectory } from "./workspace.js";

/**
 * The workspace's quota: bytes of regular files and entries (files, folders, links) under it.
 * The file tools check it before they write (workspace-files.ts); sandboxed scripts are checked
 * after each run, and a run that left the workspace over it has its writes rolled back
 * (`rollBack`): the entries it created are removed and the files it grew are cut back to their
 * old size. A file a script rewrote in place cannot be restored that way; it is named in the
 * error. (A size-limited tmpfs would stop the writes as they happen, but the workspace is the
 * user's own folder, bound into the sandbox; copying it into a tmpfs and back for every run
 * would cost more than the run.)
 */

export interface WorkspaceQuota {
  maxBytes: number;
  maxFiles: number;
}

export const DEFAULT_WORKSPACE_QUOTA: WorkspaceQuota = { maxBytes: 1024 * 1024 * 1024, maxFiles: 100_000 };

const quotas = new Map<string, WorkspaceQuota>();

/** Sets the quota of a workspace (its real path); the engine does, from the config file's `tools.quota`. */
export function setWorkspaceQuota(root: string, quota: Partial<WorkspaceQuota>): void {
  quotas.set(root, { ...DEFAULT_WORKSPACE_QUOTA, ...quota });
  usages.delete(root);
}

export function workspaceQuota(root: string): WorkspaceQuota {
  return quotas.get(root) ?? DEFAULT_WORKSPACE_QUOTA;
}

const { O_RDONLY, O_WRONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = fsConstants;

/** Cuts a file back through a descriptor opened without following a link. */
async function truncateEntry(path: string, size: number): Promise<void> {
  const handle = await open(path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK);
  try {
    if (!(await handle.stat()).isFile()) throw new Error("not a regular file");
    await handle.truncate(size);
  } finally {
    await handle.close();
  }
}

export interface EntryInfo {
  ino: number;
  size: number;
  mtimeMs: number;
  directory: boolean;
}

/**
 * Every entry under the root, walked through descriptors without following links, with its
 * inode, size and modification time; stops after `maxEntries` (then `complete` is false).
 */
export async function scanWorkspace(root: string, maxEntries: number): Promise<{ entries: Map<string, EntryInfo>; bytes: number; complete: boolean }> {
  const entries = new Map<string, EntryInfo>();
  let bytes = 0;
  let complete = true;
  const start = await openDirectory(root, []);
  const walk = async (directory: OpenDirectory, prefix: string): Promise<void> => {
    let names;
    try {
      names = await readdir(directory.anchor);
    } catch {
      return;
    }
    for (const name of names) {
      if (entries.size >= maxEntries) {
        complete = false;
        return;
      }
      const relative = prefix ? `${prefix}/${name}` : name;
      const info = await lstat(`${directory.anchor}/${name}`).catch(() => undefined);
      if (!info) continue;
      entries.set(relative, { ino: info.ino, size: info.isFile() ? info.size : 0, mtimeMs: info.mtimeMs, directory: info.isDirectory() });
      if (info.isFile()) bytes += info.size;
      if (!info.isDirectory()) continue;
      let child: FileHandle;
      try {
        child = await open(`${directory.anchor}/${name}`, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
      } catch {
        continue;
      }
      const opened = directoryAt(child, [...directory.segments, name], `${directory.anchor}/${name}`);
      try {
        await walk(opened, relative);
      } finally {
        await opened.close();
      }
    }
  };
  try {
    await walk(start, "");
  } finally {
    await start.close();
  }
  return { entries, bytes, complete };
}

export interface Usage {
  bytes: number;
  files: number;
}

/** Usage measured recently, adjusted by the file tools' own writes since; measured again after `USAGE_TTL_MS` or a script run. */
const usages = new Map<string, { usage: Usage; at: number }>();
const USAGE_TTL_MS = 2_000;

/** What the workspace holds now (entries counted up to one past the quota). */
export async function workspaceUsage(root: string): Promise<Usage> {
  const cached = usages.get(root);
  if (cached && Date.now() - cached.at < USAGE_TTL_MS) return cached.usage;
  const quota = workspaceQuota(root);
  const scan = await scanWorkspace(root, quota.maxFiles + 1);
  const usage = { bytes: scan.bytes, files: scan.entries.size };
  usages.set(root, { usage, at: Date.now() });
  return usage;
}

/** Forgets the measured usage (after a script ran: it may have written anything). */
export function forgetUsage(root: string): void {
  usages.delete(root);
}

function quotaError(root: string, usage: Usage, added: Usage): ToolError {
  const quota = workspaceQuota(root);
  const bytes = usage.bytes + added.bytes;
  const files = usage.files + added.files;
  const what =
    bytes > quota.maxBytes
      ? `${bytes} bytes, over the workspace quota of ${quota.maxBytes} bytes`
      : `${files} files and folders, over the workspace quota of ${quota.maxFiles}`;
  return new ToolError("quota_exceeded", `the workspace would hold ${what} (tools.quota in the config file)`, { ...quota, bytes, files });
}

/**
 * Throws `quota_exceeded` when adding `added` (bytes may be negative) would put the workspace
 * over its quota; otherwise counts it in the measured usage. For every tool that writes files
 * (file_write and file_append through writeWorkspaceFile; a file_copy should call it too).
 */
export async function reserveQuota(root: string, added: Usage): Promise<void> {
  const usage = await workspaceUsage(root);
  const quota = workspaceQuota(root);
  const growing = added.bytes > 0 || added.files > 0;
  if (growing && (usage.bytes + added.bytes > quota.maxBytes || usage.files + added.files > quota.maxFiles)) throw quotaError(root, usage, added);
  const cached = usages.get(root);
  if (cached) cached.usage = { bytes: Math.max(0, usage.bytes + added.bytes), files: Math.max(0, usage.files + added.files) };
}

/**
 * After a script ran: when the workspace is over its quota, rolls back what the run changed
 * against the manifest taken before it, and throws `quota_exceeded` saying what was undone.
 */
export async function enforceAfterRun(root: string, before: Map<string, EntryInfo>): Promise<void> {
  forgetUsage(root);
  const quota = workspaceQuota(root);
  const after = await scanWorkspace(root, quota.maxFiles * 2 + 1);
  if (after.bytes <= quota.maxBytes && after.entries.size <= quota.maxFiles && after.complete) return;
  const undone = await rollBack(root, before, after.entries);
  forgetUsage(root);
  const over = after.bytes > quota.maxBytes ? `${after.bytes} bytes (quota ${quota.maxBytes})` : `more than ${quota.maxFiles} files and folders (quota ${quota.maxFiles})`;
  const kept = undone.unrestored.length > 0 ? `; rewritten in place, not restored: ${undone.unrestored.slice(0, 10).join(", ")}${undone.unrestored.length > 10 ? ", …" : ""}` : "";
  throw new ToolError(
    "quota_exceeded",
    `the script left the workspace holding ${over}, over its quota (tools.quota in the config file); its writes were rolled back: ${undone.removed} new entries removed, ${undone.truncated} grown files cut back${kept}`,
    { ...quota, bytes: after.bytes, files: after.entries.size, ...undone },
  );
}

/** Undoes a run's changes: entries not in `before` (or replaced: another inode) are removed, deepest first; grown files are cut back. */
async function rollBack(root: string, before: Map<string, EntryInfo>, after: Map<string, EntryInfo>): Promise<{ removed: number; truncated: number; unrestored: string[] }> {
  let removed = 0;
  let truncated = 0;
  const unrestored: string[] = [];
  const paths = [...after.keys()].sort((a, b) => b.split("/").length - a.split("/").length || b.localeCompare(a));
  for (const relative of paths) {
    const now = after.get(relative) as EntryInfo;
    const then = before.get(relative);
    const segments = relative.split("/");
    const name = segments.pop() as string;
    if (then && then.ino === now.ino) {
      if (now.directory || now.mtimeMs === then.mtimeMs) continue;
      if (now.size > then.size) {
        await inDirectory(root, segments, (anchor) => truncateEntry(`${anchor}/${name}`, then.size)).then(() => (truncated += 1), () => unrestored.push(relative));
      } else if (now.size !== then.size || now.mtimeMs !== then.mtimeMs) unrestored.push(relative);
      continue;
    }
    const done = await inDirectory(root, segments, (anchor) => (now.directory ? rmdir(`${anchor}/${name}`) : unlink(`${anchor}/${name}`))).then(
      () => true,
      () => false,
    );
    if (done) removed += 1;
  }
  return { removed, truncated, unrestored };
}

async function inDirectory<T>(root: string, segments: string[], work: (anchor: string) => Promise<T>): Promise<T> {
  const directory = await openDirectory(root, segments);
  try {
    return await work(directory.anchor);
  } finally {
    await directory.close();
  }
}
