import { z } from "zod";
import { defineTool } from "../define-tool.js";
import { openFileForRead } from "../workspace.js";
import { FILE_LIMITS } from "./file-limits.js";

export const FileReadArgs = z.object({
  path: z.string().min(1).max(1_000).describe("file path relative to the workspace"),
  maxBytes: z
    .number()
    .int()
    .positive()
    .max(FILE_LIMITS.readMaxBytes)
    .optional()
    .describe(`read at most this many bytes (default ${FILE_LIMITS.readDefaultBytes})`),
});

export interface FileReadValue {
  path: string;
  content: string;
  bytes: number;
  truncated: boolean;
}

/** Reads a text file inside the workspace (through descriptors held open, so a swapped symlink cannot lead out). */
export const fileReadTool = defineTool({
  name: "file_read",
  description: "Read a text file from the workspace. Paths are relative to the workspace; nothing outside it can be read.",
  schema: FileReadArgs,
  permission: "READ",
  riskLevel: "low",
  idempotent: true,
  timeoutMs: 5_000,
  async execute({ path: requested, maxBytes = FILE_LIMITS.readDefaultBytes }, context): Promise<FileReadValue> {
    const file = await openFileForRead(context.workspace, requested);
    try {
      const length = Math.min(file.size, maxBytes);
      const buffer = Buffer.alloc(length);
      const { bytesRead } = await file.handle.read(buffer, 0, length, 0);
      return { path: file.relative, content: buffer.subarray(0, bytesRead).toString("utf8"), bytes: file.size, truncated: file.size > bytesRead };
    } finally {
      await file.handle.close();
    }
  },
  summarize: (value) => {
    const read = value as FileReadValue;
    return `${read.path}: ${read.bytes} bytes${read.truncated ? " (truncated)" : ""}`;
  },
});
