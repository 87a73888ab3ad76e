import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { RunResult } from "../src/core/run.js";
import { CLI, cleanEnv, runCli, tempDir } from "./helpers.js";
import { envFor, fakeAnthropic, fakeOpenAI, WORKER_TASK } from "./provider-helpers.js";

const TASK = "compute 17% of 2,340 and save it to result.txt";

describe("troupe run against real provider clients (fake servers on loopback)", () => {
  it("completes against the fake OpenAI server, with usage and cost in the metrics", async () => {
    const openai = await fakeOpenAI();
    const directory = tempDir();
    const result = await runCli(["run", TASK, "--json"], { cwd: directory, env: envFor({ openai }, { TROUPE_PROVIDER: "openai:gpt-4o-mini" }) });
    expect(result.stderr).not.toContain("offline rule-based model");
    expect(result.code).toBe(0);
    const output = JSON.parse(result.stdout) as RunResult;
    expect(output.stopReason).toBe("completed");
    expect(readFileSync(path.join(directory, "workspace", "result.txt"), "utf8")).toBe("397.8");
    expect(output.metrics.promptTokens).toBe(openai.reportedUsage().input);
    expect(output.metrics.costUsd).toBeGreaterThan(0);
    expect(openai.requests.length).toBe(output.metrics.llmCalls);
  });

  it("completes against the fake Anthropic server", async () => {
    const anthropic = await fakeAnthropic();
    const directory = tempDir();
    const result = await runCli(["run", TASK, "--json"], { cwd: directory, env: envFor({ anthropic }, { TROUPE_PROVIDER: "anthropic" }) });
    expect(result.code).toBe(0);
    const output = JSON.parse(result.stdout) as RunResult;
    expect(output.stopReason).toBe("completed");
    expect(output.trace.models.planner).toBe("anthropic:claude-haiku-4-5");
    expect(readFileSync(path.join(directory, "workspace", "result.txt"), "utf8")).toBe("397.8");
  });

  it("streams the answer to stdout while the model writes it, and prints it once", async () => {
    const openai = await fakeOpenAI();
    let release = (): void => undefined;
    openai.inject({ kind: "hold", release: new Promise<void>((resolve) => (release = resolve)) }, { role: "synthesizer" });
    const directory = tempDir();
    // review: always has the synthesizer write the answer (else the plan's template answers it, and nothing streams).
    const child = spawn(process.execPath, [CLI, "run", TASK, "--review", "always"], { cwd: directory, env: { ...cleanEnv(), ...envFor({ openai }, { TROUPE_PROVIDER: "openai" }) }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    let streamedBeforeRelease = "";
    const firstPart = new Promise<void>((resolve) => {
      child.stdout.on("data", (chunk: Buffer) => {
        stdout += chunk.toString();
        // The held stream has sent its first half: it must be on stdout before the rest is sent.
        if (stdout.includes("Answered offline") && !streamedBeforeRelease) {
          streamedBeforeRelease = stdout;
          resolve();
        }
      });
    });
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const closed = new Promise<number | null>((resolve) => child.on("close", resolve));
    await firstPart;
    expect(streamedBeforeRelease).not.toContain("decision trace");
    release();
    expect(await closed).toBe(0);
    expect(stderr).toContain("answer ready");
    const answerLine = "Compute 17% of 2,340: 17% of 2,340 = 397.8";
    expect(stdout.split(answerLine)).toHaveLength(2);
    expect(stdout.indexOf(answerLine)).toBeLessThan(stdout.indexOf("decision trace"));
    expect(stdout).toMatch(/cost \$0\.\d{4}/);
  });

  it("shows retries on stderr and stops on a budget flag with the best answer so far", async () => {
    const openai = await fakeOpenAI();
    openai.inject({ kind: "status", status: 429, retryAfter: "0" }, { role: "planner" });
    const directory = tempDir();
    const result = await runCli(["run", WORKER_TASK, "--max-model-calls", "2"], { cwd: directory, env: envFor({ openai }, { TROUPE_PROVIDER: "openai" }) });
    // Stopped with work not done: exit 1, and the trace names what did not finish.
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/not done: s3 failed \(budget\)/);
    expect(result.stderr).toMatch(/planner openai:gpt-4\.1-mini: HTTP 429; retrying in/);
    expect(result.stderr).toMatch(/budget exhausted \(model calls: 2 of 2\)/);
    expect(result.stdout).toMatch(/budget ran out/);
    expect(result.stdout).toMatch(/stop reason: budget_exhausted/);
  });

  it("reads per-role models from troupe.config.ts", async () => {
    const openai = await fakeOpenAI();
    const directory = tempDir();
    writeFileSync(
      path.join(directory, "troupe.config.ts"),
      'type Config = { provider: string; roles: Record<string, string> };\nconst config: Config = { provider: "openai:gpt-4o-mini", roles: { planner: "gpt-4.1" } };\nexport default config;\n',
    );
    const result = await runCli(["run", WORKER_TASK, "--json"], { cwd: directory, env: envFor({ openai }) });
    expect(result.code).toBe(0);
    expect(openai.requestsFor("planner")[0]?.body.model).toBe("gpt-4.1");
    expect(openai.requestsFor("execute")[0]?.body.model).toBe("gpt-4o-mini");
  });
});

describe("provider configuration errors exit 2 with a clear message and write nothing", () => {
  const cases: Array<{ name: string; args?: string[]; env: Record<string, string>; config?: string; message: RegExp }> = [
    { name: "missing key", env: { TROUPE_PROVIDER: "openai" }, message: /^troupe: provider "openai" needs OPENAI_API_KEY; set it in the environment\n$/ },
    { name: "missing key of a fallback", env: { TROUPE_FALLBACKS: "anthropic" }, message: /^troupe: provider "anthropic" needs ANTHROPIC_API_KEY/ },
    { name: "unknown provider", args: ["--provider", "gemini:pro"], env: {}, message: /^troupe: unknown provider "gemini" \(known: offline, openai, anthropic, ollama, openai-compatible, scripted\)\n$/ },
    { name: "unknown provider in a role", env: { TROUPE_PLANNER_MODEL: "mistral:large" }, message: /unknown provider "mistral"/ },
    {
      name: "malformed base URL",
      env: { TROUPE_PROVIDER: "openai-compatible:llama", OPENAI_COMPATIBLE_BASE_URL: "localhost:8000/v1" },
      message: /^troupe: OPENAI_COMPATIBLE_BASE_URL must be an http:\/\/ or https:\/\/ URL, not "localhost:8000\/v1"\n$/,
    },
    { name: "unparseable base URL", env: { TROUPE_PROVIDER: "openai", OPENAI_API_KEY: "k", OPENAI_BASE_URL: "http://" }, message: /^troupe: OPENAI_BASE_URL is not a valid URL: "http:\/\/"/ },
    { name: "no base URL", env: { TROUPE_PROVIDER: "openai-compatible:llama" }, message: /needs OPENAI_COMPATIBLE_BASE_URL \(e\.g\. http:\/\/127\.0\.0\.1:8000\/v1\)/ },
    { name: "no model", env: { TROUPE_PROVIDER: "openai-compatible", OPENAI_COMPATIBLE_BASE_URL: "http://127.0.0.1:9/v1" }, message: /provider "openai-compatible" needs a model/ },
    { name: "bad retries variable", env: { TROUPE_MAX_RETRIES: "many" }, message: /^troupe: TROUPE_MAX_RETRIES: must be a whole number\n$/ },
    { name: "invalid config file", env: {}, config: '{ "provider": "openai", "timeoutMs": "soon" }', message: /troupe\.config\.json: timeoutMs: .*expected number/ },
    { name: "config file with an unknown setting", env: {}, config: '{ "providr": "openai" }', message: /troupe\.config\.json: Unrecognized key: "providr"/ },
    { name: "config file that is not JSON", env: {}, config: '{ "provider": "openai", }', message: /troupe\.config\.json:1:25: /i },
    { name: "bad budget flag", args: ["--max-cost", "-1"], env: {}, message: /^troupe: --max-cost: must be more than 0\n$/ },
  ];
  for (const testCase of cases) {
    it(testCase.name, async () => {
      const directory = tempDir();
      if (testCase.config) writeFileSync(path.join(directory, "troupe.config.json"), testCase.config);
      const result = await runCli(["run", TASK, ...(testCase.args ?? [])], { cwd: directory, env: testCase.env });
      expect(result.code).toBe(2);
      expect(result.stdout).toBe("");
      expect(result.stderr).toMatch(testCase.message);
      expect(existsSync(path.join(directory, ".troupe"))).toBe(false);
    });
  }
});
