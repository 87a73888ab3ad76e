import type { UnwrittenFile } from "../core/plan.js";
import type { Label } from "../core/provenance.js";
import type { Stash } from "../core/stash.js";
import { errorMessage } from "../core/errors.js";
import type { State } from "./state.js";

/** Characters of an unwritten file's content the answer carries; the rest is one stash handle away. */
const INLINE_CHARS = 20_000;

/** Keeps what a subtask could not write in the stash (under `<subtask>~unwritten-<n>`, with the subtask's label), so the content is not lost with the failed call. */
export async function keepUnwritten(deps: { stash: Stash }, runId: string, subtaskId: string, files: Array<{ path: string; tool: string; reason: string; content: string }>, label: Label): Promise<UnwrittenFile[]> {
  const kept: UnwrittenFile[] = [];
  for (const [index, file] of files.entries()) {
    const entry: UnwrittenFile = { path: file.path, tool: file.tool, reason: file.reason, bytes: Buffer.byteLength(file.content, "utf8") };
    try {
      entry.ref = (await deps.stash.put({ runId, subtaskId: `${subtaskId}~unwritten-${index + 1}` }, file.content, label)).ref;
    } catch (error) {
      entry.reason = `${entry.reason} (and its content could not be kept: ${errorMessage(error)})`;
    }
    kept.push(entry);
  }
  return kept;
}

/**
 * The answer's part for files the run was asked to write and could not (seed 000 §1.5): each
 * file's path, why, and the content it was to hold — unless a later call wrote that file after all.
 */
export async function unwrittenSection(state: Pick<State, "plan" | "results">, stash: Stash): Promise<string> {
  const written = new Set(Object.values(state.results ?? {}).flatMap((result) => (result.artifacts ?? []).filter((artifact) => artifact.action === "written").map((artifact) => artifact.path)));
  const parts: string[] = [];
  for (const subtask of state.plan ?? []) {
    for (const file of state.results?.[subtask.id]?.unwritten ?? []) {
      if (written.has(file.path)) continue;
      let content: string | undefined;
      if (file.ref) {
        try {
          const value = await stash.get(file.ref);
          content = typeof value === "string" ? value : JSON.stringify(value);
        } catch {
          content = undefined;
        }
      }
      const shown = content === undefined ? "(its content could not be read back)" : content.length > INLINE_CHARS ? `${content.slice(0, INLINE_CHARS)}\n… (${file.bytes} bytes in all; the whole is kept at ${file.ref})` : content;
      const fence = shown.includes("```") ? "~~~~" : "```";
      parts.push(`**${file.path} could not be written** (${subtask.id}, ${file.tool}): ${file.reason}. Save it yourself; its content:\n\n${fence}\n${shown}\n${fence}`);
    }
  }
  return parts.join("\n\n");
}
