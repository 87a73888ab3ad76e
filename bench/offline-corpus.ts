/**
 * The offline corpus (`test/offline-corpus/cases.json`): tasks the offline model must carry out
 * through the CLI — planner, workers, tools, submit_result, as with a real model — each checked
 * for its exit code and status, the exact values of the subtasks that answer (read from the run's
 * stash in troupe.db), and the exact files it leaves (byte for byte; the other starting files
 * untouched, nothing else written). `test/offline-corpus.int.test.ts` runs it case by case; `npm run
 * bench` reports its pass rate.
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { isDeepStrictEqual } from "node:util";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import pMap from "p-map";
import { z } from "zod";
import { withTempDir } from "./support.js";

/** A file as the corpus writes it: its text, a text repeated to an exact size, or a text repeated a number of times between two others. */
const FileSpec = z.union([
  z.string(),
  z.object({ repeat: z.string().min(1), bytes: z.number().int().positive() }).strict(),
  z.object({ before: z.string().default(""), repeat: z.string().min(1), times: z.number().int().positive(), after: z.string().default("") }).strict(),
]);
type FileSpec = z.infer<typeof FileSpec>;

const ExpectedFile = z.union([z.string(), z.object({ sameAs: z.string() })]);

export const CorpusCase = z
  .object({
    task: z.string().min(1),
    /** A named starting workspace, and files added to it. */
    workspace: z.string().optional(),
    add: z.record(z.string(), FileSpec).default({}),
    /** completed (exit 0) or failed (exit 1). */
    expect: z.enum(["completed", "failed"]).default("completed"),
    /** The run pauses for a tool approval (exit 3) and completes on `troupe resume --approve`. */
    approve: z.boolean().default(false),
    /** Subtask id → its exact stashed value. */
    results: z.record(z.string(), z.unknown()).default({}),
    /** Files the run leaves, exactly. */
    files: z.record(z.string(), ExpectedFile).default({}),
    /** Starting files the run removes. */
    absent: z.array(z.string()).default([]),
    answerIncludes: z.array(z.string()).default([]),
    /** A troupe.config.json for the run (written where it runs), e.g. a grant of a tool no role has by default. */
    config: z.record(z.string(), z.unknown()).optional(),
  })
  .strict();
export type CorpusCase = z.infer<typeof CorpusCase>;

export const Corpus = z.object({
  $comment: z.string().optional(),
  workspaces: z.record(z.string(), z.record(z.string(), FileSpec)),
  /** Files put beside the workspace, where troupe runs (the `knowledge/` folder search reads). */
  knowledge: z.record(z.string(), z.string()).default({}),
  cases: z.array(CorpusCase).min(1),
});
export type Corpus = z.infer<typeof Corpus>;

/** The repository root: the nearest folder above this file with a package.json (from bench/ or dist/bench/). */
export function repositoryRoot(): string {
  let directory = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(directory, "package.json"))) {
    const parent = path.dirname(directory);
    if (parent === directory) throw new Error("no package.json above bench/");
    directory = parent;
  }
  return directory;
}

export function loadCorpus(file = path.join(repositoryRoot(), "test", "offline-corpus", "cases.json")): Corpus {
  return Corpus.parse(JSON.parse(readFileSync(file, "utf8")));
}

/** The bytes of a file spec: a repeated text is cut at a character boundary and padded with spaces to the exact size. */
export function fileBytes(spec: FileSpec): Buffer {
  if (typeof spec === "string") return Buffer.from(spec, "utf8");
  if ("times" in spec) return Buffer.from(`${spec.before}${spec.repeat.repeat(spec.times)}${spec.after}`, "utf8");
  let text = "";
  while (Buffer.byteLength(text) < spec.bytes) text += spec.repeat;
  const characters = [...text];
  while (Buffer.byteLength(characters.join("")) > spec.bytes) characters.pop();
  const cut = Buffer.from(characters.join(""), "utf8");
  return Buffer.concat([cut, Buffer.alloc(spec.bytes - cut.length, " ")]);
}

export interface CaseOutcome {
  task: string;
  passed: boolean;
  /** What differed from the expectation, in words; empty when it passed. */
  problems: string[];
  durationMs: number;
}

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment without TROUPE_ or provider settings, so the offline model answers whatever the machine has set. */
function offlineEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !/^(TROUPE_|OPENAI_|ANTHROPIC_|OLLAMA_)/.test(key)) env[key] = value;
  }
  return env;
}

function runCli(cli: string, args: string[], cwd: string, timeoutMs: number): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...args], { cwd, env: offlineEnv(), stdio: ["ignore", "pipe", "pipe"], timeout: timeoutMs, killSignal: "SIGKILL" });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** Every file under a folder, relative to it, with its bytes. */
function filesUnder(root: string): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  const walk = (relative: string): void => {
    for (const entry of readdirSync(path.join(root, relative), { withFileTypes: true })) {
      const name = relative ? `${relative}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(name);
      else if (entry.isFile()) files.set(name, readFileSync(path.join(root, name)));
    }
  };
  if (existsSync(root)) walk("");
  return files;
}

function writeFiles(root: string, files: Record<string, FileSpec>): Map<string, Buffer> {
  const written = new Map<string, Buffer>();
  for (const [name, spec] of Object.entries(files)) {
    const bytes = fileBytes(spec);
    mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    writeFileSync(path.join(root, name), bytes);
    written.set(name, bytes);
  }
  return written;
}

const RunOutput = z.object({
  runId: z.string(),
  status: z.string(),
  answer: z.string().nullable().optional(),
  interrupt: z.object({ kind: z.string() }).passthrough().optional(),
  plan: z.array(z.object({ id: z.string(), status: z.string(), error: z.string().optional() }).passthrough()),
});
type RunOutput = z.infer<typeof RunOutput>;

function parseOutput(run: CliRun, problems: string[]): RunOutput | undefined {
  try {
    return RunOutput.parse(JSON.parse(run.stdout));
  } catch (error) {
    problems.push(`stdout is not the run's JSON (${(error as Error).message.split("\n")[0]}); stderr: ${run.stderr.trim().split("\n").slice(-3).join(" | ")}`);
    return undefined;
  }
}

function shown(value: unknown): string {
  const text = JSON.stringify(value);
  return text === undefined ? "nothing" : text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

/** Runs one case in fresh directories and says what, if anything, differs from what it expects. */
export async function runCorpusCase(corpus: Corpus, testCase: CorpusCase, options: { cli: string; timeoutMs?: number }): Promise<CaseOutcome> {
  const started = performance.now();
  const timeoutMs = options.timeoutMs ?? 120_000;
  const problems = await withTempDir("troupe-corpus-", async (directory) => {
    const problems: string[] = [];
    const workspace = path.join(directory, "workspace");
    const dataDir = path.join(directory, "data");
    mkdirSync(workspace, { recursive: true });
    writeFiles(directory, corpus.knowledge);
    if (testCase.config) writeFiles(directory, { "troupe.config.json": JSON.stringify(testCase.config) });
    const base = testCase.workspace === undefined ? {} : corpus.workspaces[testCase.workspace];
    if (base === undefined) return [`no workspace named ${testCase.workspace}`];
    const seeded = writeFiles(workspace, { ...base, ...testCase.add });
    const common = ["--json", "--workspace", workspace, "--data-dir", dataDir];
    let run = await runCli(options.cli, ["run", testCase.task, ...common, "--thread", "corpus"], directory, timeoutMs);
    if (testCase.approve) {
      const paused = parseOutput(run, problems);
      if (run.code !== 3 || paused?.status !== "interrupted" || paused.interrupt?.kind !== "tool-approval") {
        problems.push(`expected a pause for a tool approval (exit 3, interrupted), got exit ${run.code}, ${paused?.status ?? "no status"}`);
        return problems;
      }
      run = await runCli(options.cli, ["resume", "corpus", "--approve", ...common], directory, timeoutMs);
    }
    const output = parseOutput(run, problems);
    const wantedCode = testCase.expect === "completed" ? 0 : 1;
    if (run.code !== wantedCode) problems.push(`exit code ${run.code}, expected ${wantedCode}`);
    if (output && output.status !== testCase.expect) {
      const failed = output.plan.filter((subtask) => subtask.status !== "done").map((subtask) => `${subtask.id} ${subtask.status}${subtask.error ? `: ${subtask.error}` : ""}`);
      problems.push(`status ${output.status}, expected ${testCase.expect}${failed.length > 0 ? ` (${failed.join("; ")})` : ""}`);
    }
    for (const phrase of testCase.answerIncludes) if (!(output?.answer ?? "").includes(phrase)) problems.push(`the answer does not say "${phrase}"`);
    if (output && Object.keys(testCase.results).length > 0) {
      const database = new Database(path.join(dataDir, "troupe.db"), { readonly: true });
      try {
        const read = database.prepare<[string, string], { value: string }>("SELECT value FROM stash WHERE run_id = ? AND subtask_id = ?");
        for (const [id, expected] of Object.entries(testCase.results)) {
          const row = read.get(output.runId, id);
          const actual = row === undefined ? undefined : (JSON.parse(row.value) as unknown);
          if (!isDeepStrictEqual(actual, expected)) problems.push(`${id} is ${shown(actual)}, expected ${shown(expected)}`);
        }
      } finally {
        database.close();
      }
    }
    const after = filesUnder(workspace);
    for (const [name, expected] of Object.entries(testCase.files)) {
      const wanted = typeof expected === "string" ? Buffer.from(expected, "utf8") : seeded.get(expected.sameAs);
      const actual = after.get(name);
      if (wanted === undefined) problems.push(`${name}: no starting file ${typeof expected === "string" ? "" : expected.sameAs} to compare with`);
      else if (actual === undefined) problems.push(`${name} was not written`);
      else if (!actual.equals(wanted)) problems.push(`${name} holds ${actual.length} bytes ${shown(actual.toString("utf8"))}, expected ${wanted.length} bytes ${shown(wanted.toString("utf8"))}`);
    }
    for (const name of testCase.absent) if (after.has(name)) problems.push(`${name} is still there`);
    for (const [name, bytes] of seeded) {
      if (testCase.absent.includes(name) || name in testCase.files) continue;
      const actual = after.get(name);
      if (actual === undefined) problems.push(`${name} was removed`);
      else if (!actual.equals(bytes)) problems.push(`${name} was changed`);
    }
    for (const name of after.keys()) if (!seeded.has(name) && !(name in testCase.files)) problems.push(`${name} was written, but the case expects no such file`);
    return problems;
  });
  return { task: testCase.task, passed: problems.length === 0, problems, durationMs: performance.now() - started };
}

export interface OfflineCorpusReport {
  total: number;
  passed: number;
  /** Cases passed / total, 0–1. */
  passRate: number;
  failures: Array<{ task: string; problems: string[] }>;
  durationMs: number;
  concurrency: number;
  target: { passRate: number; met: boolean };
}

/** Runs every case of the corpus, a few CLI processes at a time. */
export async function runOfflineCorpus(options: { concurrency?: number; cli?: string; onCase?: (outcome: CaseOutcome) => void } = {}): Promise<OfflineCorpusReport> {
  const corpus = loadCorpus();
  const cli = options.cli ?? path.join(repositoryRoot(), "dist", "src", "cli", "main.js");
  const concurrency = options.concurrency ?? 3;
  const started = performance.now();
  const outcomes = await pMap(
    corpus.cases,
    async (testCase) => {
      const outcome = await runCorpusCase(corpus, testCase, { cli });
      options.onCase?.(outcome);
      return outcome;
    },
    { concurrency },
  );
  const passed = outcomes.filter((outcome) => outcome.passed).length;
  const passRate = passed / outcomes.length;
  return {
    total: outcomes.length,
    passed,
    passRate,
    failures: outcomes.filter((outcome) => !outcome.passed).map(({ task, problems }) => ({ task, problems })),
    durationMs: performance.now() - started,
    concurrency,
    target: { passRate: 1, met: passRate === 1 },
  };
}
