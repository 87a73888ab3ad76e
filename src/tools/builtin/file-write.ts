import { lstat } from "node:fs/promises";
import { z } from "zod";
import { ToolError } from "../../core/errors.js";
import { defineTool } from "../define-tool.js";
import { relativeToRoot, resolveForWrite, writeFileAtomic } from "../workspace.js";

const MAX_BYTES = 5 * 1024 * 1024;

export const FileWriteArgs = z.object({
  path: z.string().min(1).max(1_000).describe("file path relative to the workspace; parent folders are created"),
  content: z.string().describe("the full text to write"),
  overwrite: z.boolean().default(true).describe("replace the file when it exists (default true)"),
});

export interface FileWriteValue {
  path: string;
  bytes: number;
  created: boolean;
}

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
    if (Buffer.byteLength(content, "utf8") > MAX_BYTES) {
      throw new ToolError("too_large", `the content is larger than ${MAX_BYTES / 1024 / 1024} MiB`, { path: requested });
    }
    const target = await resolveForWrite(context.workspace, requested);
    const existed = await lstat(target).then(
      () => true,
      () => false,
    );
    if (existed && !overwrite) throw new ToolError("exists", `"${requested}" already exists`, { path: requested });
    const bytes = await writeFileAtomic(target, content);
    return { path: relativeToRoot(context.workspace, target), bytes, created: !existed };
  },
  summarize: (value) => {
    const written = value as FileWriteValue;
    return `wrote ${written.bytes} bytes to ${written.path}`;
  },
});
