import { createHash } from "node:crypto";
import { open, readFile, rm } from "node:fs/promises";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { z } from "zod";
import { ensureDirectory } from "../../core/user-files.js";
import { isTroupeError, ToolError } from "../../core/errors.js";
import { openDirectory, openFileForRead } from "../workspace.js";
import { deleteWorkspaceEntry, writeFileAtomic, writeWorkspaceFile } from "../workspace-files.js";
import { type EntryInfo, forgetUsage, scanWorkspace, workspaceQuota } from "../workspace-quota.js";

/**
 * A script that may change the workspace runs on a copy of it (the stage), and what it changed is
 * applied to the workspace afterwards from a journal. The workspace itself is never touched while
 * a script runs, so a crash in the middle leaves it as it was (the call runs again), and a crash
 * while the changes are applied is finished from the journal: a sandboxed run's effect is never
 * unknown. The copy costs the workspace's size per run (bounded by `maxStageBytes`).
 */

export const StagedChange = z.discriminatedUnion("action", [
  z.object({ action: z.literal("write"), path: z.string(), bytes: z.number(), sha256: z.string(), created: z.boolean() }),
  z.object({ action: z.literal("delete"), path: z.string(), directory: z.boolean() }),
  z.object({ action: z.literal("mkdir"), path: z.string() }),
]);
export type StagedChange = z.infer<typeof StagedChange>;

/** What a finished run left to apply, and the call's value once it is: kept until the call's audit row is complete. */
export const StageJournal = z.object({ changes: z.array(StagedChange), value: z.unknown(), applied: z.boolean() });
export type StageJournal = z.infer<typeof StageJournal>;

const TREE = "tree";
const JOURNAL = "journal.json";

/** The stage of one call: a folder named by the call (its id, when it has one). */
export class Stage {
  readonly directory: string;

  constructor(root: string, key: string) {
    this.directory = path.join(root, createHash("sha256").update(key).digest("hex").slice(0, 32));
  }

  get tree(): string {
    return path.join(this.directory, TREE);
  }

  /**
   * Copies the workspace's regular files and folders into the stage (symlinks, FIFOs and devices
   * are left out, as every reader of the workspace leaves them) and returns the copy's manifest.
   */
  async copyFrom(workspace: string, maxBytes: number): Promise<Map<string, EntryInfo>> {
    await rm(this.directory, { recursive: true, force: true });
    await ensureDirectory(this.tree);
    const quota = workspaceQuota(workspace);
    const scan = await scanWorkspace(workspace, quota.maxFiles + 1);
    if (scan.bytes > maxBytes) {
      throw new ToolError("stage_too_large", `the workspace holds ${scan.bytes} bytes, more than the ${maxBytes} a script that writes may be staged with (tools.sandbox.maxStageBytes)`);
    }
    const paths = [...scan.entries.keys()].sort((a, b) => a.split("/").length - b.split("/").length || a.localeCompare(b));
    for (const relative of paths) {
      const entry = scan.entries.get(relative) as EntryInfo;
      const target = path.join(this.tree, relative);
      if (entry.directory) {
        await ensureDirectory(target);
        continue;
      }
      let file;
      try {
        file = await openFileForRead(workspace, relative);
      } catch {
        continue; // a symlink, a FIFO, a device, or gone meanwhile: not staged
      }
      try {
        const output = await open(target, "wx", 0o644);
        await pipeline(file.handle.createReadStream({ autoClose: false }), output.createWriteStream());
      } finally {
        await file.handle.close();
      }
    }
    return (await scanWorkspace(this.tree, quota.maxFiles * 2 + 1)).entries;
  }

  /** What the script changed in the stage, against the manifest taken before it ran. */
  async changes(before: Map<string, EntryInfo>, maxFiles: number): Promise<{ changes: StagedChange[]; bytes: number; entries: number }> {
    const after = await scanWorkspace(this.tree, maxFiles * 2 + 1);
    const changes: StagedChange[] = [];
    const byDepth = (a: string, b: string): number => a.split("/").length - b.split("/").length || a.localeCompare(b);
    for (const relative of [...after.entries.keys()].sort(byDepth)) {
      const now = after.entries.get(relative) as EntryInfo;
      const then = before.get(relative);
      if (now.directory) {
        if (!then?.directory) changes.push({ action: "mkdir", path: relative });
        continue;
      }
      if (then && !then.directory && then.ino === now.ino && then.size === now.size && then.mtimeMs === now.mtimeMs) continue;
      const digest = createHash("sha256").update(await readFile(path.join(this.tree, relative))).digest("hex");
      changes.push({ action: "write", path: relative, bytes: now.size, sha256: digest, created: then === undefined });
    }
    // Deepest first, so a folder's files go before it.
    for (const relative of [...before.keys()].sort((a, b) => -byDepth(a, b))) {
      if (!after.entries.has(relative)) changes.push({ action: "delete", path: relative, directory: (before.get(relative) as EntryInfo).directory });
    }
    return { changes, bytes: after.bytes, entries: after.entries.size };
  }

  async writeJournal(journal: StageJournal): Promise<void> {
    await writeFileAtomic(path.join(this.directory, JOURNAL), JSON.stringify(journal));
  }

  async readJournal(): Promise<StageJournal | undefined> {
    let text: string;
    try {
      text = await readFile(path.join(this.directory, JOURNAL), "utf8");
    } catch {
      return undefined;
    }
    const parsed = StageJournal.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  }

  /**
   * Applies the journal to the workspace. Every step can be repeated (a file is written whole
   * from the stage, a missing one is not deleted again), so a crash part way is finished by
   * applying it again. Then the journal is marked applied.
   */
  async apply(workspace: string, journal: StageJournal, maxFileBytes: number): Promise<void> {
    for (const change of journal.changes) {
      if (change.action === "mkdir") {
        await mkdirInWorkspace(workspace, change.path);
      } else if (change.action === "write") {
        const bytes = await readFile(path.join(this.tree, change.path));
        await writeWorkspaceFile(workspace, change.path, bytes, { overwrite: true, maxBytes: maxFileBytes });
      } else {
        await deleteWorkspaceEntry(workspace, change.path, { recursive: true, maxEntries: 100_000 }).catch((error: unknown) => {
          if (!(isTroupeError(error) && error.code === "not_found")) throw error;
        });
      }
    }
    forgetUsage(workspace);
    await this.writeJournal({ ...journal, applied: true });
    // The copy is no longer needed; the journal stays until the call's row is complete.
    await rm(this.tree, { recursive: true, force: true });
  }

  async remove(): Promise<void> {
    await rm(this.directory, { recursive: true, force: true });
  }
}

/** A folder of the workspace (and its parents), made through its containment. */
async function mkdirInWorkspace(workspace: string, relative: string): Promise<void> {
  const directory = await openDirectory(workspace, relative.split("/"), { create: true, requested: relative });
  await directory.close();
}
