import { createHash } from "node:crypto";
import { z } from "zod";
import { defineTool, outputSchemaOf, pathArgs } from "../define-tool.js";
import type { LabelledValue } from "../../core/provenance.js";
import type { FileVerdict } from "../file-trust.js";
import { openFileForRead } from "../workspace.js";
import { judgeOpen, withVerdict } from "./file-labelling.js";

export const TextStatsArgs = z.object({
  path: z.string().min(1).max(1_000).describe("file path relative to the workspace"),
});

export interface TextStatsValue {
  path: string;
  bytes: number;
  lines: number;
  words: number;
  characters: number;
}

const NEWLINE = 0x0a;
const CHUNK_BYTES = 64 * 1024;

function isSpace(byte: number): boolean {
  return byte === 0x20 || (byte >= 0x09 && byte <= 0x0d);
}

/**
 * Counts the lines, words and characters of a text file in the workspace, streaming it, so a
 * file of any size is counted exactly without its content going anywhere. Lines are counted as
 * `wc -l` does, plus a last line without a newline; characters are UTF-8 code points.
 */
export const textStatsTool = defineTool({
  name: "text_stats",
  description: "Count the lines, words and characters of a text file in the workspace (exact, for files of any size).",
  schema: TextStatsArgs,
  outputSchema: outputSchemaOf(z.object({ path: z.string(), bytes: z.number(), lines: z.number(), words: z.number(), characters: z.number() })),
  permission: "READ",
  powers: ["workspace.read"],
  idempotent: true,
  timeoutMs: 5_000,
  resources: (args) => ({ reads: pathArgs(args, "path") }),
  async execute({ path: requested }, context): Promise<TextStatsValue | LabelledValue> {
    // Read through the descriptor the workspace opened (containment by real path, no symlink out).
    const file = await openFileForRead(context.workspace, requested);
    let bytesRead = 0;
    let lines = 0;
    let words = 0;
    let characters = 0;
    let inWord = false;
    let last = NEWLINE;
    let verdict: FileVerdict | undefined;
    // The digest as the bytes go by, for the file's label (only under a trust policy).
    const hash = context.fileTrust ? createHash("sha256") : undefined;
    try {
      const buffer = Buffer.alloc(CHUNK_BYTES);
      for (;;) {
        context.signal?.throwIfAborted();
        const { bytesRead: count } = await file.handle.read(buffer, 0, CHUNK_BYTES, bytesRead);
        if (count === 0) break;
        bytesRead += count;
        hash?.update(buffer.subarray(0, count));
        for (let index = 0; index < count; index += 1) {
          const byte = buffer[index] as number;
          if ((byte & 0xc0) !== 0x80) characters += 1;
          if (byte === NEWLINE) lines += 1;
          const space = isSpace(byte);
          if (!space && !inWord) words += 1;
          inWord = !space;
        }
        last = buffer[count - 1] as number;
      }
      verdict = await judgeOpen(context, file.handle, file.relative, hash ? { sha256: hash.digest("hex"), bytes: bytesRead } : undefined);
    } finally {
      await file.handle.close();
    }
    if (last !== NEWLINE) lines += 1;
    return withVerdict({ path: file.relative, bytes: bytesRead, lines, words, characters }, verdict);
  },
  summarize: (value) => {
    const stats = value as TextStatsValue;
    return `${stats.path}: ${stats.lines} lines, ${stats.words} words, ${stats.characters} characters`;
  },
});
