import { z } from "zod";
import { defineTool, pathArgs } from "../define-tool.js";
import { deleteWorkspaceEntry } from "../workspace-files.js";
import { FILE_LIMITS } from "./file-limits.js";

export const FileDeleteArgs = z.object({
  path: z.string().min(1).max(1_000).describe("file or folder relative to the workspace"),
  recursive: z.boolean().default(false).describe("delete a folder with everything in it"),
});

export interface FileDeleteValue {
  path: string;
  type: string;
  removed: number;
}

/** Deletes a workspace file, symlink (never its target) or folder. Irreversible, so high-risk: it waits for approval by default. */
export const fileDeleteTool = defineTool({
  name: "file_delete",
  description: "Delete a file or (with recursive: true) a folder in the workspace. A symlink is removed, never what it points to.",
  schema: FileDeleteArgs,
  permission: "WRITE",
  powers: ["workspace.delete"],
  idempotent: false,
  timeoutMs: 10_000,
  resources: (args) => ({ writes: pathArgs(args, "path") }),
  async execute({ path: requested, recursive }, context): Promise<FileDeleteValue> {
    const result = await deleteWorkspaceEntry(context.workspace, requested, { recursive, maxEntries: FILE_LIMITS.deleteMaxEntries });
    return { path: result.relative, type: result.type, removed: result.removed };
  },
  summarize: (value) => {
    const deleted = value as FileDeleteValue;
    return `deleted ${deleted.type} ${deleted.path}${deleted.removed > 1 ? ` (${deleted.removed} entries)` : ""}`;
  },
});
