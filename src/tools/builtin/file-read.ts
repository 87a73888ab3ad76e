import { open, stat } from "node:fs/promises";
import { z } from "zod";
import { ToolError } from "../../core/errors.js";
import { defineTool } from "../define-tool.js";
import { relativeToRoot, resolveExisting } from "../workspace.js";

const DEFAULT_MAX_BYTES = 1024 * 1024;

export const FileReadArgs = z.object({
  path: z.string().min(1).max(1_000).describe("file path relative to the workspace"),
  maxBytes: z.number().int().min(1).max(10 * 1024 * 1024).optional().describe("read at most this many bytes (default 1 MiB)"),
});

export interface FileReadValue {
  path: string;
  content: string;
  bytes: number;
  truncated: boolean;
}

/** Reads a UTF-8 text file inside the workspace. */
export const fileReadTool = defineTool({
  name: "file_read",
  description: "Read a text file from the workspace. Paths are relative to the workspace; nothing outside it can be read.",
  schema: FileReadArgs,
  permission: "READ",
  riskLevel: "low",
  idempotent: true,
  timeoutMs: 5_000,
  async execute({ path: requested, maxBytes = DEFAULT_MAX_BYTES }, context): Promise<FileReadValue> {
    const real = await resolveExisting(context.workspace, requested);
    const info = await stat(real);
    if (!info.isFile()) throw new ToolError("invalid_path", `"${requested}" is not a file`, { path: requested });
    const handle = await open(real, "r");
    try {
      const length = Math.min(info.size, maxBytes);
      const buffer = Buffer.alloc(length);
      const { bytesRead } = await handle.read(buffer, 0, length, 0);
      return {
        path: relativeToRoot(context.workspace, real),
        content: buffer.subarray(0, bytesRead).toString("utf8"),
        bytes: info.size,
        truncated: info.size > bytesRead,
      };
    } finally {
      await handle.close();
    }
  },
  summarize: (value) => {
    const read = value as FileReadValue;
    return `${read.path}: ${read.bytes} bytes${read.truncated ? " (truncated)" : ""}`;
  },
});
