/**
 * Crash trials: a run whose workers append to files (a non-idempotent tool), whose worker runs a
 * python script that appends to a file (code_run, staged), and whose map of 12 items each runs
 * such a script, is killed with SIGKILL at a random moment, then resumed (again and again if a
 * resume is killed too) until it ends. Each trial counts the runs that completed, the duplicate
 * side effects (a line appended twice), the missing ones, and compares the audit rows with the
 * tool calls in the trace. The scripted provider drives the workers, so every process gives the
 * same answers; its steps may be used again, as a worker that runs again after a crash asks again.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { STRUCTURED_OUTPUT } from "../src/core/prompt-protocol.js";
import { SCRIPTED_PROVIDER_MODULE } from "./support.js";

const run = promisify(execFile);

const CHAINED = 4;
const SIDE = 3;
/** Items of the map whose every item runs a script that appends to its own file. */
const ITEMS = 12;
/** The kill lands somewhere in the first this many ms of a process's run (the whole run takes about 2 s here). */
const KILL_WINDOW_MS = 2_500;

const appendScript = (file: string, line: string): string => `import os\nos.makedirs(os.path.dirname('/workspace/${file}') or '/workspace', exist_ok=True)\nopen('/workspace/${file}', 'a').write('${line}\\n')\nprint('appended')`;

/**
 * The script: s1–s4 append in turn to chain.log (one path, so they run in order), s5–s7 each append
 * to their own file, s8's worker runs a python script appending to code.log, and s9 maps 12 such
 * scripts, each appending to items/i<k>.log.
 */
function script(): unknown[] {
  const subtasks = [
    ...Array.from({ length: CHAINED }, (_, index) => ({ id: `s${index + 1}`, label: `Append line ${index + 1} to chain.log`, agent: "execute", dependsOn: [], args: {}, writes: ["chain.log"] })),
    ...Array.from({ length: SIDE }, (_, index) => ({ id: `s${CHAINED + index + 1}`, label: `Append to side${index + 1}.log`, agent: "execute", dependsOn: [], args: {}, writes: [`side${index + 1}.log`] })),
    { id: "s8", label: "Run the script that appends to code.log", agent: "code", dependsOn: [], args: {}, writes: ["code.log"] },
    {
      id: "s9",
      label: "Run each item's script",
      agent: "code",
      tool: "code_run",
      mapOver: "code",
      dependsOn: [],
      args: { language: { value: "python" }, code: { value: Array.from({ length: ITEMS }, (_, index) => appendScript(`items/i${index + 1}.log`, `item ${index + 1}`)) } },
      writes: ["items/"],
    },
  ];
  const worker = (id: string, tool: string, args: Record<string, unknown>, done: string, delayMs: number) => [
    { role: "worker", subtask: id, contains: "## Subtask", delayMs, times: 50, toolCalls: [{ name: tool, args }] },
    { role: "worker", subtask: id, contains: done, delayMs, times: 50, toolCalls: [{ name: STRUCTURED_OUTPUT.result, args: { status: "done", result: `${id} done` } }] },
  ];
  return [
    { role: "planner", times: 50, toolCalls: [{ name: STRUCTURED_OUTPUT.plan, args: { subtasks } }] },
    ...subtasks.slice(0, CHAINED + SIDE).flatMap((subtask, index) =>
      index < CHAINED
        ? worker(subtask.id, "file_append", { path: "chain.log", content: `line ${index + 1}\n` }, "appended to", 40)
        : worker(subtask.id, "file_append", { path: `side${index - CHAINED + 1}.log`, content: `side ${index - CHAINED + 1}\n` }, "appended to", 60),
    ),
    ...worker("s8", "code_run", { language: "python", code: appendScript("code.log", "code") }, "appended", 40),
    { role: "critic", times: 50, toolCalls: [{ name: STRUCTURED_OUTPUT.review, args: { scores: { accuracy: 1, completeness: 1, relevance: 1, logic: 1 }, issues: [], redo: [], replan: false } }] },
    { role: "synthesizer", times: 50, content: "appended" },
  ];
}

export interface CrashTrial {
  /** Milliseconds after its start each process was killed. */
  kills: number[];
  completed: boolean;
  /** Lines appended more than once, or missing, across all files. */
  duplicates: number;
  missing: number;
  auditRows: number;
  traceCalls: number;
  /** How the last process ended when the run did not complete. */
  ending?: string;
}

export interface CrashTrialsReport {
  trials: CrashTrial[];
  completed: number;
  /** Runs completed, of all trials. */
  completionRate: number;
  duplicates: number;
  missing: number;
  /**
   * Trials with fewer audit rows than tool calls in the trace: a call that ran without its row.
   * (More rows is expected: a map's items kept from before a crash are in the audit, and not
   * traced again by the pass that resumed.)
   */
  auditMismatches: number;
  /** Met with no duplicate side effect, every run completed and no line missing. */
  target: { duplicates: 0; missing: 0; completionRate: 1; met: boolean };
}

function spawnCli(cli: string, args: string[], directory: string, env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, [cli, ...args], { cwd: directory, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
}

/**
 * Runs a process until it exits, or kills it (SIGKILL) `killAfterMs` after its run started (its
 * `run …` / `resuming …` line on stderr); whether it was killed.
 */
async function runUntil(child: ChildProcess, killAfterMs: number | undefined): Promise<{ killed: boolean; code: number | null; stderr: string }> {
  let stderr = "";
  let timer: NodeJS.Timeout | undefined;
  let killed = false;
  child.stdout?.resume();
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
    if (killAfterMs !== undefined && timer === undefined && /(?:^|\n)\S*(?:run|resuming) run-/.test(stderr)) {
      timer = setTimeout(() => {
        killed = child.kill("SIGKILL");
      }, killAfterMs);
    }
  });
  const code = await new Promise<number | null>((resolve) => child.on("exit", (exitCode) => resolve(exitCode)));
  clearTimeout(timer);
  return { killed, code, stderr };
}

/** One trial in `directory`: kill the run, then its resumes, at random moments, until a process ends on its own. */
export async function crashTrial(cli: string, directory: string, random: () => number, maxKills = 3): Promise<CrashTrial> {
  const workspace = path.join(directory, "workspace");
  mkdirSync(workspace, { recursive: true });
  const scriptFile = path.join(directory, "script.json");
  writeFileSync(scriptFile, JSON.stringify(script()));
  const env = { TROUPE_PROVIDER: "scripted", TROUPE_PROVIDER_MODULES: SCRIPTED_PROVIDER_MODULE, TROUPE_SCRIPT: scriptFile };
  // Without --json: the progress on stderr says when the run starts, which is when the kill clock starts.
  const base = ["--workspace", workspace];
  const kills: number[] = [];
  /** How the last process ended, when not completed. */
  let ending = "";
  for (let attempt = 0; attempt <= maxKills + 5; attempt += 1) {
    const args = attempt === 0 ? ["run", "append the lines", "--thread", "trial", ...base] : ["resume", "trial", ...base];
    // Kill somewhere in the run, then let the last resume finish.
    const killAfter = kills.length < maxKills && random() < 0.85 ? Math.round(random() * KILL_WINDOW_MS) : undefined;
    const { killed, code, stderr } = await runUntil(spawnCli(cli, args, directory, env), killAfter);
    if (!killed) {
      if (code !== 0) ending = `exit ${code}: ${stderr.trim().split("\n").slice(-2).join(" | ")}`;
      break;
    }
    kills.push(killAfter as number);
  }
  let completed = false;
  let traceCalls = 0;
  try {
    const listed = JSON.parse((await run(process.execPath, [cli, "runs", "list", "--json"], { cwd: directory })).stdout) as Array<{ id: string }>;
    const shown = await run(process.execPath, [cli, "runs", "show", listed[0]?.id ?? "", "--json"], { cwd: directory, maxBuffer: 64 * 1024 * 1024 });
    const view = JSON.parse(shown.stdout) as { status: string; trace?: { toolCalls: unknown[] } };
    completed = view.status === "completed";
    traceCalls = view.trace?.toolCalls.length ?? 0;
  } catch {
    // no run, or none that can be shown: counted as not completed
  }
  const expected = new Map<string, string[]>([["chain.log", Array.from({ length: CHAINED }, (_, index) => `line ${index + 1}`)]]);
  for (let index = 1; index <= SIDE; index += 1) expected.set(`side${index}.log`, [`side ${index}`]);
  expected.set("code.log", ["code"]);
  for (let index = 1; index <= ITEMS; index += 1) expected.set(`items/i${index}.log`, [`item ${index}`]);
  let duplicates = 0;
  let missing = 0;
  for (const [file, lines] of expected) {
    const found = existsSync(path.join(workspace, file)) ? readFileSync(path.join(workspace, file), "utf8").split("\n").filter(Boolean) : [];
    for (const line of lines) {
      const count = found.filter((item) => item === line).length;
      if (count === 0) missing += 1;
      duplicates += Math.max(0, count - 1);
    }
  }
  const { stdout } = await run(process.execPath, [cli, "audit", "list", "--json", "--limit", "1000"], { cwd: directory, env: { ...process.env } });
  const auditRows = (JSON.parse(stdout) as Array<{ tool: string }>).filter((row) => row.tool === "file_append" || row.tool === "code_run").length;
  return { kills, completed, duplicates, missing, auditRows, traceCalls, ...(ending ? { ending } : {}) };
}

/** `trials` crash trials, each in its own temporary folder. */
export async function measureCrashTrials(cli: string, trials: number, makeDirectory: <T>(body: (directory: string) => Promise<T>) => Promise<T>): Promise<CrashTrialsReport> {
  let state = 20_261_123;
  const random = (): number => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
  const results: CrashTrial[] = [];
  for (let index = 0; index < trials; index += 1) {
    results.push(await makeDirectory((directory) => crashTrial(cli, directory, random)));
    await sleep(10);
  }
  const sum = (pick: (trial: CrashTrial) => number): number => results.reduce((total, trial) => total + pick(trial), 0);
  const duplicates = sum((trial) => trial.duplicates);
  const completed = results.filter((trial) => trial.completed).length;
  const missing = sum((trial) => trial.missing);
  return {
    trials: results,
    completed,
    completionRate: results.length > 0 ? completed / results.length : 0,
    duplicates,
    missing,
    auditMismatches: results.filter((trial) => trial.auditRows < trial.traceCalls).length,
    target: { duplicates: 0, missing: 0, completionRate: 1, met: duplicates === 0 && missing === 0 && completed === results.length },
  };
}
