import { createHash } from "node:crypto";
import { applyPatch, createTwoFilesPatch, parsePatch } from "diff";
import { z } from "zod";
import { ToolError } from "../../core/errors.js";
import { describeLabel, joinLabels } from "../../core/provenance.js";
import { defineTool, pathArgs, type ToolContext } from "../define-tool.js";
import { argumentLabel } from "../trust-policy.js";
import { afterWrite, beforeWrite, judgePath, type WriteLabel } from "./file-labelling.js";
import { writeWorkspaceFile } from "../workspace-files.js";
import { readContainedFile } from "../workspace-read.js";
import { FILE_LIMITS } from "./file-limits.js";

/** The largest file propose_edit changes (a diff of anything bigger is no longer something a person reads). */
const MAX_EDIT_BYTES = 1024 * 1024;

export const ProposeEditArgs = z
  .object({
    path: z.string().min(1).max(1_000).describe("the workspace file to change (created when it does not exist)"),
    patch: z.string().max(MAX_EDIT_BYTES).optional().describe("the change as a unified diff of this one file (--- a/… +++ b/… @@ … @@ hunks)"),
    content: z.string().max(MAX_EDIT_BYTES).optional().describe("or: the file's whole new content (the diff is made from it)"),
  })
  .strict()
  .refine((args) => (args.patch === undefined) !== (args.content === undefined), { error: "give the change as patch (a unified diff) or as content, not both" });
export type ProposeEditArgs = z.infer<typeof ProposeEditArgs>;

export interface ProposedEdit {
  path: string;
  /** The change as a unified diff against the file as it is. */
  diff: string;
  added: number;
  removed: number;
  /** SHA-256 of the file the change applies to (absent: a new file). */
  base?: string;
  after: string;
}

/** The file as it is now: its text, or undefined when it does not exist. */
async function current(path: string, context: Pick<ToolContext, "workspace">): Promise<string | undefined> {
  try {
    const file = await readContainedFile(context.workspace, path, MAX_EDIT_BYTES);
    const text = new TextDecoder("utf-8", { fatal: true }).decode(file.bytes);
    return text;
  } catch (error) {
    if ((error as { code?: string }).code === "not_found") return undefined;
    if (error instanceof TypeError) throw new ToolError("not_text", `"${path}" is not UTF-8 text; propose_edit changes text files`, { path });
    throw error;
  }
}

/** What the change makes of the file, as a diff, or why it cannot be made (a patch that does not apply). */
export async function proposeEdit(args: ProposeEditArgs, context: Pick<ToolContext, "workspace">): Promise<ProposedEdit> {
  const before = await current(args.path, context);
  let after: string;
  if (args.patch !== undefined) {
    let parsed: ReturnType<typeof parsePatch>;
    try {
      parsed = parsePatch(args.patch);
    } catch (error) {
      throw new ToolError("invalid_patch", `the patch is not a unified diff: ${(error as Error).message}`, { path: args.path });
    }
    if (parsed.length !== 1 || (parsed[0]?.hunks.length ?? 0) === 0) throw new ToolError("invalid_patch", `the patch must change exactly one file with at least one hunk (it has ${parsed.length} file(s))`, { path: args.path });
    const applied = applyPatch(before ?? "", parsed[0] as never);
    if (applied === false) throw new ToolError("patch_does_not_apply", `the patch does not apply to ${args.path} as it is now (its context lines differ); read the file and propose the change again`, { path: args.path });
    after = applied;
  } else {
    after = args.content as string;
  }
  if (Buffer.byteLength(after, "utf8") > FILE_LIMITS.writeMaxBytes) throw new ToolError("too_large", `the changed file would be larger than ${FILE_LIMITS.writeMaxBytes} bytes`, { path: args.path });
  const diff = createTwoFilesPatch(`a/${args.path}`, `b/${args.path}`, before ?? "", after, before === undefined ? "(new file)" : "", "", { context: 3 });
  const lines = diff.split("\n");
  return {
    path: args.path,
    diff,
    added: lines.filter((line) => line.startsWith("+") && !line.startsWith("+++")).length,
    removed: lines.filter((line) => line.startsWith("-") && !line.startsWith("---")).length,
    ...(before !== undefined ? { base: createHash("sha256").update(before, "utf8").digest("hex") } : {}),
    after,
  };
}

/**
 * propose_edit (seed 003): a change to a workspace file, shown as a unified diff and applied only
 * when a person approves it. It is high-risk, so an agent's call waits for approval with the diff
 * in the request (`preview`); the change is made again against the file as it is at that moment,
 * so a file changed meanwhile is refused rather than overwritten.
 */
export const proposeEditTool = defineTool({
  name: "propose_edit",
  description: "Propose a change to a workspace text file, as a unified diff (patch) or the new content: a person sees the diff and the change is applied only when they approve it.",
  schema: ProposeEditArgs,
  permission: "WRITE",
  riskLevel: "high",
  idempotent: false,
  timeoutMs: 5_000,
  resources: (args) => ({ writes: pathArgs(args, "path") }),
  async preview(args, context) {
    const proposed = await proposeEdit(args, context);
    return { path: proposed.path, diff: proposed.diff, added: proposed.added, removed: proposed.removed, ...(proposed.base ? { base: proposed.base } : {}) };
  },
  async execute(args, context) {
    // The edited file holds what was there and what the change brings: it keeps both labels.
    const before = await judgePath(context, args.path);
    const change = argumentLabel(args.patch !== undefined ? "patch" : "content", args.patch ?? args.content, context.provenance);
    const label = joinLabels(before?.label.trust === "untrusted" ? before.label : undefined, change);
    const about: WriteLabel = { label, tool: "propose_edit", reason: `edited${context.subtaskId ? ` by subtask ${context.subtaskId}` : ""}; it holds ${describeLabel(label)} data` };
    const proposed = await proposeEdit(args, context);
    const written = await writeWorkspaceFile(context.workspace, args.path, proposed.after, { maxBytes: FILE_LIMITS.writeMaxBytes, beforeWrite: beforeWrite(context, () => about) });
    await afterWrite(context, about, written);
    return { path: written.relative, applied: true, diff: proposed.diff, added: proposed.added, removed: proposed.removed, bytes: written.bytes, created: written.created };
  },
  summarize: (value) => {
    const edit = value as { path: string; added: number; removed: number };
    return `applied to ${edit.path}: +${edit.added} −${edit.removed} lines`;
  },
});
