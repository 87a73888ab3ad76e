/**
 * The example eval suite (`examples/evals/offline.jsonl`) through `troupe eval` on the offline
 * model, as a user runs it: cases the offline model solves and cases it must fail honestly
 * (expect.status failed), each checked against its expectations. Reports the pass rate.
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { repositoryRoot } from "./offline-corpus.js";
import { withTempDir } from "./support.js";

export interface EvalBenchReport {
  suite: string;
  total: number;
  passed: number;
  /** Cases passed / total, 0–1. */
  passRate: number;
  exitCode: number | null;
  failures: Array<{ id: string; failures: string[] }>;
  modelCalls: number;
  tokens: number;
  concurrency: number;
  /** The whole command, process start included. */
  durationMs: number;
  target: { passRate: number; met: boolean };
}

interface EvalOutput {
  total: number;
  passed: number;
  passRate: number;
  cases: Array<{ id: string; passed: boolean; failures: Array<{ expectation: string; message: string }> }>;
  metrics: { llmCalls: number; promptTokens: number; completionTokens: number };
}

/** The environment without TROUPE_ or provider settings, so the offline model answers whatever the machine has set. */
function offlineEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !/^(TROUPE_|OPENAI_|ANTHROPIC_|OLLAMA_)/.test(key)) env[key] = value;
  }
  return env;
}

export async function runEvalBench(options: { cli?: string; concurrency?: number } = {}): Promise<EvalBenchReport> {
  const root = repositoryRoot();
  const cli = options.cli ?? path.join(root, "dist", "src", "cli", "main.js");
  const suite = path.join(root, "examples", "evals", "offline.jsonl");
  const concurrency = options.concurrency ?? 4;
  return withTempDir("troupe-bench-eval-", async (directory) => {
    const started = performance.now();
    const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, [cli, "eval", suite, "--json", "--concurrency", String(concurrency), "--data-dir", path.join(directory, "data")], { cwd: directory, env: offlineEnv(), stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      let errors = "";
      child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
      child.stderr.on("data", (chunk: Buffer) => (errors += chunk.toString()));
      child.on("error", reject);
      child.on("close", (exit) => resolve({ code: exit, stdout: out, stderr: errors }));
    });
    const durationMs = performance.now() - started;
    let output: EvalOutput;
    try {
      output = JSON.parse(stdout) as EvalOutput;
    } catch {
      throw new Error(`troupe eval printed no results (exit ${code}): ${stderr.trim().split("\n").slice(-3).join(" | ")}`);
    }
    return {
      suite: path.relative(root, suite),
      total: output.total,
      passed: output.passed,
      passRate: output.passRate,
      exitCode: code,
      failures: output.cases.filter((item) => !item.passed).map((item) => ({ id: item.id, failures: item.failures.map((failure) => `${failure.expectation}: ${failure.message}`) })),
      modelCalls: output.metrics.llmCalls,
      tokens: output.metrics.promptTokens + output.metrics.completionTokens,
      concurrency,
      durationMs,
      target: { passRate: 1, met: output.passRate === 1 && code === 0 },
    };
  });
}
