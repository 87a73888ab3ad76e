import { createHash } from "node:crypto";
import type { AgentToolCall } from "../agents/agent-loop.js";
import { errorMessage } from "../core/errors.js";
import { LIMITS } from "../core/limits.js";
import type { MappedExecutionReport } from "../core/map-report.js";
import { type Artifact, isArgRef, type PlannedSubtask, type SubtaskResult, type MissingFiles } from "../core/plan.js";
import type { ToolRegistry } from "../tools/registry.js";
import { fileDigest } from "../tools/workspace-files.js";
import { WRITTEN_FILE_KEEP_BYTES, type WrittenFiles } from "../tools/written-files.js";

/** Tools whose `content` argument is what ends up in the file (an append adds to what was there). */
const WHOLE_CONTENT_TOOLS = new Set(["file_write"]);

function sha256(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** The bytes a `content` argument stands for, as the file tools write it. */
function contentBuffer(content: string, encoding: unknown): Buffer {
  return encoding === "base64" ? Buffer.from(content.replace(/\s+/g, ""), "base64") : Buffer.from(content, "utf8");
}

/** What a file's content was meant to be: where it came from, and its bytes. */
interface IntendedContent {
  from: string;
  bytes: Buffer;
  byReference: boolean;
}

/**
 * Records the workspace files a subtask's tool calls wrote or deleted, checked on disk right
 * after each call (size and SHA-256 through the workspace's containment), and — for a file
 * written whole from an earlier result — whether it holds that result byte for byte: the value
 * handed on by reference (a `{ref, path}` argument of a direct tool step, a handle a worker
 * passed), or, when the model typed the content itself, the one text the subtask was given by
 * reference, which it was presumably meant to write.
 */
export class ArtifactRecorder {
  readonly #byPath = new Map<string, Artifact>();
  readonly #unwritten = new Map<string, { path: string; tool: string; reason: string; content: string }>();
  #dropped = 0;

  constructor(
    private readonly tools: ToolRegistry,
    private readonly workspace: string,
    private readonly subtask: PlannedSubtask,
    /** The subtask's arguments as resolved (references replaced by values). */
    private readonly args: Record<string, unknown>,
    /** Where the bytes of each file checked are kept, by the hash recorded (for what reads them back after the run). */
    private readonly written?: WrittenFiles,
  ) {}

  /** Where an argument given by handle came from, in words: `s1 $.content`, `argument text`, `tool output 2`. */
  #handleOrigin(handle: string): string {
    if (handle.startsWith("args.")) {
      const name = handle.slice("args.".length);
      const planned = this.subtask.args[name];
      return planned && isArgRef(planned) ? `${planned.ref} ${planned.path}` : `argument ${name}`;
    }
    return handle.startsWith("results.") ? `tool output ${handle.slice("results.".length)}` : handle;
  }

  #intended(call: AgentToolCall, args: Record<string, unknown>): IntendedContent | undefined {
    if (!WHOLE_CONTENT_TOOLS.has(call.tool) || typeof args.content !== "string") return undefined;
    const bytes = contentBuffer(args.content, args.encoding);
    const handle = call.handles?.content;
    if (handle !== undefined) return { from: this.#handleOrigin(handle), bytes, byReference: true };
    if (this.subtask.tool !== undefined) {
      const planned = this.subtask.args.content;
      if (planned && isArgRef(planned)) return { from: `${planned.ref} ${planned.path}`, bytes, byReference: true };
      return undefined;
    }
    // A worker typed the content: compare it with the one text it was handed by reference, if there is one.
    const texts = Object.entries(this.subtask.args).filter(([name, arg]) => isArgRef(arg) && typeof this.args[name] === "string");
    if (texts.length !== 1) return undefined;
    const [name, arg] = texts[0] as [string, { ref: string; path: string }];
    return { from: `${arg.ref} ${arg.path}`, bytes: Buffer.from(this.args[name] as string, "utf8"), byReference: false };
  }

  /** Checks what a finished call wrote; a check that fails to read is noted on the artifact, never thrown. */
  async note(call: AgentToolCall): Promise<void> {
    const args = (typeof call.args === "object" && call.args !== null ? call.args : {}) as Record<string, unknown>;
    const written = this.tools.resources(call.tool, args)?.writes ?? [];
    if (written.length === 0) return;
    if (!call.outcome.ok) {
      // A file the call could not write keeps its content here, for the answer (seed 000 §1.5).
      if (typeof args.content === "string" && call.outcome.error.code !== "rejected") {
        for (const path of written) this.#unwritten.set(path, { path, tool: call.tool, reason: call.outcome.error.message, content: args.content });
      }
      return;
    }
    for (const path of written) this.#unwritten.delete(path);
    const intended = this.#intended(call, args);
    for (const requested of written) {
      let artifact: Artifact;
      try {
        const digest = await fileDigest(this.workspace, requested, this.written ? { keepUpTo: WRITTEN_FILE_KEEP_BYTES } : {});
        if (digest?.content) this.written?.remember(digest.sha256, digest.content);
        artifact = digest ? { path: requested, tool: call.tool, action: "written", bytes: digest.bytes, sha256: digest.sha256 } : { path: requested, tool: call.tool, action: "deleted" };
        if (digest && intended) {
          artifact.source = { from: intended.from, bytes: intended.bytes.byteLength, identical: sha256(intended.bytes) === digest.sha256, byReference: intended.byReference };
        } else if (digest && call.tool === "file_copy" && typeof args.from === "string" && requested !== args.from) {
          const original = await fileDigest(this.workspace, args.from);
          if (original) artifact.source = { from: `file ${args.from}`, bytes: original.bytes, identical: original.sha256 === digest.sha256, byReference: true };
        }
      } catch (error) {
        artifact = { path: requested, tool: call.tool, action: "written", problem: `could not be checked: ${errorMessage(error)}` };
      }
      if (!this.#byPath.has(requested) && this.#byPath.size >= LIMITS.artifactsKept) {
        this.#dropped += 1;
        continue;
      }
      // The latest call on a path is what the file holds now.
      this.#byPath.delete(requested);
      this.#byPath.set(requested, artifact);
    }
  }

  list(): Artifact[] {
    return [...this.#byPath.values()];
  }

  /** Files the subtask's calls could not write (and no later call wrote), with the content meant for them (at most five). */
  unwritten(): Array<{ path: string; tool: string; reason: string; content: string }> {
    return [...this.#unwritten.values()].slice(0, 5);
  }

  /** Files written beyond those kept. */
  get dropped(): number {
    return this.#dropped;
  }
}

/**
 * What is wrong with a file a call just wrote, or undefined: it could not be checked, it is empty
 * while its source was not, or it differs from the value handed on to it by reference. A file a
 * model typed that differs from its text source is left to the critic: the subtask may have been
 * meant to change it.
 */
export function artifactProblem(artifact: Artifact): string | undefined {
  if (artifact.problem) return `${artifact.path} ${artifact.problem}`;
  const source = artifact.source;
  if (artifact.action !== "written" || !source) return undefined;
  if (artifact.bytes === 0 && source.bytes > 0) return `${artifact.path} is empty, but its source ${source.from} has ${source.bytes} bytes`;
  if (source.byReference && !source.identical) return `${artifact.path} (${artifact.bytes} bytes) differs from its source ${source.from} (${source.bytes} bytes)`;
  return undefined;
}

/**
 * The artifacts of the settled subtasks as they are on disk now, for the critic: a file that is
 * gone or no longer holds what was written says so in `problem` — unless a later subtask wrote
 * the same path. Reading is bounded by the artifacts kept per subtask.
 */
export async function currentArtifacts(workspace: string, results: Record<string, SubtaskResult>): Promise<Record<string, Artifact[]>> {
  const latest = new Map<string, { id: string; endedAt: number }>();
  for (const [id, result] of Object.entries(results)) {
    for (const artifact of result.artifacts ?? []) {
      const seen = latest.get(artifact.path);
      const endedAt = result.endedAt ?? 0;
      if (!seen || seen.endedAt <= endedAt) latest.set(artifact.path, { id, endedAt });
    }
  }
  const current: Record<string, Artifact[]> = {};
  for (const [id, result] of Object.entries(results)) {
    if (!result.artifacts) continue;
    current[id] = await Promise.all(
      result.artifacts.map(async (artifact) => {
        if (artifact.action !== "written" || artifact.problem || latest.get(artifact.path)?.id !== id) return artifact;
        const now = await fileDigest(workspace, artifact.path).catch(() => undefined);
        if (now === undefined) return { ...artifact, problem: "was written but is no longer in the workspace" };
        if (now.sha256 !== artifact.sha256) return { ...artifact, problem: `changed after it was written (${artifact.bytes} bytes then, ${now.bytes} now)` };
        return artifact;
      }),
    );
  }
  return current;
}

/**
 * The files a map of a direct tool step was asked to make and does not hold: each failed item's
 * (it never made them), and each succeeded item's that is not in the workspace now — items kept
 * from before a crash included, which this pass did not run and so did not check. Only tools that
 * leave a path present count (a delete's target is meant to be gone).
 */
export async function missingItemFiles(
  tools: ToolRegistry,
  workspace: string,
  tool: string,
  argsOf: (index: number) => Record<string, unknown>,
  report: MappedExecutionReport,
): Promise<MissingFiles | undefined> {
  if (tools.get(tool)?.powers?.includes("workspace.delete")) return undefined;
  const paths: string[] = [];
  let items = 0;
  for (const [index, entry] of report.results.entries()) {
    const writes = tools.resources(tool, argsOf(index))?.writes ?? [];
    if (writes.length === 0) continue;
    const missing = entry.status === "error" ? writes : await absent(workspace, writes);
    if (missing.length === 0) continue;
    items += 1;
    for (const path of missing) if (paths.length < LIMITS.mapFailuresKept) paths.push(path);
  }
  return items > 0 ? { items, paths } : undefined;
}

/**
 * The files each item of a worker's map set out to write, as its calls record them (a worker
 * map's items are not declared per file: what they make is known only from what they did). An
 * item whose recorded file is not in the workspace after the map — a write that failed, an
 * outcome unknown, a file removed since — left work undone, whatever the item reported. Items
 * kept from before a crash were not run in this pass and record nothing: they are not judged here.
 * Tools that remove a path do not count (their target is meant to be gone).
 */
export class ItemWrites {
  readonly #byItem = new Map<number, Set<string>>();

  constructor(private readonly tools: ToolRegistry) {}

  note(index: number, call: AgentToolCall): void {
    if (this.tools.get(call.tool)?.powers?.includes("workspace.delete")) return;
    const args = (typeof call.args === "object" && call.args !== null ? call.args : {}) as Record<string, unknown>;
    const writes = this.tools.resources(call.tool, args)?.writes ?? [];
    if (writes.length === 0) return;
    const paths = this.#byItem.get(index) ?? new Set<string>();
    for (const path of writes) paths.add(path);
    this.#byItem.set(index, paths);
  }

  async missing(workspace: string): Promise<MissingFiles | undefined> {
    const paths: string[] = [];
    let items = 0;
    for (const index of [...this.#byItem.keys()].sort((first, second) => first - second)) {
      const missing = await absent(workspace, [...(this.#byItem.get(index) ?? [])]);
      if (missing.length === 0) continue;
      items += 1;
      for (const path of missing) if (paths.length < LIMITS.mapFailuresKept) paths.push(path);
    }
    return items > 0 ? { items, paths } : undefined;
  }
}

async function absent(workspace: string, paths: readonly string[]): Promise<string[]> {
  const missing: string[] = [];
  for (const path of paths) if ((await fileDigest(workspace, path).catch(() => undefined)) === undefined) missing.push(path);
  return missing;
}
