import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach } from "vitest";
import { z } from "zod";
import type { StoredEvent } from "../src/core/events.js";
import type { RunResult } from "../src/core/run.js";
import { type LibraryRunRequest, Troupe } from "../src/runtime/engine.js";
import { modelSetOf } from "../src/testing/model-set.js";
import { type ScriptStep, ScriptedChatModel } from "../src/testing/scripted-chat-model.js";
import { createBuiltinRegistry } from "../src/tools/builtin/index.js";
import { defineTool, type ToolDefinition } from "../src/tools/define-tool.js";
import type { ToolRegistry } from "../src/tools/registry.js";
import { waitFor } from "./wait.js";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const CLI = path.join(ROOT, "dist/src/cli/main.js");

const made: string[] = [];
afterEach(() => {
  for (const directory of made.splice(0)) rmSync(directory, { recursive: true, force: true });
});

/** A fresh temporary directory, removed after the test. */
export function tempDir(prefix = "troupe-test-"): string {
  const directory = mkdtempSync(path.join(tmpdir(), prefix));
  made.push(directory);
  return directory;
}

export interface ScriptedRun {
  model: ScriptedChatModel;
  troupe: Troupe;
  events: StoredEvent[];
  result: RunResult;
}

/** Runs a task in-process with a scripted model for every role, in temporary directories. */
export async function runScripted(
  steps: ScriptStep[],
  request: Omit<LibraryRunRequest, "task"> & { task?: string } = {},
  options: { maxWorkerSteps?: number; workspaceFiles?: Record<string, string>; extraTools?: ToolDefinition[] } = {},
): Promise<ScriptedRun> {
  const model = new ScriptedChatModel({ steps });
  const directory = tempDir();
  const workspace = path.join(directory, "workspace");
  mkdirSync(workspace, { recursive: true });
  for (const [name, content] of Object.entries(options.workspaceFiles ?? {})) writeFileSync(path.join(workspace, name), content);
  let tools: ToolRegistry | undefined;
  if (options.extraTools) {
    tools = createBuiltinRegistry();
    for (const tool of options.extraTools) tools.register(tool);
  }
  const troupe = await Troupe.create({
    models: modelSetOf(model),
    dataDir: path.join(directory, "data"),
    workspace,
    maxWorkerSteps: options.maxWorkerSteps,
    ...(tools ? { tools } : {}),
  });
  const events: StoredEvent[] = [];
  try {
    const result = await troupe.run({ task: "a test task", ...request }, { onEvent: (event) => events.push(event) });
    return { model, troupe, events, result };
  } finally {
    troupe.close();
  }
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI in a child process (`input`: what its stdin holds; otherwise it has none). */
export function runCli(args: string[], options: { cwd?: string; env?: Record<string, string | undefined>; input?: string | Buffer } = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: options.cwd ?? ROOT,
      env: { ...cleanEnv(), ...options.env },
      stdio: [options.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    });
    if (options.input !== undefined && child.stdin) {
      // The process may stop reading early (input too large): that is its answer, not a test failure.
      child.stdin.on("error", () => undefined);
      child.stdin.end(options.input);
    }
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** The built `scripted` provider as a CLI plugin (TROUPE_PROVIDER_MODULES), so `--provider scripted` works in a child process. */
export const SCRIPTED_PROVIDER_MODULE = path.join(ROOT, "dist/src/testing/scripted-provider.js");

/**
 * The parent environment without any TROUPE_ or provider settings, so tests are not steered by the
 * machine; with the scripted provider's plugin module, which the CLI loads only when asked.
 */
export function cleanEnv(): Record<string, string> {
  // The review mode the tests run with (vitest.config.ts) goes to the processes they start.
  const env: Record<string, string> = { TROUPE_PROVIDER_MODULES: SCRIPTED_PROVIDER_MODULE, ...(process.env.TROUPE_REVIEW ? { TROUPE_REVIEW: process.env.TROUPE_REVIEW } : {}) };
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined) continue;
    if (/^(TROUPE_|OPENAI_|ANTHROPIC_|OLLAMA_)/.test(key)) continue;
    env[key] = value;
  }
  return env;
}

export function eventsOf<T extends StoredEvent["type"]>(events: StoredEvent[], type: T): Array<Extract<StoredEvent, { type: T }>> {
  return events.filter((event): event is Extract<StoredEvent, { type: T }> => event.type === type);
}

/** Writes a script for the `scripted` provider (TROUPE_SCRIPT) and returns its path. */
export function writeScript(directory: string, name: string, steps: ScriptStep[]): string {
  const file = path.join(directory, name);
  writeFileSync(file, JSON.stringify(steps));
  return file;
}

/** A line of the scripted model's call log (TROUPE_SCRIPT_LOG): one at the start and one at the end of each call. */
export interface ScriptLogLine {
  phase: "start" | "end";
  role: string;
  subtask?: string;
  item?: number;
  pid: number;
}

/** The scripted model's call log; empty when no call has been logged yet. */
export function readScriptLog(file: string): ScriptLogLine[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as ScriptLogLine);
}

/** A READ tool `make_data` that returns the given (large) text, summarised by its length. */
export function largeTextTool(text: string): ToolDefinition {
  return defineTool({
    name: "make_data",
    description: "Produce a large text",
    schema: z.object({}),
    permission: "READ",
    riskLevel: "low",
    idempotent: true,
    timeoutMs: 5_000,
    execute: async () => text,
    summarize: (value) => `${(value as string).length} characters of text`,
  });
}

export interface ServedProcess {
  url: string;
  child: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr: () => string;
}

/** Starts `troupe serve --port 0` (and `args`) in a child process in `directory` and waits until it listens. */
export async function serveProcess(directory: string, env: Record<string, string> = {}, args: string[] = []): Promise<ServedProcess> {
  const child = spawn(process.execPath, [CLI, "serve", "--port", "0", ...args], {
    cwd: directory,
    env: { ...cleanEnv(), TROUPE_RATE_LIMIT: "0", TROUPE_LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
  // A cold start on a busy machine can take a while: wait for the line that says it listens (or its exit).
  const url = await waitFor(() => {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the server did not start: ${stderr}`);
    return /listening on (http:\/\/\S+) /.exec(stderr)?.[1];
  }, () => `the server to start (its stderr so far: ${stderr.slice(-2_000)})`, 25);
  return { url, child, exited, stderr: () => stderr };
}
