import { z } from "zod";
import { ToolError } from "../../core/errors.js";
import { defineTool, pathArgs, type ToolContext } from "../define-tool.js";
import { identitiesUnder } from "../file-identities.js";
import { checkRelativePath, translated } from "../workspace.js";
import { moveWorkspaceEntry } from "../workspace-files.js";
import { keepLabels, ownerOf } from "./file-labelling.js";
import { FILE_LIMITS } from "./file-limits.js";

export const FileMoveArgs = z.object({
  from: z.string().min(1).max(1_000).describe("the file or folder to move, relative to the workspace"),
  to: z.string().min(1).max(1_000).describe("its new path, relative to the workspace; parent folders are created"),
  overwrite: z.boolean().default(false).describe("replace a file already at the new path"),
});

export interface FileMoveValue {
  from: string;
  to: string;
}

/**
 * A move keeps each entry's device and inode: the labels its entries had at their old paths are
 * kept by identity before the rename (src/tools/file-trust.ts), so an untrusted file moved (or a
 * folder of them) under a trusted path is untrusted there too. Refused when the tree is too large
 * to label, or the labels cannot be kept; nothing has moved then.
 */
async function keepMovedLabels(context: ToolContext, from: string, to: string): Promise<void> {
  const trust = context.fileTrust;
  if (!trust?.recording) return;
  checkRelativePath(from);
  const destination = checkRelativePath(to).join("/");
  const entries = await translated(from, () => identitiesUnder(context.workspace, from, FILE_LIMITS.deleteMaxEntries));
  if (entries === undefined) throw new ToolError("too_large", `"${from}" holds more than ${FILE_LIMITS.deleteMaxEntries} entries; move fewer at once`, { path: from });
  const top = entries[0]?.relative ?? "";
  const moved = await trust.moved(context.workspace, entries, ownerOf(context));
  await keepLabels(
    context,
    moved.map(({ entry, label, reason }) => ({
      about: { label, tool: "file_move", reason },
      relative: `${destination}${entry.relative.slice(top.length)}`,
      sha256: null,
      identity: entry.identity,
      ...(entry.directory ? {} : { size: entry.size, mtimeMs: entry.mtimeMs }),
    })),
    "before",
  );
}

/** Moves or renames inside the workspace (one atomic rename). */
export const fileMoveTool = defineTool({
  name: "file_move",
  description: "Move or rename a file or folder inside the workspace (atomic rename).",
  schema: FileMoveArgs,
  permission: "WRITE",
  powers: ["workspace.write"],
  idempotent: false,
  timeoutMs: 5_000,
  resources: (args) => ({ writes: pathArgs(args, "from", "to") }),
  async execute({ from, to, overwrite }, context): Promise<FileMoveValue> {
    await keepMovedLabels(context, from, to);
    return moveWorkspaceEntry(context.workspace, from, to, { overwrite });
  },
  summarize: (value) => {
    const moved = value as FileMoveValue;
    return `moved ${moved.from} to ${moved.to}`;
  },
});
