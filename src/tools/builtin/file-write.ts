import { z } from "zod";
import { ToolError } from "../../core/errors.js";
import { describeLabel, joinLabels, TRUSTED } from "../../core/provenance.js";
import { defineTool, outputSchemaOf, pathArgs } from "../define-tool.js";
import type { FileFacts } from "../file-trust.js";
import { argumentLabel } from "../trust-policy.js";
import { afterWrite, beforeWrite, type WriteLabel } from "./file-labelling.js";
import { writeWorkspaceFile } from "../workspace-files.js";
import { FILE_ENCODINGS, FILE_LIMITS, type FileEncoding } from "./file-limits.js";

const encoding = z
  .enum(FILE_ENCODINGS)
  .default("utf8")
  .describe("utf8 (default): content is text, written as UTF-8. base64: content is base64 and its bytes are written");

export const FileWriteArgs = z.object({
  path: z.string().min(1).max(1_000).describe("file path relative to the workspace; parent folders are created"),
  content: z.string().describe("the full content to write, exactly"),
  overwrite: z.boolean().default(true).describe("replace the file when it exists (default true)"),
  encoding,
});

export const FileAppendArgs = z.object({
  path: z.string().min(1).max(1_000).describe("file path relative to the workspace; created when missing"),
  content: z.string().describe("the content to add at the end"),
  encoding,
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

/** The bytes `content` stands for; base64 that does not decode back to itself is refused, not guessed at. */
export function contentBytes(content: string, encoding: FileEncoding): string | Buffer {
  if (encoding === "utf8") return content;
  const compact = content.replace(/\s+/g, "");
  const bytes = Buffer.from(compact, "base64");
  if (bytes.toString("base64").replace(/=+$/, "") !== compact.replace(/=+$/, "")) {
    throw new ToolError("invalid_arguments", "content is not valid base64");
  }
  return bytes;
}

/** Writes a file in the workspace atomically (temp file, fsync, rename), byte for byte. */
/** What a write or an append gives: the file, its size now, whether it is new. */
const WRITTEN = outputSchemaOf(z.object({ path: z.string(), bytes: z.number(), created: z.boolean() }));

export const fileWriteTool = defineTool({
  name: "file_write",
  description: "Write a file in the workspace with exactly the content given (atomic: readers see the old or the new content, never a torn file).",
  schema: FileWriteArgs,
  outputSchema: WRITTEN,
  permission: "WRITE",
  powers: ["workspace.write"],
  idempotent: true,
  timeoutMs: 5_000,
  resources: (args) => ({ writes: pathArgs(args, "path") }),
  async execute({ path: requested, content, overwrite, encoding: kind }, context): Promise<FileWriteValue> {
    // The file keeps the label of its content (docs/trust.md): written from untrusted data, it is untrusted from then on.
    const about = (): WriteLabel => ({ label: argumentLabel("content", content, context.provenance), tool: "file_write", reason: `written${context.subtaskId ? ` by subtask ${context.subtaskId}` : ""} from ${describeLabel(argumentLabel("content", content, context.provenance))} data` });
    const result = await writeWorkspaceFile(context.workspace, requested, contentBytes(content, kind), { overwrite, maxBytes: FILE_LIMITS.writeMaxBytes, beforeWrite: beforeWrite(context, about) });
    await afterWrite(context, about(), result);
    return { path: result.relative, bytes: result.bytes, created: result.created };
  },
  summarize: summarize("wrote"),
});

/** Appends to a workspace file, atomically: the file is rewritten whole through a temporary file. */
export const fileAppendTool = defineTool({
  name: "file_append",
  description: "Append content to a file in the workspace (created when missing). Atomic like file_write.",
  schema: FileAppendArgs,
  outputSchema: WRITTEN,
  permission: "WRITE",
  powers: ["workspace.write"],
  // Appending twice appends twice: never retried.
  idempotent: false,
  timeoutMs: 5_000,
  resources: (args) => ({ writes: pathArgs(args, "path") }),
  async execute({ path: requested, content, encoding: kind }, context): Promise<FileWriteValue> {
    // What was there keeps its label in the longer file, joined with what was added.
    let about: WriteLabel | undefined;
    const judged = async (previous?: FileFacts): Promise<WriteLabel> => {
      const before = previous && context.fileTrust ? (await context.fileTrust.judge(context.workspace, previous)).label : TRUSTED;
      const label = joinLabels(before, argumentLabel("content", content, context.provenance));
      about = { label, tool: "file_append", reason: `appended to${context.subtaskId ? ` by subtask ${context.subtaskId}` : ""}; it holds ${describeLabel(label)} data` };
      return about;
    };
    const result = await writeWorkspaceFile(context.workspace, requested, contentBytes(content, kind), { append: true, maxBytes: FILE_LIMITS.writeMaxBytes, beforeWrite: beforeWrite(context, judged) });
    if (context.fileTrust?.recording) await afterWrite(context, about ?? (await judged(result.previous)), result);
    return { path: result.relative, bytes: result.bytes, created: result.created };
  },
  summarize: summarize("appended to"),
});
