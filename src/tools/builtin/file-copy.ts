import { z } from "zod";
import { ToolError } from "../../core/errors.js";
import { type LabelledValue, TRUSTED } from "../../core/provenance.js";
import { defineTool, outputSchemaOf, pathArgs } from "../define-tool.js";
import type { FileVerdict } from "../file-trust.js";
import { afterWrite, beforeWrite, judgeOpen, withVerdict, type WriteLabel } from "./file-labelling.js";
import { openFileForRead } from "../workspace.js";
import { writeWorkspaceFile } from "../workspace-files.js";
import { FILE_LIMITS } from "./file-limits.js";

export const FileCopyArgs = z.object({
  from: z.string().min(1).max(1_000).describe("the file to copy, relative to the workspace"),
  to: z.string().min(1).max(1_000).describe("the path of the copy, relative to the workspace; parent folders are created"),
  overwrite: z.boolean().default(false).describe("replace a file already at the new path"),
});

export interface FileCopyValue {
  from: string;
  to: string;
  bytes: number;
  created: boolean;
}

/** Copies a workspace file byte for byte (any bytes, text or not), writing the copy atomically. */
export const fileCopyTool = defineTool({
  name: "file_copy",
  description: "Copy a file inside the workspace byte for byte (atomic: the copy appears whole or not at all).",
  schema: FileCopyArgs,
  outputSchema: outputSchemaOf(z.object({ from: z.string(), to: z.string(), bytes: z.number(), created: z.boolean() })),
  permission: "WRITE",
  powers: ["workspace.read", "workspace.write"],
  idempotent: true,
  timeoutMs: 10_000,
  resources: (args) => ({ reads: pathArgs(args, "from"), writes: pathArgs(args, "to") }),
  async execute({ from, to, overwrite }, context): Promise<FileCopyValue | LabelledValue> {
    const source = await openFileForRead(context.workspace, from);
    let bytes: Buffer;
    let verdict: FileVerdict | undefined;
    try {
      if (source.size > FILE_LIMITS.writeMaxBytes) {
        throw new ToolError("too_large", `"${from}" is ${source.size} bytes; a copy may be at most ${FILE_LIMITS.writeMaxBytes}`, { path: from });
      }
      bytes = await source.handle.readFile();
      // The copy holds the source's bytes: it takes the source's label, judged from the file read.
      verdict = await judgeOpen(context, source.handle, source.relative, bytes);
    } finally {
      await source.handle.close();
    }
    const about: WriteLabel = { label: verdict?.label ?? TRUSTED, tool: "file_copy", reason: `copied from ${source.relative}${verdict && !verdict.trusted ? `, which is untrusted (${verdict.reasons[0] ?? ""})` : ""}` };
    const written = await writeWorkspaceFile(context.workspace, to, bytes, { overwrite, maxBytes: FILE_LIMITS.writeMaxBytes, beforeWrite: beforeWrite(context, () => about) });
    await afterWrite(context, about, written);
    return withVerdict({ from: source.relative, to: written.relative, bytes: written.bytes, created: written.created }, verdict);
  },
  summarize: (value) => {
    const copied = value as FileCopyValue;
    return `copied ${copied.from} to ${copied.to} (${copied.bytes} bytes)`;
  },
});
