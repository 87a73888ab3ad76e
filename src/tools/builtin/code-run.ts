import { z } from "zod";
import { ToolError } from "../../core/errors.js";
import { truncate } from "../../core/text.js";
import { defineTool, pathArgs, type ToolDefinition } from "../define-tool.js";
import { Bubblewrap, type ProcessLimits, type SubprocessOptions } from "../sandbox/bubblewrap.js";
import { runJavaScript } from "../sandbox/js-sandbox.js";
import { openFileForRead } from "../workspace.js";
import { enforceAfterRun, scanWorkspace, workspaceQuota } from "../workspace-quota.js";
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
}

/** DESIGN.md's timeout for code is 30 s; a call may ask for up to 2 minutes. */
export const DEFAULT_CODE_RUN: CodeRunOptions = {
  timeoutMs: 30_000,
  maxTimeoutMs: 120_000,
  memoryMb: 256,
  stackKb: 1024,
  maxProcesses: 64,
  maxFileBytes: 16 * 1024 * 1024,
  maxOutputBytes: 64 * 1024,
  maxResultBytes: 8 * 1024 * 1024,
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
  })
  .refine((args) => (args.code === undefined) !== (args.path === undefined), { error: "give exactly one of code or path" });
export type CodeRunArgs = z.infer<typeof CodeRunArgs>;

export interface CodeRunValue {
  language: string;
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

/**
 * Runs code in a sandbox. A run that fails (an exception, a non-zero exit, a limit reached)
 * fails the call with what the code printed, so an agent can fix the code and try again.
 */
export function createCodeRunTool(options: Partial<CodeRunOptions> = {}): ToolDefinition<typeof CodeRunArgs> {
  const settings: CodeRunOptions = { ...DEFAULT_CODE_RUN, ...options };
  const bubblewrap = new Bubblewrap(settings);
  return defineTool({
    name: "code_run",
    description:
      "Run code in a sandbox and return its output. javascript runs in QuickJS (WebAssembly) with only `input` and `console`; " +
      "python and node run as scripts with no network, a read-only system and the workspace writable at /workspace (input as JSON on stdin).",
    schema: CodeRunArgs,
    permission: "EXECUTE",
    riskLevel: "medium",
    idempotent: false,
    // The run has its own wall clock; this bounds the call around it.
    timeoutMs: settings.maxTimeoutMs + 5_000,
    // The script it runs; what the script itself writes cannot be known beforehand.
    resources: (args) => ({ reads: pathArgs(args, "path") }),
    async execute(args, context): Promise<CodeRunValue> {
      const timeoutMs = Math.min(args.timeoutMs ?? settings.timeoutMs, settings.maxTimeoutMs);
      let source = args.code;
      if (source === undefined) {
        const file = await openFileForRead(context.workspace, args.path as string);
        try {
          // Read from the descriptor, bounded: the file may grow after it was measured.
          const { bytes, larger } = await readBounded(file.handle, MAX_SCRIPT_BYTES);
          if (larger) throw new ToolError("too_large", `${file.relative} is larger than 512 KiB`);
          source = bytes.toString("utf8");
        } finally {
          await file.handle.close();
        }
      }
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
        return { language: "javascript", result: result.value, stdout: result.output, stderr: "", exitCode: 0, durationMs: result.durationMs, truncated: result.truncated };
      }
      const limits: ProcessLimits = {
        timeoutMs,
        memoryMb: settings.memoryMb,
        maxProcesses: settings.maxProcesses,
        maxFileBytes: settings.maxFileBytes,
        maxOutputBytes: settings.maxOutputBytes,
      };
      // What the workspace held before, so a run that leaves it over its quota can be rolled back.
      const before = (await scanWorkspace(context.workspace, workspaceQuota(context.workspace).maxFiles * 2 + 1)).entries;
      const result = await bubblewrap.runScript(args.language, source, context.workspace, args.input, limits, context.signal);
      await enforceAfterRun(context.workspace, before);
      const printed = [result.stdout && `stdout:\n${tail(result.stdout)}`, result.stderr && `stderr:\n${tail(result.stderr)}`].filter(Boolean).join("\n");
      if (result.timedOut) throw new ToolError("timeout", `the script was killed after ${timeoutMs} ms${printed ? `\n${printed}` : ""}`);
      if (result.exitCode !== 0) {
        const how = result.signal ? `was killed by ${result.signal}` : `exited with code ${result.exitCode}`;
        throw new ToolError("code_error", `the script ${how}${printed ? `\n${printed}` : ""}`);
      }
      return { language: args.language, stdout: result.stdout, stderr: result.stderr, exitCode: 0, durationMs: result.durationMs, truncated: result.truncated };
    },
    summarize: (value) => {
      const run = value as CodeRunValue;
      const shown = run.result !== undefined && run.result !== null ? ` → ${truncate(JSON.stringify(run.result), 200)}` : "";
      const printed = run.stdout.trim() ? `: ${truncate(run.stdout.trim().replace(/\s+/g, " "), 200)}` : "";
      return `${run.language} ran in ${run.durationMs} ms${shown}${printed}`;
    },
  });
}
