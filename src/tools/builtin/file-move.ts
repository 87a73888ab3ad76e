import { z } from "zod";
import { defineTool, pathArgs } from "../define-tool.js";
import { moveWorkspaceEntry } from "../workspace-files.js";

export const FileMoveArgs = z.object({
  from: z.string().min(1).max(1_000).describe("the file or folder to move, relative to the workspace"),
  to: z.string().min(1).max(1_000).describe("its new path, relative to the workspace; parent folders are created"),
  overwrite: z.boolean().default(false).describe("replace a file already at the new path"),
});

export interface FileMoveValue {
  from: string;
  to: string;
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
    return moveWorkspaceEntry(context.workspace, from, to, { overwrite });
  },
  summarize: (value) => {
    const moved = value as FileMoveValue;
    return `moved ${moved.from} to ${moved.to}`;
  },
});
