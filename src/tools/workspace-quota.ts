import { constants as fsConstants } from "node:fs";
import { type FileHandle, lstat, open, readdir } from "node:fs/promises";
import { ToolError } from "../core/errors.js";
import { directoryAt, type OpenDirectory, openDirectory } from "./workspace.js";

/**
 * The workspace's quota: bytes of regular files and entries (files, folders, links) under it.
 * The file tools check it before they write (workspace-files.ts); a sandboxed script that may
 * write runs on a staged copy (sandbox/staged-run.ts), which is measured against it before any
 * of its changes is applied.
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

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW } = fsConstants;

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
