import { randomUUID } from "node:crypto";
import { tmpdir } from "node:os";
import path from "node:path";
import { z } from "zod";
import { ToolError } from "../../core/errors.js";
import { truncate } from "../../core/text.js";
import { joinLabels, type Label, LabelledValue, sourceOf, TRUSTED, untrustedLabel } from "../../core/provenance.js";
import { defineTool, pathArgs, type ToolContext, type ToolDefinition } from "../define-tool.js";
import { inputsLabel } from "../trust-policy.js";
import { judgeOpen, keepScriptLabels } from "./file-labelling.js";
import { OPERATOR } from "../permissions.js";
import { Bubblewrap, type ProcessLimits, type SubprocessOptions } from "../sandbox/bubblewrap.js";
import { runJavaScript } from "../sandbox/js-sandbox.js";
import { Stage, type StagedChange } from "../sandbox/staged-run.js";
import type { ToolPower } from "../tool-powers.js";
import { openFileForRead } from "../workspace.js";
import { workspaceQuota } from "../workspace-quota.js";
import { readBounded } from "../workspace-read.js";

const MAX_SCRIPT_BYTES = 512 * 1024;

/** Limits of code_run; the config file can change them (`tools.sandbox`). */
export interface CodeRunOptions extends SubprocessOptions {
  /** Default and longest run, in ms. */
  timeoutMs: number;
  maxTimeoutMs: number;
  memoryMb: number;
  /** QuickJS's stack, in KiB. */
  stackKb: number;
  maxProcesses: number;
  maxFileBytes: number;
  maxOutputBytes: number;
  /** The largest value a javascript run may return, as JSON in UTF-8 bytes. */
  maxResultBytes: number;
  /** Where a script that may write runs on a copy of the workspace (see `Stage`). */
  stagingDir: string;
  /** The largest workspace a script that writes may be staged with, in bytes. */
  maxStageBytes: number;
}

/** The documented timeout for code is 30 s (docs/tools.md); a call may ask for up to 2 minutes. */
export const DEFAULT_CODE_RUN: CodeRunOptions = {
  timeoutMs: 30_000,
  maxTimeoutMs: 120_000,
  memoryMb: 256,
  stackKb: 1024,
  maxProcesses: 64,
  maxFileBytes: 16 * 1024 * 1024,
  maxOutputBytes: 64 * 1024,
  maxResultBytes: 8 * 1024 * 1024,
  stagingDir: path.join(tmpdir(), "troupe-stages"),
  maxStageBytes: 256 * 1024 * 1024,
};

export const CodeRunArgs = z
  .object({
    language: z
      .enum(["javascript", "python", "node"])
      .default("javascript")
      .describe("javascript: in-process QuickJS sandbox (no I/O); python / node: a script in a bubblewrap sandbox with the workspace at /workspace"),
    code: z.string().max(512 * 1024).optional().describe("the source to run"),
    path: z.string().max(1_000).optional().describe("or: a script in the workspace to run"),
    input: z.unknown().optional().describe("a JSON value given to the code: `input` in javascript, JSON on stdin for python and node"),
    timeoutMs: z.number().int().positive().optional().describe("wall-clock limit in ms"),
    writes: z
      .boolean()
      .optional()
      .describe("python / node: let the script change or delete any workspace file (a person approves it first); without it the workspace is read-only, except the paths its subtask declares in writes"),
  })
  .refine((args) => (args.code === undefined) !== (args.path === undefined), { error: "give exactly one of code or path" });
export type CodeRunArgs = z.infer<typeof CodeRunArgs>;

export interface CodeRunValue {
  language: string;
  /** The workspace files and folders the script changed (applied after it finished). */
  changed?: Array<{ path: string; action: StagedChange["action"] }>;
  /** The value of the last expression (javascript). */
  result?: unknown;
  stdout: string;
  stderr: string;
  exitCode: number;
  durationMs: number;
  truncated: boolean;
}

function tail(text: string, max = 1_500): string {
  return text.length <= max ? text : `…${text.slice(text.length - max)}`;
}

/** Which workspace changes a script's run may make. */
type WriteScope = { kind: "none" } | { kind: "declared"; paths: readonly string[] } | { kind: "all" };

/**
 * A person calling directly (the operator, or no agent) may change anything; an agent with
 * `writes: true` too (that call is high-risk and waits for approval); an agent whose subtask
 * declares the paths it writes may write (not delete) those; otherwise the workspace is read-only.
 */
function writeScope(args: CodeRunArgs, context: ToolContext): WriteScope {
  if (args.language === "javascript") return { kind: "none" };
  if (context.agent === undefined || context.agent === OPERATOR || args.writes === true) return { kind: "all" };
  if (context.writes && context.writes.length > 0) return { kind: "declared", paths: context.writes };
  return { kind: "none" };
}

function powersOf(args: CodeRunArgs, context: ToolContext): ToolPower[] {
  if (args.language === "javascript") return ["code.isolated"];
  const scope = writeScope(args, context);
  if (scope.kind === "all") return ["code.workspace-write"];
  return scope.kind === "declared" ? ["code.workspace-read", "workspace.write"] : ["code.workspace-read"];
}

/** Whether a declared path covers a changed one: the same path, or a folder above it. */
function covers(declared: readonly string[], changed: string): boolean {
  return declared.some((entry) => {
    const folder = entry.replace(/\/+$/, "");
    return changed === folder || changed.startsWith(`${folder}/`);
  });
}

/** Why a staged run's changes may not be applied in this scope, or undefined. */
function scopeProblem(scope: WriteScope, changes: readonly StagedChange[]): string | undefined {
  if (scope.kind === "all") return undefined;
  const deleted = changes.filter((change) => change.action === "delete").map((change) => change.path);
  if (deleted.length > 0) return `the script deleted ${deleted.slice(0, 5).join(", ")}${deleted.length > 5 ? ", …" : ""}: deleting needs writes: true, which a person approves`;
  if (scope.kind !== "declared") return undefined;
  const outside = changes.filter((change) => change.action === "write" && !covers(scope.paths, change.path)).map((change) => change.path);
  if (outside.length === 0) return undefined;
  return `the script wrote ${outside.slice(0, 5).join(", ")}${outside.length > 5 ? ", …" : ""}, outside the paths its subtask declares (${scope.paths.join(", ")}); declare them in the plan, or run it with writes: true, which a person approves`;
}

/**
 * Runs code in a sandbox. A run that fails (an exception, a non-zero exit, a limit reached)
 * fails the call with what the code printed, so an agent can fix the code and try again.
 *
 * JavaScript sees no files. A script that may not write gets the workspace read-only; one that
 * may runs on a staged copy, and what it changed is applied afterwards — only when it succeeded,
 * stayed within its quota and its scope — from a journal that a crash cannot leave half-known.
 */
export function createCodeRunTool(options: Partial<CodeRunOptions> = {}): ToolDefinition<typeof CodeRunArgs> {
  const settings: CodeRunOptions = { ...DEFAULT_CODE_RUN, ...options };
  const bubblewrap = new Bubblewrap(settings);
  const stagingRoot = settings.stagingDir;
  return defineTool({
    name: "code_run",
    description:
      "Run code in a sandbox and return its output. javascript runs in QuickJS (WebAssembly) with only `input` and `console`; " +
      "python and node run as scripts with no network, a read-only system and the workspace at /workspace (input as JSON on stdin): read-only unless the subtask declares the paths it writes, or writes: true.",
    schema: CodeRunArgs,
    permission: "EXECUTE",
    powers: ["code.isolated", "code.workspace-read", "code.workspace-write"],
    powersFor: powersOf,
    idempotent: false,
    // The run has its own wall clock; this bounds the call around it.
    timeoutMs: settings.maxTimeoutMs + 5_000,
    // The script it runs; what the script itself writes cannot be known beforehand.
    resources: (args) => ({ reads: pathArgs(args, "path") }),
    effect: {
      // A run that may write is staged under its call id: settling finds its journal there.
      capture: async (args, context) => ({ targets: writeScope(args, context).kind === "none" ? [] : [{ path: "(staged workspace)", before: { stage: context.callId }, after: null }] }),
      check: async () => "other",
      derive: () => undefined,
      async settle(_args, effect, context) {
        const key = (effect.targets[0]?.before as { stage?: string } | undefined)?.stage;
        // Nothing it could change (a read-only workspace, javascript): running it again is safe.
        if (key === undefined) return { state: "before" };
        const stage = new Stage(stagingRoot, key);
        const journal = await stage.readJournal();
        if (!journal) {
          // It never finished: the workspace was not touched.
          await stage.remove();
          return { state: "before" };
        }
        if (!journal.applied) await stage.apply(context.workspace, journal, settings.maxFileBytes);
        return { state: "after", value: journal.value };
      },
      async release(effect) {
        const key = (effect.targets[0]?.before as { stage?: string } | undefined)?.stage;
        if (key !== undefined) await new Stage(stagingRoot, key).remove();
      },
    },
    async execute(args, context): Promise<CodeRunValue | LabelledValue> {
      const timeoutMs = Math.min(args.timeoutMs ?? settings.timeoutMs, settings.maxTimeoutMs);
      let source = args.code;
      // What the run's value comes from besides its inputs: the script file, and for python and node every file the script can read.
      let own: Label = TRUSTED;
      if (source === undefined) {
        const file = await openFileForRead(context.workspace, args.path as string);
        try {
          // Read from the descriptor, bounded: the file may grow after it was measured.
          const { bytes, larger } = await readBounded(file.handle, MAX_SCRIPT_BYTES);
          if (larger) throw new ToolError("too_large", `${file.relative} is larger than 512 KiB`);
          source = bytes.toString("utf8");
          own = (await judgeOpen(context, file.handle, file.relative, bytes))?.label ?? TRUSTED;
        } finally {
          await file.handle.close();
        }
      }
      if (args.language !== "javascript" && (await context.fileTrust?.mayHoldUntrusted(context.workspace))) {
        own = joinLabels(own, untrustedLabel([sourceOf("workspace", `a ${args.language} script in a workspace that holds untrusted files`)]));
      }
      const labelled = (value: CodeRunValue): CodeRunValue | LabelledValue => (context.fileTrust ? new LabelledValue(value, own) : value);
      if (args.language === "javascript") {
        const result = await runJavaScript(
          source,
          args.input,
          { timeoutMs, memoryBytes: settings.memoryMb * 1024 * 1024, stackBytes: settings.stackKb * 1024, maxOutputChars: settings.maxOutputBytes, maxResultBytes: settings.maxResultBytes },
          context.signal,
        );
        if (!result.ok) {
          const code = result.reason === "error" ? "code_error" : result.reason;
          throw new ToolError(code, `${result.error}${result.output ? `\noutput:\n${tail(result.output)}` : ""}`);
        }
        return labelled({ language: "javascript", result: result.value, stdout: result.output, stderr: "", exitCode: 0, durationMs: result.durationMs, truncated: result.truncated });
      }
      const limits: ProcessLimits = {
        timeoutMs,
        memoryMb: settings.memoryMb,
        maxProcesses: settings.maxProcesses,
        maxFileBytes: settings.maxFileBytes,
        maxOutputBytes: settings.maxOutputBytes,
      };
      const scope = writeScope(args, context);
      const finished = (result: Awaited<ReturnType<Bubblewrap["runScript"]>>): CodeRunValue => {
        const printed = [result.stdout && `stdout:\n${tail(result.stdout)}`, result.stderr && `stderr:\n${tail(result.stderr)}`].filter(Boolean).join("\n");
        if (result.timedOut) throw new ToolError("timeout", `the script was killed after ${timeoutMs} ms${printed ? `\n${printed}` : ""}`);
        if (result.exitCode !== 0) {
          const how = result.signal ? `was killed by ${result.signal}` : `exited with code ${result.exitCode}`;
          throw new ToolError("code_error", `the script ${how}${printed ? `\n${printed}` : ""}`);
        }
        return { language: args.language, stdout: result.stdout, stderr: result.stderr, exitCode: 0, durationMs: result.durationMs, truncated: result.truncated };
      };
      if (scope.kind === "none") {
        return labelled(finished(await bubblewrap.runScript(args.language, source, context.workspace, args.input, limits, context.signal, { readOnly: true })));
      }
      const stage = new Stage(stagingRoot, context.callId ?? randomUUID());
      let journaled = false;
      try {
        const before = await stage.copyFrom(context.workspace, settings.maxStageBytes);
        const value = finished(await bubblewrap.runScript(args.language, source, stage.tree, args.input, limits, context.signal));
        const quota = workspaceQuota(context.workspace);
        const { changes, bytes, entries } = await stage.changes(before, quota.maxFiles);
        if (bytes > quota.maxBytes || entries > quota.maxFiles) {
          const over = bytes > quota.maxBytes ? `${bytes} bytes (quota ${quota.maxBytes})` : `${entries} files and folders (quota ${quota.maxFiles})`;
          throw new ToolError("quota_exceeded", `the script would leave the workspace holding ${over}, over its quota (tools.quota in the config file); nothing it wrote was applied`, { ...quota, bytes, files: entries });
        }
        const problem = scopeProblem(scope, changes);
        if (problem) throw new ToolError("undeclared_writes", `${problem}; nothing it wrote was applied`, { changed: changes.map((change) => change.path) });
        const done: CodeRunValue = changes.length > 0 ? { ...value, changed: changes.map((change) => ({ path: change.path, action: change.action })) } : value;
        const journal = { changes, value: done, applied: false };
        // What it wrote holds what the call held: its label is kept before the files exist (untrusted) and after (their names, and trusted ones).
        const written = joinLabels(own, inputsLabel(context.provenance));
        await keepScriptLabels(context, written, changes, "before");
        await stage.writeJournal(journal);
        journaled = true;
        await stage.apply(context.workspace, journal, settings.maxFileBytes);
        await keepScriptLabels(context, written, changes, "after");
        // A call without an id is never settled again: its journal can go now.
        if (context.callId === undefined) await stage.remove();
        return labelled(done);
      } finally {
        if (!journaled) await stage.remove();
      }
    },
    summarize: (value) => {
      const run = value as CodeRunValue;
      const shown = run.result !== undefined && run.result !== null ? ` → ${truncate(JSON.stringify(run.result), 200)}` : "";
      const printed = run.stdout.trim() ? `: ${truncate(run.stdout.trim().replace(/\s+/g, " "), 200)}` : "";
      const changed = run.changed && run.changed.length > 0 ? `; changed ${run.changed.length} workspace entr${run.changed.length === 1 ? "y" : "ies"}` : "";
      return `${run.language} ran in ${run.durationMs} ms${shown}${printed}${changed}`;
    },
  });
}
