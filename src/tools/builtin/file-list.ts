import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { ToolError } from "../../core/errors.js";
import { defineTool } from "../define-tool.js";
import { isInside, relativeToRoot, resolveExisting } from "../workspace.js";

const MAX_ENTRIES = 1_000;

export const FileListArgs = z.object({
  path: z.string().min(1).max(1_000).default(".").describe("folder relative to the workspace (default: the workspace)"),
  recursive: z.boolean().default(false).describe("list sub-folders too"),
});

export interface FileEntry {
  path: string;
  type: "file" | "directory" | "symlink";
  bytes?: number;
}

export interface FileListValue {
  path: string;
  entries: FileEntry[];
  truncated: boolean;
}

/** Lists a folder inside the workspace. Symlinks are listed, not followed. */
export const fileListTool = defineTool({
  name: "file_list",
  description: "List the files in a workspace folder (optionally recursive). Paths are relative to the workspace.",
  schema: FileListArgs,
  permission: "READ",
  riskLevel: "low",
  idempotent: true,
  timeoutMs: 5_000,
  async execute({ path: requested, recursive }, context): Promise<FileListValue> {
    const root = context.workspace;
    const start = await resolveExisting(root, requested);
    if (!(await stat(start)).isDirectory()) throw new ToolError("invalid_path", `"${requested}" is not a folder`, { path: requested });
    const entries: FileEntry[] = [];
    let truncated = false;
    const walk = async (directory: string): Promise<void> => {
      const children = await readdir(directory, { withFileTypes: true });
      children.sort((a, b) => a.name.localeCompare(b.name));
      for (const child of children) {
        if (entries.length >= MAX_ENTRIES) {
          truncated = true;
          return;
        }
        const full = path.join(directory, child.name);
        if (!isInside(root, full)) continue;
        if (child.isSymbolicLink()) {
          entries.push({ path: relativeToRoot(root, full), type: "symlink" });
        } else if (child.isDirectory()) {
          entries.push({ path: relativeToRoot(root, full), type: "directory" });
          if (recursive) await walk(full);
        } else if (child.isFile()) {
          entries.push({ path: relativeToRoot(root, full), type: "file", bytes: (await stat(full)).size });
        }
      }
    };
    await walk(start);
    return { path: relativeToRoot(root, start), entries, truncated };
  },
  summarize: (value) => {
    const listing = value as FileListValue;
    const names = listing.entries.map((entry) => (entry.type === "directory" ? `${entry.path}/` : entry.path));
    return `${listing.path}: ${names.length} entries${names.length ? ` (${names.slice(0, 20).join(", ")}${names.length > 20 ? ", …" : ""})` : ""}`;
  },
});
