/**
 * The commands the docs show, read from the docs and run as written (test/docs-commands.int.test.ts
 * on a clone, test/package.int.test.ts from the installed package), so the docs cannot drift.
 *
 * What is read: every ```sh block of README.md's five-minute tour and of docs/cli.md. A block is
 * a synopsis, not run, when a line of it shows a form rather than a command: `[…]` for optional
 * parts, or a `<…>` placeholder other than the two filled from earlier output — `<runId>` (the
 * last run id printed) and `<task_id>` (the last task id). Every other block runs line by line,
 * in order, in one folder per document: each line through bash, its trailing `# comment` read
 * for the exit code it expects (`exit 3`; 0 otherwise).
 *
 * Lines that need more than a shell are marked in the docs by an HTML comment just before their
 * block, `<!-- commands: KIND PREFIX; … -->`, naming the line by how it starts:
 *   - `server npx troupe serve`: started in the background (on a free port: `localhost:8003` in
 *     the lines after it means that port) and stopped at the end of the block;
 *   - `host npx troupe mcp`: an MCP host's own client (the SDK's) starts it and lists its tools;
 *   - `person npx troupe chat | compute 2+3 | /quit`: what a person types, one line each.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { cpSync, mkdirSync, readFileSync, symlinkSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { expect } from "vitest";
import { cleanEnv, ROOT, tempDir } from "./helpers.js";

export type Special = { kind: "server" | "host"; prefix: string } | { kind: "person"; prefix: string; input: string[] };

export interface DocCommand {
  /** The command as the docs write it (continuation lines joined, the comment kept apart). */
  line: string;
  comment: string;
  expectedExit: number;
  special?: Special;
  /** Where it is: `README.md:97`. */
  where: string;
}

export interface DocBlock {
  where: string;
  commands: DocCommand[];
}

/** The placeholders a command may hold: filled from what the commands before it printed. */
const FILLED = ["<runId>", "<task_id>"];

/** Splits a shell line from its trailing comment (a `#` outside quotes, after a space). */
function splitComment(line: string): { command: string; comment: string } {
  let quote: string | undefined;
  for (let index = 0; index < line.length; index += 1) {
    const character = line[index];
    if (quote) {
      if (character === quote) quote = undefined;
    } else if (character === "'" || character === '"') quote = character;
    else if (character === "#" && (index === 0 || /\s/.test(line[index - 1] ?? ""))) return { command: line.slice(0, index).trimEnd(), comment: line.slice(index + 1).trim() };
  }
  return { command: line.trimEnd(), comment: "" };
}

/** Whether a command line is a form (a synopsis), not a command to run. */
export function isSynopsis(command: string): boolean {
  const unquoted = command.replace(/'[^']*'|"[^"]*"/g, "''");
  if (/\[[^\]]*\]/.test(unquoted)) return true;
  return (unquoted.match(/<[^>\s]+>/g) ?? []).some((placeholder) => !FILLED.includes(placeholder));
}

function parseMarker(text: string): Special[] {
  return text
    .split(";")
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part): Special => {
      const match = /^(server|host|person)\s+(.+)$/.exec(part);
      if (!match) throw new Error(`a commands marker says "${part}": expected server|host|person followed by the command's start`);
      const [, kind, rest] = match as unknown as [string, "server" | "host" | "person", string];
      if (kind !== "person") return { kind, prefix: rest.trim() };
      const [prefix, ...input] = rest.split("|").map((piece) => piece.trim());
      return { kind, prefix: prefix ?? "", input };
    });
}

/** The ```sh blocks of a Markdown text (from `from` to the next heading of the same level, when given), with their markers. */
export function docBlocks(file: string, section?: string): DocBlock[] {
  const name = path.basename(file);
  const lines = readFileSync(file, "utf8").split("\n");
  let start = 0;
  let end = lines.length;
  if (section !== undefined) {
    start = lines.findIndex((line) => line.trim() === section);
    if (start < 0) throw new Error(`${name} has no section "${section}"`);
    const level = /^#+/.exec(section)?.[0] ?? "##";
    const next = lines.findIndex((line, index) => index > start && new RegExp(`^#{1,${level.length}} `).test(line));
    if (next >= 0) end = next;
  }
  const blocks: DocBlock[] = [];
  for (let index = start; index < end; index += 1) {
    if (lines[index]?.trim() !== "```sh") continue;
    let marker: Special[] = [];
    for (let back = index - 1; back >= start && back >= index - 3; back -= 1) {
      const found = /^<!-- commands: (.*) -->$/.exec(lines[back]?.trim() ?? "");
      if (found) marker = parseMarker(found[1] ?? "");
      if (found || (lines[back]?.trim() ?? "") !== "") break;
    }
    const first = index + 1;
    let close = first;
    while (close < end && lines[close]?.trim() !== "```") close += 1;
    const commands: DocCommand[] = [];
    let synopsis = false;
    let pending = "";
    let pendingAt = first;
    for (let at = first; at < close; at += 1) {
      const raw = lines[at] ?? "";
      if (pending === "") pendingAt = at;
      if (raw.trimEnd().endsWith("\\")) {
        pending += `${raw.trimEnd().slice(0, -1)} `;
        continue;
      }
      const whole = `${pending}${raw}`;
      pending = "";
      const { command, comment } = splitComment(whole);
      if (command.trim() === "") continue;
      if (isSynopsis(command)) synopsis = true;
      const exit = /\bexit (\d+)\b/.exec(comment);
      const special = marker.find((entry) => command.trim().startsWith(entry.prefix));
      commands.push({ line: command.trim(), comment, expectedExit: exit ? Number(exit[1]) : 0, where: `${name}:${pendingAt + 1}`, ...(special ? { special } : {}) });
    }
    if (!synopsis && commands.length > 0) blocks.push({ where: `${name}:${first}`, commands });
    for (const entry of marker) {
      if (!commands.some((command) => command.special === entry)) throw new Error(`${name}:${index}: the commands marker names "${entry.prefix}", which no line of the block starts with`);
    }
    index = close;
  }
  return blocks;
}

export interface Ran {
  command: DocCommand;
  /** The line as run (placeholders filled, the server's port put in). */
  ran: string;
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunContext {
  cwd: string;
  env: Record<string, string>;
  /** Ceiling for one command; one that runs longer fails. */
  timeoutMs?: number;
}

function runShell(line: string, context: RunContext, input?: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", line], { cwd: context.cwd, env: context.env, stdio: ["pipe", "pipe", "pipe"], detached: true });
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdin?.on("error", () => undefined);
    child.stdin?.end(input ?? "");
    const ceiling = setTimeout(() => {
      if (child.pid) process.kill(-child.pid, "SIGKILL");
      stderr += `\n(the test stopped it after ${context.timeoutMs ?? 120_000} ms)`;
    }, context.timeoutMs ?? 120_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(ceiling);
      resolve({ code, stdout, stderr });
    });
  });
}

/** A server a block started, stopped when the block ends. */
interface Served {
  child: ChildProcess;
  port: string;
  stderr: () => string;
}

async function startServer(line: string, context: RunContext): Promise<Served> {
  const child = spawn("bash", ["-c", `exec ${line} --port 0`], { cwd: context.cwd, env: context.env, stdio: ["ignore", "ignore", "pipe"], detached: true });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const deadline = Date.now() + (context.timeoutMs ?? 120_000);
  for (;;) {
    const match = /listening on http:\/\/127\.0\.0\.1:(\d+) /.exec(stderr);
    if (match) return { child, port: match[1] as string, stderr: () => stderr };
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`${line} did not start: ${stderr}`);
    await sleep(50);
  }
}

async function stopServer(served: Served): Promise<void> {
  if (served.child.exitCode !== null || !served.child.pid) return;
  const exited = new Promise((resolve) => served.child.once("exit", resolve));
  process.kill(-served.child.pid, "SIGTERM");
  await exited;
}

/** An MCP host's client starting the command over stdio, listing its tools. */
async function hostCommand(line: string, context: RunContext): Promise<{ code: number; stdout: string; stderr: string }> {
  const transport = new StdioClientTransport({ command: "bash", args: ["-c", `exec ${line}`], cwd: context.cwd, env: context.env, stderr: "pipe" });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const client = new Client({ name: "docs-commands", version: "1.0.0" });
  try {
    await client.connect(transport);
    const tools = (await client.listTools()).tools.map((tool) => tool.name);
    return { code: 0, stdout: tools.join("\n"), stderr };
  } finally {
    await client.close();
  }
}

/** The placeholders of a line filled from what the earlier commands printed. */
function fill(line: string, printed: string): string {
  let filled = line;
  if (filled.includes("<runId>")) {
    const ids = [...printed.matchAll(/\brun-[0-9a-f]{8}-[0-9a-f-]{27}\b/g)];
    const last = ids.at(-1)?.[0];
    if (!last) throw new Error(`${line}: no run id printed before it to fill <runId> with`);
    filled = filled.replaceAll("<runId>", last);
  }
  if (filled.includes("<task_id>")) {
    const ids = [...printed.matchAll(/"task_id"\s*:\s*"([^"]+)"/g)];
    const last = ids.at(-1)?.[1];
    if (!last) throw new Error(`${line}: no task_id printed before it to fill <task_id> with`);
    filled = filled.replaceAll("<task_id>", last);
  }
  return filled;
}

/** Runs a block's commands in order, as its marker says; every result, in order. */
export async function runBlock(block: DocBlock, context: RunContext, printed: { text: string }): Promise<Ran[]> {
  const results: Ran[] = [];
  let served: Served | undefined;
  try {
    for (const command of block.commands) {
      let line = fill(command.line, printed.text);
      if (served) line = line.replace(/\b(localhost|127\.0\.0\.1):8003\b/g, `127.0.0.1:${served.port}`);
      let outcome: { code: number | null; stdout: string; stderr: string };
      if (command.special?.kind === "server") {
        served = await startServer(line, context);
        outcome = { code: 0, stdout: "", stderr: served.stderr() };
      } else if (command.special?.kind === "host") {
        outcome = await hostCommand(line, context);
      } else if (command.special?.kind === "person") {
        outcome = await runShell(line, context, `${command.special.input.join("\n")}\n`);
      } else {
        outcome = await runShell(line, context);
      }
      printed.text += `${outcome.stdout}\n${outcome.stderr}\n`;
      results.push({ command, ran: line, ...outcome });
    }
  } finally {
    if (served) {
      await stopServer(served);
      const last = results.find((result) => result.command.special?.kind === "server");
      if (last) last.stderr = served.stderr();
    }
  }
  return results;
}

/** Output that has no place in what a user sees: warnings, deprecations, stack traces. */
export const SURPRISES = /\bwarn(?:ing)?\b|deprecat|experimental|\bat .+:\d+:\d+\)?\s*$|unhandled|EPIPE|New LangChain/im;

/**
 * A folder where `npx troupe` is this checkout's, as in a clone after `npm ci`: its bin linked in
 * node_modules/.bin, and the repository's example files beside it (the tour names them).
 */
export function cloneFolder(): string {
  const directory = path.join(tempDir("troupe-docs-"), "a clone");
  mkdirSync(path.join(directory, "node_modules", ".bin"), { recursive: true });
  symlinkSync(path.join(ROOT, "bin", "troupe.js"), path.join(directory, "node_modules", ".bin", "troupe"));
  cpSync(path.join(ROOT, "examples", "evals"), path.join(directory, "examples", "evals"), { recursive: true });
  return directory;
}

/** The environment a reader's shell has: no provider configured, this Node first on PATH. */
export function readerEnv(): Record<string, string> {
  const env = cleanEnv();
  delete env.TROUPE_PROVIDER_MODULES;
  return { ...env, PATH: `${path.dirname(process.execPath)}:${env.PATH ?? ""}`, npm_config_update_notifier: "false" };
}

/** Each result as one line a failure message can show. */
function described(result: Ran): string {
  return `${result.command.where} \`${result.ran}\` → exit ${result.code} (expected ${result.command.expectedExit})\n${result.stderr.trim().split("\n").slice(-6).join("\n")}`;
}

/** Runs every block of a document in one folder, in order; what each command did. */
export async function runDocument(blocks: DocBlock[], cwd: string, env: Record<string, string>): Promise<Ran[]> {
  const printed = { text: "" };
  const results: Ran[] = [];
  for (const block of blocks) results.push(...(await runBlock(block, { cwd, env, timeoutMs: 180_000 }, printed)));
  return results;
}

/** What a reader must not meet: a command that exits otherwise than the docs say, or output with warnings or stack traces. */
export function expectAsDocumented(results: Ran[]): void {
  const wrong = results.filter((result) => result.code !== result.command.expectedExit || SURPRISES.test(result.stderr));
  expect(wrong.map(described)).toEqual([]);
}
