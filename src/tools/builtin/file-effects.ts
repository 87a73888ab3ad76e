import { createHash } from "node:crypto";
import { lstat } from "node:fs/promises";
import { z } from "zod";
import { isTroupeError } from "../../core/errors.js";
import type { CallEffect } from "../audit.js";
import type { EffectState, ToolContext, ToolEffect } from "../define-tool.js";
import { checkRelativePath, errnoOf, openParent } from "../workspace.js";
import { openRegularFile } from "../workspace-read.js";

/**
 * The effects of the file tools, recorded in the write-ahead audit row of a call with a call id:
 * each target's state before the call and the state the call is to leave. When a crash cut the
 * call short, the registry compares them with the workspace (see ToolRegistry's `#settle`).
 * A state is what can be compared cheaply and exactly: absent, a folder, a symlink, or a file
 * with its size and SHA-256 (files past `MAX_HASHED_BYTES` have no hash and match nothing).
 */

export type EntryState =
  | { type: "absent" }
  | { type: "file"; bytes: number; sha256: string | null }
  | { type: "directory" }
  | { type: "symlink" }
  | { type: "other" };

const MAX_HASHED_BYTES = 64 * 1024 * 1024;
const CHUNK_BYTES = 256 * 1024;

function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** The state of a workspace entry now, looked up through descriptors (never through a symlink). */
export async function entryState(root: string, requested: string, extra?: Uint8Array): Promise<EntryState> {
  let parent;
  try {
    parent = await openParent(root, requested, false);
  } catch (error) {
    if (isTroupeError(error) && error.code === "not_found") return { type: "absent" };
    throw error;
  }
  const { directory, name } = parent;
  try {
    const info = await lstat(`${directory.anchor}/${name}`).catch((error: unknown) => {
      if (errnoOf(error) === "ENOENT") return undefined;
      throw error;
    });
    if (!info) return extra ? { type: "file", bytes: extra.byteLength, sha256: sha256(extra) } : { type: "absent" };
    if (info.isDirectory()) return { type: "directory" };
    if (info.isSymbolicLink()) return { type: "symlink" };
    if (!info.isFile()) return { type: "other" };
    const file = await openRegularFile(directory, name, requested);
    try {
      const total = file.size + (extra?.byteLength ?? 0);
      if (total > MAX_HASHED_BYTES) return { type: "file", bytes: total, sha256: null };
      const hash = createHash("sha256");
      const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
      let position = 0;
      for (;;) {
        const { bytesRead } = await file.handle.read(buffer, 0, CHUNK_BYTES, position);
        if (bytesRead === 0) break;
        hash.update(buffer.subarray(0, bytesRead));
        position += bytesRead;
        if (position > MAX_HASHED_BYTES) return { type: "file", bytes: position, sha256: null };
      }
      if (extra) hash.update(extra);
      return { type: "file", bytes: position + (extra?.byteLength ?? 0), sha256: hash.digest("hex") };
    } finally {
      await file.handle.close();
    }
  } finally {
    await directory.close();
  }
}

function same(left: unknown, right: unknown): boolean {
  const a = left as EntryState;
  const b = right as EntryState;
  if (a.type !== b.type) return false;
  if (a.type === "file" && b.type === "file") return a.sha256 !== null && a.sha256 === b.sha256 && a.bytes === b.bytes;
  return true;
}

/** Compares every target with the workspace: all in their after-states, all in their before-states, or neither. */
async function checkTargets(effect: CallEffect, context: ToolContext): Promise<EffectState> {
  let after = true;
  let before = true;
  for (const target of effect.targets) {
    const now = await entryState(context.workspace, target.path);
    after &&= same(now, target.after);
    before &&= same(now, target.before);
  }
  // Both at once: the call changes nothing (writing what a file already holds, deleting what is
  // not there), so running it again is harmless, and gives its real outcome (not_found, say).
  return before ? "before" : after ? "after" : "other";
}

const normalized = (requested: string): string => checkRelativePath(requested).join("/");

// `encoding: "base64"` (file_write and file_append may take bytes as base64): the effect is on the bytes.
const WriteArgs = z.object({ path: z.string(), content: z.string(), encoding: z.enum(["utf8", "base64"]).optional() });

function bytesOf(args: z.infer<typeof WriteArgs>): Buffer {
  return args.encoding === "base64" ? Buffer.from(args.content.replace(/\s+/g, ""), "base64") : Buffer.from(args.content, "utf8");
}
const DeleteArgs = z.object({ path: z.string() });
const MoveArgs = z.object({ from: z.string(), to: z.string() });

const fileWriteEffect: ToolEffect = {
  async capture(args, context) {
    const parsed = WriteArgs.parse(args);
    const bytes = bytesOf(parsed);
    return { targets: [{ path: parsed.path, before: await entryState(context.workspace, parsed.path), after: { type: "file", bytes: bytes.byteLength, sha256: sha256(bytes) } }] };
  },
  check: checkTargets,
  derive(args, effect) {
    const { path } = WriteArgs.parse(args);
    const target = effect.targets[0];
    return { path: normalized(path), bytes: (target?.after as { bytes: number }).bytes, created: (target?.before as EntryState).type === "absent" };
  },
};

const fileAppendEffect: ToolEffect = {
  async capture(args, context) {
    const parsed = WriteArgs.parse(args);
    const before = await entryState(context.workspace, parsed.path);
    // What the file will hold: what it holds now, then the content.
    const after = await entryState(context.workspace, parsed.path, bytesOf(parsed));
    return { targets: [{ path: parsed.path, before, after }] };
  },
  check: checkTargets,
  derive: fileWriteEffect.derive,
};

const fileDeleteEffect: ToolEffect = {
  async capture(args, context) {
    const { path } = DeleteArgs.parse(args);
    return { targets: [{ path, before: await entryState(context.workspace, path), after: { type: "absent" } }] };
  },
  check: checkTargets,
  derive(args, effect) {
    const { path } = DeleteArgs.parse(args);
    const before = effect.targets[0]?.before as EntryState;
    return { path: normalized(path), type: before.type === "absent" ? "other" : before.type, removed: 1 };
  },
};

/** file_move: the source goes away and the destination holds what the source held. */
const fileMoveEffect: ToolEffect = {
  async capture(args, context) {
    const { from, to } = MoveArgs.parse(args);
    const source = await entryState(context.workspace, from);
    return {
      targets: [
        { path: from, before: source, after: { type: "absent" } },
        { path: to, before: await entryState(context.workspace, to), after: source },
      ],
    };
  },
  check: checkTargets,
  derive(args) {
    const { from, to } = MoveArgs.parse(args);
    return { from: normalized(from), to: normalized(to) };
  },
};

/** file_copy: the destination holds what the source holds; the source stays. */
const fileCopyEffect: ToolEffect = {
  async capture(args, context) {
    const { from, to } = MoveArgs.parse(args);
    return { targets: [{ path: to, before: await entryState(context.workspace, to), after: await entryState(context.workspace, from) }] };
  },
  check: checkTargets,
  derive(args, effect) {
    const { from, to } = MoveArgs.parse(args);
    const target = effect.targets[0];
    const after = target?.after as EntryState | undefined;
    return { from: normalized(from), to: normalized(to), bytes: after?.type === "file" ? after.bytes : 0, created: (target?.before as EntryState | undefined)?.type === "absent" };
  },
};

/** The effects of the built-in file tools, by tool name. */
export const FILE_EFFECTS: Readonly<Record<string, ToolEffect>> = {
  file_write: fileWriteEffect,
  file_append: fileAppendEffect,
  file_delete: fileDeleteEffect,
  file_move: fileMoveEffect,
  file_copy: fileCopyEffect,
};
