import { type FileHandle, lstat } from "node:fs/promises";
import path from "node:path";
import type { NewFileLabel } from "../../core/file-labels.js";
import { errorMessage, ToolError } from "../../core/errors.js";
import { describeLabel, type Label, LabelledValue } from "../../core/provenance.js";
import type { ToolContext } from "../define-tool.js";
import { type FileFacts, type FileVerdict, factsOf } from "../file-trust.js";
import { openFileForRead } from "../workspace.js";

/**
 * How the file tools label what they read and keep the labels of what they write
 * (src/tools/file-trust.ts). Without a trust policy (a bare registry) they do neither and cost
 * nothing.
 */

/** Whose call this is, for a file's label (the run's owner's memory namespace; a person's direct call gets theirs). */
export function ownerOf(context: Pick<ToolContext, "memoryNamespace">): string | null {
  return context.memoryNamespace ? context.memoryNamespace.join("/") : null;
}

/** The label of an open file's data, judged from its descriptor; undefined without a trust policy. */
export async function judgeOpen(context: Pick<ToolContext, "workspace" | "fileTrust" | "memoryNamespace">, handle: FileHandle, relative: string, known?: Parameters<typeof factsOf>[2]): Promise<FileVerdict | undefined> {
  if (!context.fileTrust) return undefined;
  return context.fileTrust.judge(context.workspace, await factsOf(handle, relative, known), { owner: ownerOf(context) });
}

/** The verdict on a workspace file by path (opened through the workspace's containment); undefined when it does not exist or without a trust policy. */
export async function judgePath(context: Pick<ToolContext, "workspace" | "fileTrust" | "memoryNamespace">, requested: string): Promise<FileVerdict | undefined> {
  if (!context.fileTrust) return undefined;
  let file;
  try {
    file = await openFileForRead(context.workspace, requested);
  } catch (error) {
    if (error instanceof ToolError && error.code === "not_found") return undefined;
    throw error;
  }
  try {
    return await context.fileTrust.judge(context.workspace, await factsOf(file.handle, file.relative), { owner: ownerOf(context) });
  } finally {
    await file.handle.close();
  }
}

/** A tool's value with the label of the file it came from (as it is, without a verdict). */
export function withVerdict<T>(value: T, verdict: FileVerdict | undefined): T | LabelledValue {
  return verdict ? new LabelledValue(value, verdict.label) : value;
}

/** What a record of a file write needs besides the file: its label, the tool, and why in words. */
export interface WriteLabel {
  label: Label;
  tool: string;
  reason: string;
}

function newRecord(context: ToolContext, about: WriteLabel, file: { relative: string; sha256: string | null; identity?: FileFacts["identity"]; size?: number; mtimeMs?: number }): NewFileLabel {
  return {
    workspace: context.workspace,
    path: file.relative,
    sha256: file.sha256,
    identity: file.identity ?? null,
    size: file.size ?? null,
    mtimeMs: file.mtimeMs ?? null,
    label: about.label,
    tool: about.tool,
    runId: context.runId ?? null,
    owner: ownerOf(context),
    reason: about.reason,
  };
}

/**
 * Keeps an untrusted label before the file exists (by the digest of the bytes about to be
 * written: the same content anywhere is untrusted from then on, and no crash in between leaves
 * the file without it). A trusted label is kept after (`afterWrite`), with the file's identity:
 * only that file, unchanged, is trusted by it.
 */
export function beforeWrite(context: ToolContext, about: (previous?: FileFacts) => Promise<WriteLabel> | WriteLabel): (written: { relative: string; sha256: string; previous?: FileFacts }) => Promise<void> {
  return async (written) => {
    const trust = context.fileTrust;
    if (!trust?.recording) return;
    const label = await about(written.previous);
    if (label.label.trust === "untrusted") await keep(context, [newRecord(context, label, { relative: written.relative, sha256: written.sha256 })], "before");
  };
}

/** Keeps a trusted label once the file is written, by its digest and identity. */
export async function afterWrite(context: ToolContext, about: WriteLabel, written: { relative: string; sha256: string; identity: FileFacts["identity"]; bytes: number; mtimeMs: number }): Promise<void> {
  if (!context.fileTrust?.recording || about.label.trust !== "trusted") return;
  await keep(context, [newRecord(context, about, { relative: written.relative, sha256: written.sha256, identity: written.identity, size: written.bytes, mtimeMs: written.mtimeMs })], "after");
}

/**
 * Keeps labels of files by identity and, when known, digest: before an effect that keeps the
 * files' identities (a move), a failure refuses it; after one (a script's files), it is let be.
 */
export async function keepLabels(
  context: ToolContext,
  files: ReadonlyArray<{ about: WriteLabel; relative: string; sha256: string | null; identity?: FileFacts["identity"]; size?: number; mtimeMs?: number }>,
  when: "before" | "after",
): Promise<void> {
  if (!context.fileTrust?.recording || files.length === 0) return;
  await keep(
    context,
    files.map((file) => newRecord(context, file.about, file)),
    when,
  );
}

async function keep(context: ToolContext, records: NewFileLabel[], when: "before" | "after"): Promise<void> {
  try {
    await context.fileTrust?.record(records);
  } catch (error) {
    // Not kept, a file would be judged by its path alone: before the effect, the call is refused rather than launder it.
    if (when === "before") throw new ToolError("label_not_kept", `the label of ${records[0]?.path ?? "a file"} could not be kept (${errorMessage(error)}); nothing was changed`, { path: records[0]?.path });
  }
}

/**
 * The labels of what a script changed: each file it wrote and folder it made takes the label of
 * the call (what the script could read, its code, its input). Untrusted, by the digests of the
 * files before they are applied, and by identity after (the names too); trusted, by digest and
 * identity after.
 */
export async function keepScriptLabels(context: ToolContext, label: Label, changes: ReadonlyArray<{ action: string; path: string; sha256?: string }>, when: "before" | "after"): Promise<void> {
  const trust = context.fileTrust;
  if (!trust?.recording) return;
  const made = changes.filter((change) => change.action === "write" || change.action === "mkdir");
  const about: WriteLabel = { label, tool: "code_run", reason: `${made.length === 1 ? "made" : "one of the entries made"} by a script${context.subtaskId ? ` of subtask ${context.subtaskId}` : ""}; the call held ${describeLabel(label)} data` };
  if (when === "before") {
    if (label.trust !== "untrusted") return;
    await keepLabels(context, made.flatMap((change) => (change.sha256 ? [{ about, relative: change.path, sha256: change.sha256 }] : [])), "before");
    return;
  }
  const files = [];
  for (const change of made) {
    const info = await lstat(path.join(context.workspace, change.path), { bigint: true }).catch(() => undefined);
    if (!info) continue;
    const identity = { device: info.dev.toString(), inode: info.ino.toString() };
    files.push({ about, relative: change.path, sha256: change.sha256 ?? null, identity, ...(info.isFile() ? { size: Number(info.size), mtimeMs: Number(info.mtimeMs) } : {}) });
  }
  await keepLabels(context, files, "after");
}
