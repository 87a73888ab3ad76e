import { z } from "zod";
import { defineTool } from "../define-tool.js";
import { writeWorkspaceFile } from "../workspace-files.js";
import { FILE_LIMITS } from "./file-limits.js";

export const FileWriteArgs = z.object({
  path: z.string().min(1).max(1_000).describe("file path relative to the workspace; parent folders are created"),
  content: z.string().describe("the full text to write"),
  overwrite: z.boolean().default(true).describe("replace the file when it exists (default true)"),
});

export const FileAppendArgs = z.object({
  path: z.string().min(1).max(1_000).describe("file path relative to the workspace; created when missing"),
  content: z.string().describe("the text to add at the end"),
});

export interface FileWriteValue {
  path: string;
  bytes: number;
  created: boolean;
}

const summarize = (verb: string) => (value: unknown) => {
  const written = value as FileWriteValue;
  return `${verb} ${written.path} (${written.bytes} bytes${written.created ? ", new file" : ""})`;
};

/** Writes a text file inside the workspace atomically (temp file, fsync, rename). */
export const fileWriteTool = defineTool({
  name: "file_write",
  description: "Write a text file in the workspace (atomic: readers see the old or the new content, never a torn file).",
  schema: FileWriteArgs,
  permission: "WRITE",
  riskLevel: "medium",
  idempotent: true,
  timeoutMs: 5_000,
  async execute({ path: requested, content, overwrite }, context): Promise<FileWriteValue> {
    const result = await writeWorkspaceFile(context.workspace, requested, content, { overwrite, maxBytes: FILE_LIMITS.writeMaxBytes });
    return { path: result.relative, bytes: result.bytes, created: result.created };
  },
  summarize: summarize("wrote"),
});

/** Appends text to a workspace file, atomically: the file is rewritten whole through a temporary file. */
export const fileAppendTool = defineTool({
  name: "file_append",
  description: "Append text to a file in the workspace (created when missing). Atomic like file_write.",
  schema: FileAppendArgs,
  permission: "WRITE",
  riskLevel: "medium",
  // Appending twice appends twice: never retried.
  idempotent: false,
  timeoutMs: 5_000,
  async execute({ path: requested, content }, context): Promise<FileWriteValue> {
    const result = await writeWorkspaceFile(context.workspace, requested, content, { append: true, maxBytes: FILE_LIMITS.writeMaxBytes });
    return { path: result.relative, bytes: result.bytes, created: result.created };
  },
  summarize: summarize("appended to"),
});
