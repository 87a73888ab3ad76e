import type { FileLabelRecord, FileLabelStore } from "../core/file-labels.js";
import { ToolError } from "../core/errors.js";
import { describeLabel, type Label } from "../core/provenance.js";
import { factsOf, type FileTrust } from "./file-trust.js";
import { normalisePath } from "../core/designation.js";
import { openFileForRead } from "./workspace.js";

/** What `troupe trust show <path>` says of a workspace file: its label and why, and what troupe recorded at its path. */
export interface FileTrustReport {
  /** The path asked for, and the file it is (symlinks followed). */
  path: string;
  real: string;
  trusted: boolean;
  label: Label;
  /** Why, each a line: its path, its other names, what troupe recorded of its data. */
  reasons: string[];
  /** Labels troupe recorded at its path that no longer describe it (the file changed since, outside troupe). */
  earlier: Array<{ reason: string; tool: string; runId: string | null; createdAt: number; trust: Label["trust"] }>;
}

const RECORDS_SHOWN = 10;

function shown(record: FileLabelRecord): FileTrustReport["earlier"][number] {
  return { reason: record.reason, tool: record.tool, runId: record.runId, createdAt: record.createdAt, trust: record.label.trust };
}

/** Judges a workspace file as a read would, and says why (the file opened through the workspace's containment). */
export async function fileTrustReport(files: FileTrust, workspace: string, requested: string, options: { store?: FileLabelStore; owner?: string | null } = {}): Promise<FileTrustReport> {
  const { store } = options;
  let file;
  try {
    file = await openFileForRead(workspace, requested);
  } catch (error) {
    if (error instanceof ToolError && error.code === "not_found") throw new ToolError("file_not_found", `"${requested}" is not a file in the workspace ${workspace}`, { path: requested });
    throw error;
  }
  try {
    const verdict = await files.judge(workspace, await factsOf(file.handle, file.relative), { owner: options.owner ?? null });
    const reasons = normalisePath(requested) === file.relative ? verdict.reasons : [`${requested} leads to ${file.relative} (a symlink): that file is what is read`, ...verdict.reasons];
    const deciding = new Set(verdict.records.map((record) => `${record.createdAt}/${record.reason}`));
    const atPath = store ? await store.atPath(workspace, file.relative, RECORDS_SHOWN) : [];
    const earlier = atPath.filter((record) => !deciding.has(`${record.createdAt}/${record.reason}`)).map(shown);
    return { path: requested, real: file.relative, trusted: verdict.trusted, label: verdict.label, reasons: [...reasons, `its label: ${describeLabel(verdict.label)}`], earlier };
  } finally {
    await file.handle.close();
  }
}
