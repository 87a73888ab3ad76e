import type { Label } from "./provenance.js";

/**
 * Labels that follow a file's data (docs/trust.md): when troupe writes, copies, moves, appends
 * to or extracts a file, it keeps the label of what the file was made from, keyed by what
 * identifies the file's content (its SHA-256) and the file itself (device and inode, valid while
 * its size and modification time are those recorded). A later read — by another run, thread or
 * process sharing the store — of the same content anywhere, or of the same unchanged file under
 * any name, takes that label. A file changed outside troupe since matches neither, and is judged
 * afresh by its path.
 */

/** A file's identity on its file system, as text (inode numbers can pass 2^53). */
export interface FileIdentity {
  device: string;
  inode: string;
}

export interface FileLabelRecord {
  /** The workspace root (its real path) the file was in. */
  workspace: string;
  /** Its path in the workspace when recorded. */
  path: string;
  /** The SHA-256 of its bytes (hex), when known. */
  sha256: string | null;
  identity: FileIdentity | null;
  /** Its size and modification time when recorded: the identity holds only while they are the same. */
  size: number | null;
  mtimeMs: number | null;
  /** The label of what it was made from. */
  label: Label;
  /** The tool that made it (file_write, file_copy, file_move, code_run…). */
  tool: string;
  runId: string | null;
  /** Whose run or call made it (its memory namespace, joined): a trusted label vouches only to the same owner. */
  owner: string | null;
  /** Why, in words: "copied from inbox/mail.eml". */
  reason: string;
  createdAt: number;
}

export type NewFileLabel = Omit<FileLabelRecord, "createdAt">;

/** The records of file labels, in the store (SQLite migration 19, Postgres migration 8). */
export interface FileLabelStore {
  /** Keeps a record, committed before this resolves. */
  record(records: readonly NewFileLabel[]): Promise<void>;
  /** The records of this content, or of any of these files (newest first, bounded). */
  find(query: { sha256?: string; identities?: readonly FileIdentity[] }): Promise<FileLabelRecord[]>;
  /** The records made at a path of a workspace (newest first), for `troupe trust show`. */
  atPath(workspace: string, path: string, limit: number): Promise<FileLabelRecord[]>;
  /** Whether any untrusted record was made in the workspace (a script that may read every file may read one). */
  anyUntrusted(workspace: string): Promise<boolean>;
}

/** The most records a lookup reads: the newest are the ones that matter. */
export const FILE_LABEL_LOOKUP_LIMIT = 64;
