import { z } from "zod";
import { ToolError } from "../../core/errors.js";
import { defineTool, outputSchemaOf, pathArgs } from "../define-tool.js";
import type { LabelledValue } from "../../core/provenance.js";
import { type OpenFile, openFileForRead } from "../workspace.js";
import { judgeOpen, withVerdict } from "./file-labelling.js";
import { FILE_ENCODINGS, FILE_LIMITS, type FileEncoding } from "./file-limits.js";

export const FileReadArgs = z.object({
  path: z.string().min(1).max(1_000).describe("file path relative to the workspace"),
  maxBytes: z
    .number()
    .int()
    .positive()
    .max(FILE_LIMITS.readMaxBytes)
    .optional()
    .describe(`read only the first maxBytes bytes (without it the whole file is read, up to ${FILE_LIMITS.readMaxBytes} bytes)`),
  encoding: z
    .enum(["auto", ...FILE_ENCODINGS])
    .default("auto")
    .describe("auto (default): UTF-8 text as it is, any other bytes base64-encoded (the value's encoding says which). utf8: text only; other bytes are refused. base64: any bytes, base64-encoded"),
});

export interface FileReadValue {
  path: string;
  content: string;
  encoding: FileEncoding;
  /** Size of the file. */
  bytes: number;
  /** Whether only the beginning was read (`maxBytes`). */
  truncated: boolean;
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Where a cut at `length` must move back to, so no UTF-8 character is split. */
function characterBoundary(buffer: Buffer, length: number): number {
  let end = length;
  // Step back over continuation bytes to the start of the last character, then keep it only if whole.
  let start = end - 1;
  while (start > 0 && start > end - 4 && ((buffer[start] as number) & 0xc0) === 0x80) start -= 1;
  const lead = buffer[start] as number | undefined;
  if (lead === undefined) return end;
  const size = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  if (start + size > end) end = start;
  return end;
}

/**
 * Reads a file inside the workspace (through descriptors held open, so a swapped symlink cannot
 * lead out), byte-exact: UTF-8 text is returned as it is — trailing whitespace, CRLF and all —
 * and bytes that are not UTF-8 are never replaced: base64-encoded (the value says so), or
 * refused when UTF-8 was asked for. A value read as base64 passed on to file_write keeps its
 * encoding, so read-and-save copies any file byte for byte.
 */
export const fileReadTool = defineTool({
  name: "file_read",
  description:
    "Read a file from the workspace, exactly as it is. Paths are relative to the workspace; nothing outside it can be read. UTF-8 text comes as it is; other bytes come base64-encoded (encoding says which).",
  schema: FileReadArgs,
  outputSchema: outputSchemaOf(z.object({ path: z.string(), content: z.string(), encoding: z.enum(["utf8", "base64"]), bytes: z.number(), truncated: z.boolean() })),
  permission: "READ",
  powers: ["workspace.read"],
  idempotent: true,
  timeoutMs: 5_000,
  resources: (args) => ({ reads: pathArgs(args, "path") }),
  async execute({ path: requested, maxBytes, encoding }, context): Promise<FileReadValue | LabelledValue> {
    const file = await openFileForRead(context.workspace, requested);
    try {
      const value = await readOpenFile(file, requested, maxBytes, encoding);
      // Labelled by the file opened (its real path, other names, what troupe recorded of its data), not by the path asked for.
      return withVerdict(value.read, await judgeOpen(context, file.handle, file.relative, value.whole));
    } finally {
      await file.handle.close();
    }
  },
  summarize: (value) => {
    const read = value as FileReadValue;
    return `${read.path}: ${read.bytes} bytes${read.encoding === "base64" ? " (base64)" : ""}${read.truncated ? " (truncated)" : ""}`;
  },
});

/** Reads an open file as file_read returns it; `whole` holds its bytes when all were read (for its digest). */
async function readOpenFile(file: OpenFile, requested: string, maxBytes: number | undefined, encoding: FileEncoding | "auto"): Promise<{ read: FileReadValue; whole?: Buffer }> {
  const finish = (read: FileReadValue, buffer: Buffer, length: number) => (read.truncated ? { read } : { read, whole: buffer.subarray(0, length) });
  if (maxBytes === undefined && file.size > FILE_LIMITS.readMaxBytes) {
    throw new ToolError("too_large", `"${requested}" is ${file.size} bytes; file_read returns at most ${FILE_LIMITS.readMaxBytes} (give maxBytes to read its beginning)`, {
      path: requested,
      bytes: file.size,
    });
  }
  const wanted = Math.min(file.size, maxBytes ?? FILE_LIMITS.readMaxBytes);
  const buffer = Buffer.alloc(wanted);
  let length = 0;
  while (length < wanted) {
    const { bytesRead } = await file.handle.read(buffer, length, wanted - length, length);
    if (bytesRead === 0) break;
    length += bytesRead;
  }
  const truncated = file.size > length;
  if (encoding === "base64") {
    return finish({ path: file.relative, content: buffer.subarray(0, length).toString("base64"), encoding, bytes: file.size, truncated }, buffer, length);
  }
  const end = truncated ? characterBoundary(buffer, length) : length;
  let content: string;
  try {
    content = strictUtf8.decode(buffer.subarray(0, end));
  } catch {
    if (encoding === "auto") return finish({ path: file.relative, content: buffer.subarray(0, length).toString("base64"), encoding: "base64", bytes: file.size, truncated }, buffer, length);
    throw new ToolError("not_text", `"${requested}" is not UTF-8 text; read it with encoding base64`, { path: requested });
  }
  return finish({ path: file.relative, content, encoding: "utf8", bytes: file.size, truncated }, buffer, length);
}
