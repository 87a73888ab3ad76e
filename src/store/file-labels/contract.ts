import type { FileLabelRecord, NewFileLabel } from "../../core/file-labels.js";
import { readLabel, writeLabel } from "../../core/provenance.js";

/** A stored file label row (either database). */
export interface FileLabelRow {
  workspace: string;
  path: string;
  sha256: string | null;
  device: string | null;
  inode: string | null;
  size: number | string | null;
  mtime_ms: number | null;
  trust: string;
  label: string;
  tool: string;
  run_id: string | null;
  owner: string | null;
  reason: string;
  created_at: number | string;
}

export const FILE_LABEL_COLUMNS = "workspace, path, sha256, device, inode, size, mtime_ms, trust, label, tool, run_id, owner, reason, created_at";

/** A row's values in column order. */
export function fileLabelValues(record: NewFileLabel, now: number): unknown[] {
  return [
    record.workspace,
    record.path,
    record.sha256,
    record.identity?.device ?? null,
    record.identity?.inode ?? null,
    record.size,
    record.mtimeMs,
    record.label.trust,
    writeLabel(record.label),
    record.tool,
    record.runId,
    record.owner,
    record.reason,
    now,
  ];
}

/** A row as a record; a label that cannot be read is untrusted (readLabel), never trusted. */
export function fileLabelOf(row: FileLabelRow): FileLabelRecord {
  return {
    workspace: row.workspace,
    path: row.path,
    sha256: row.sha256,
    identity: row.device !== null && row.inode !== null ? { device: row.device, inode: row.inode } : null,
    size: row.size === null ? null : Number(row.size),
    mtimeMs: row.mtime_ms,
    label: readLabel(row.label),
    tool: row.tool,
    runId: row.run_id,
    owner: row.owner,
    reason: row.reason,
    createdAt: Number(row.created_at),
  };
}
