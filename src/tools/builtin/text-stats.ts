import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { z } from "zod";
import { ToolError } from "../../core/errors.js";
import { defineTool } from "../define-tool.js";
import { relativeToRoot, resolveExisting } from "../workspace.js";

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
  permission: "READ",
  riskLevel: "low",
  idempotent: true,
  timeoutMs: 5_000,
  async execute({ path: requested }, context): Promise<TextStatsValue> {
    const real = await resolveExisting(context.workspace, requested);
    const info = await stat(real);
    if (!info.isFile()) throw new ToolError("invalid_path", `"${requested}" is not a file`, { path: requested });
    let lines = 0;
    let words = 0;
    let characters = 0;
    let inWord = false;
    let last = NEWLINE;
    for await (const chunk of createReadStream(real, { signal: context.signal })) {
      const bytes = chunk as Buffer;
      for (const byte of bytes) {
        if ((byte & 0xc0) !== 0x80) characters += 1;
        if (byte === NEWLINE) lines += 1;
        const space = isSpace(byte);
        if (!space && !inWord) words += 1;
        inWord = !space;
      }
      if (bytes.length > 0) last = bytes[bytes.length - 1] as number;
    }
    if (last !== NEWLINE) lines += 1;
    return { path: relativeToRoot(context.workspace, real), bytes: info.size, lines, words, characters };
  },
  summarize: (value) => {
    const stats = value as TextStatsValue;
    return `${stats.path}: ${stats.lines} lines, ${stats.words} words, ${stats.characters} characters`;
  },
});
