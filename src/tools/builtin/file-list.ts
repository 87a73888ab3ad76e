import { z } from "zod";
import { LabelledValue } from "../../core/provenance.js";
import { defineTool, outputSchemaOf, pathArgs } from "../define-tool.js";
import { type ListedEntry, listWorkspace } from "../workspace-files.js";
import { FILE_LIMITS } from "./file-limits.js";

export const FileListArgs = z.object({
  path: z.string().min(1).max(1_000).default(".").describe("folder relative to the workspace (default: the workspace)"),
  recursive: z.boolean().default(false).describe("list sub-folders too"),
});

export type FileEntry = ListedEntry;

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
  outputSchema: outputSchemaOf(z.object({ path: z.string(), entries: z.array(z.object({ path: z.string(), type: z.enum(["file", "directory", "symlink", "other"]), bytes: z.number().optional() })), truncated: z.boolean() })),
  permission: "READ",
  powers: ["workspace.read"],
  idempotent: true,
  timeoutMs: 5_000,
  resources: (args) => ({ reads: args.path === undefined ? ["."] : pathArgs(args, "path") }),
  async execute({ path: requested, recursive }, context): Promise<FileListValue | LabelledValue> {
    const trust = context.fileTrust;
    const listing = await listWorkspace(context.workspace, requested, { recursive, maxEntries: FILE_LIMITS.listMaxEntries, identities: trust !== undefined });
    const value = { path: listing.relative, entries: listing.entries, truncated: listing.truncated };
    if (!trust) return value;
    // A name is chosen by whoever put the entry there: the listing's label is its names' (the folder's own, by its real path, too).
    const folder = listing.relative === "." ? [] : [{ relative: listing.relative }];
    return new LabelledValue(value, await trust.judgeNames(context.workspace, [...folder, ...(listing.identities ?? [])]));
  },
  summarize: (value) => {
    const listing = value as FileListValue;
    const names = listing.entries.map((entry) => (entry.type === "directory" ? `${entry.path}/` : entry.path));
    return `${listing.path}: ${names.length} entries${names.length ? ` (${names.slice(0, 20).join(", ")}${names.length > 20 ? ", …" : ""})` : ""}`;
  },
});
