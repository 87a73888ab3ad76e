import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import type { ExecutionGraph } from "../src/core/execution-graph.js";
import type { RunResult } from "../src/core/run.js";
import { answerStep, finalStep, planStep, reviewStep, subtask } from "../src/testing/script.js";
import { cleanEnv, CLI, readScriptLog, runCli, tempDir, writeScript } from "./helpers.js";
import { waitFor } from "./wait.js";

function parseResult(stdout: string): RunResult {
  return JSON.parse(stdout) as RunResult;
}

describe("troupe run on the offline model", () => {
  it("computes 17% of 2,340, saves it to result.txt, and reports a JSON result", async () => {
    const directory = tempDir();
    const result = await runCli(["run", "compute 17% of 2,340 and save it to result.txt", "--json"], { cwd: directory });
    expect(result.code).toBe(0);
    const output = parseResult(result.stdout);
    expect(output.status).toBe("completed");
    expect(output.stopReason).toBe("completed");
    expect(output.answer).toContain("397.8");
    expect(output.answer).toMatch(/offline/i);
    expect(output.plan).toHaveLength(2);
    expect(output.plan[1]?.dependsOn).toEqual(["s1"]);
    expect(output.plan[1]?.args.content).toEqual({ ref: "s1", path: "$" });
    expect(readFileSync(path.join(directory, "workspace", "result.txt"), "utf8")).toBe("397.8");
    expect(output.metrics.llmCalls).toBeGreaterThan(0);
    expect(output.metrics.toolCalls).toBe(2);
    expect(output.metrics.promptTokens).toBeGreaterThan(0);
    expect(output.trace.toolCalls.map((call) => call.tool)).toEqual(["calculator", "file_write"]);
    expect(Object.keys(output).sort()).toEqual(["answer", "answerFormat", "metrics", "plan", "runId", "status", "stopReason", "threadId", "trace"]);
    // Written by the offline model's rules: text, not Markdown.
    expect(output.answerFormat).toBe("text");
  });

  it("shows live progress on stderr and the answer with its decision trace on stdout", async () => {
    const directory = tempDir();
    const result = await runCli(["run", "What is 2 to the power of 10?"], { cwd: directory });
    expect(result.code).toBe(0);
    expect(result.stderr).toContain("offline rule-based model");
    expect(result.stderr).toMatch(/plan ready: 1 subtask/);
    expect(result.stderr).toMatch(/s1 done in \d+ ms: 2 \^ 10 = 1024/);
    // The default review (auto): a verified calculator result needs no critic, and the progress says so.
    expect(result.stderr).toMatch(/review skipped \(round 1\): every outcome a verified direct tool result/);
    expect(result.stdout).toContain("1024");
    expect(result.stdout).toContain("decision trace");
    // The plan stated its answer: code filled it in, and the trace says so (no synthesizer call).
    expect(result.stdout).toMatch(/route: fast \(one subtask, a direct calculator call \(no worker model\): the plan's answer fills in its result/);
    expect(result.stdout).toMatch(/answer: by template \(the plan stated its answer: filled by code from the verified results\)/);
    expect(result.stdout).toMatch(/calls: 1 model, 1 tool/);
    expect(result.stdout).toMatch(/status: completed/);
  });

  it("shows a waiting plan's answer template under its steps, and after approval says code filled it in", async () => {
    const directory = tempDir();
    const waiting = await runCli(["run", "compute 17% of 2,340 and save it to result.txt", "--approve-plan", "--thread", "template-1"], { cwd: directory });
    expect(waiting.code).toBe(3);
    expect(waiting.stdout).toContain("The plan is waiting for your approval:");
    expect(waiting.stdout).toMatch(/answer, filled in from the results: .*17% of 2,340 = \{s1\}/);
    const approved = await runCli(["resume", "template-1", "--approve"], { cwd: directory });
    expect(approved.code).toBe(0);
    expect(approved.stdout).toContain("17% of 2,340 = 397.8");
    expect(approved.stdout).toMatch(/answer: by template \(/);
  });

  it("answers an open-ended task honestly: a plan, and a note that a real model is needed", async () => {
    const directory = tempDir();
    const result = await runCli(["run", "Write a six-week plan for learning Python with weekly exercises", "--json"], { cwd: directory });
    expect(result.signal).toBeNull();
    expect(result.stderr).toBe("note: no model provider is configured, so troupe uses its offline rule-based model (set TROUPE_PROVIDER or --provider for a real one)\n");
    // Not done, so not completed: exit 1, with the plan it would follow and why.
    expect(result.code).toBe(1);
    const output = parseResult(result.stdout);
    expect(output.status).toBe("failed");
    expect(output.plan.length).toBeGreaterThanOrEqual(2);
    expect(output.plan[0]).toMatchObject({ status: "failed", failureKind: "unable" });
    expect(output.answer).toMatch(/needs a language model/);
    expect(output.answer).toMatch(/TROUPE_PROVIDER/);
  });

  it("splits a question of two parts and fails with exit 1 when nothing can succeed", async () => {
    const directory = tempDir();
    const both = await runCli(["run", "What is 15% of 80 and what is the square root of 81?", "--json"], { cwd: directory });
    expect(both.code).toBe(0);
    expect(parseResult(both.stdout).answer).toMatch(/15% of 80: 15% of 80 = 12[\s\S]*square root of 81: sqrt\(81\) = 9/);
    const impossible = await runCli(["run", "Compute 10 / 0", "--json"], { cwd: directory });
    expect(impossible.code).toBe(1);
    const output = parseResult(impossible.stdout);
    expect(output.status).toBe("failed");
    expect(output.answer).toContain("division by zero");
    expect(output.trace.reviews).toHaveLength(1);
  });

  it("lists past runs and shows one with its plan and as Mermaid", async () => {
    const directory = tempDir();
    const run = await runCli(["run", "compute 2+3 and save it to sum.txt", "--json"], { cwd: directory });
    const { runId } = parseResult(run.stdout);
    const list = await runCli(["runs", "list", "--json"], { cwd: directory });
    expect(list.code).toBe(0);
    expect((JSON.parse(list.stdout) as Array<{ id: string; status: string }>).map((record) => [record.id, record.status])).toEqual([[runId, "completed"]]);
    const show = await runCli(["runs", "show", runId], { cwd: directory });
    expect(show.code).toBe(0);
    expect(show.stdout).toContain("✓ s1 [execute · calculator] Compute 2+3");
    const mermaid = await runCli(["runs", "show", runId, "--mermaid"], { cwd: directory });
    expect(mermaid.stdout).toMatch(/^flowchart TD/);
    expect(mermaid.stdout).toContain('n_s1 -->|"content"| n_s2');
    expect(mermaid.stdout).toContain(":::success");
    const missing = await runCli(["runs", "show", "run-nope"], { cwd: directory });
    expect(missing.code).toBe(2);
  });
});

describe("troupe runs show: where the time went", () => {
  it("draws a Gantt strip under the plan: one row per subtask, bars on one time axis, the critical path marked", async () => {
    const directory = tempDir();
    // A chain of three short subtasks beside one long one: the long one is the critical path.
    const plan = [
      subtask("s1", "research", "Step one"),
      subtask("s2", "research", "Step two", { dependsOn: ["s1"] }),
      subtask("s3", "research", "Step three", { dependsOn: ["s2"] }),
      subtask("long", "research", "The long one"),
    ];
    const latency: Record<string, number> = { s1: 40, s2: 40, s3: 40, long: 600 };
    // As the CLI prints durations.
    const ms = (value: number | null | undefined): string => ((value ?? 0) < 1000 ? `${value} ms` : `${((value ?? 0) / 1000).toFixed(1)} s`);
    const script = writeScript(directory, "gantt.json", [planStep(plan), ...plan.map((item) => finalStep(item.id, `result of ${item.id}`, { delayMs: latency[item.id] })), reviewStep(0.9), answerStep("done")]);
    const run = await runCli(["run", "a chain beside a long task", "--json"], { cwd: directory, env: { TROUPE_PROVIDER: "scripted", TROUPE_SCRIPT: script } });
    expect(run.code).toBe(0);
    const { runId } = parseResult(run.stdout);

    const json = await runCli(["runs", "show", runId, "--json"], { cwd: directory });
    const graph = (JSON.parse(json.stdout) as { graph: ExecutionGraph }).graph;
    expect(graph.criticalPath).toEqual(["long"]);
    expect(graph.makespanMs).toBe(Math.max(...graph.nodes.map((node) => node.endedAt ?? 0)) - Math.min(...graph.nodes.map((node) => node.startedAt ?? Infinity)));

    const show = await runCli(["runs", "show", runId], { cwd: directory });
    expect(show.code).toBe(0);
    const lines = show.stdout.split("\n");
    const header = lines.findIndex((line) => line.startsWith("timeline: "));
    expect(header).toBeGreaterThan(lines.findIndex((line) => line.includes("✓ long [research] The long one")));
    expect(lines[header]).toBe(`timeline: ${ms(graph.makespanMs)} from the first subtask start to the last end (█ done, ▓ partial, ▒ failed, ░ running):`);
    const rows = lines.slice(header + 1, header + 5);
    expect(rows.map((row) => row.slice(0, 9))).toEqual(["    s1   ", "    s2   ", "    s3   ", "  * long "]);
    const bars = rows.map((row) => row.slice(row.indexOf("│") + 1, row.lastIndexOf("│")));
    expect(bars.every((bar) => [...bar].length === 48)).toBe(true);
    const span = (bar: string): [number, number] => [bar.indexOf("█"), bar.lastIndexOf("█") + 1];
    // Each step of the chain starts where its input ended, or later; the long one runs to the end of the axis.
    expect(span(bars[1] ?? "")[0]).toBeGreaterThanOrEqual(span(bars[0] ?? "")[1]);
    expect(span(bars[2] ?? "")[0]).toBeGreaterThanOrEqual(span(bars[1] ?? "")[1]);
    expect(span(bars[3] ?? "")[1]).toBe(48);
    // Each row gives its start offset and its duration, as the JSON has them.
    const origin = Math.min(...graph.nodes.map((node) => node.startedAt ?? Infinity));
    graph.nodes.forEach((node, index) => {
      expect(rows[index]).toMatch(new RegExp(`│ +\\+${ms((node.startedAt ?? 0) - origin)} +${ms(node.durationMs)}$`));
    });
    expect(lines[header + 5]).toBe(`critical path (*): long · ${ms(graph.criticalPathMs)} of work in a makespan of ${ms(graph.makespanMs)}`);
  });
});

describe("bad input", () => {
  const cases: Array<[string, string[], RegExp]> = [
    ["an empty task", ["run", ""], /the task is empty/],
    ["a whitespace task", ["run", "  \n\t "], /the task is empty/],
    ["a task over 5,000 characters", ["run", "x".repeat(5_001)], /longer than 5000 characters/],
    ["an unknown provider", ["run", "hello", "--provider", "nope"], /unknown provider "nope"/],
    ["--max-iterations 0", ["run", "hello", "--max-iterations", "0"], /between 1 and 50/],
    ["--max-iterations 51", ["run", "hello", "--max-iterations", "51"], /between 1 and 50/],
    ["--max-iterations abc", ["run", "hello", "--max-iterations", "abc"], /max_iterations/],
    ["--map-concurrency 0", ["run", "hello", "--map-concurrency", "0"], /map concurrency must be between 1 and 100/],
    ["--prompt-budget 10", ["run", "hello", "--prompt-budget", "10"], /prompt budget must be between 1000 and 1000000 tokens/],
    ["an unwritable data dir", ["run", "hello", "--data-dir", "/sys/troupe-data"], /cannot be created|not writable/],
    ["a resume of an unknown thread", ["resume", "no-such-thread"], /no run found for thread no-such-thread/],
    ["conflicting resume flags", ["resume", "t", "--approve", "--reject"], /only one of/],
    ["a workspace that is an existing file", ["run", "hello", "--workspace", "package.json"], /^troupe: the workspace \S+\/package\.json is not a folder \(a file is in the way\)$/m],
    ["a workspace under an existing file", ["run", "hello", "--workspace", "package.json/inner"], /the workspace \S+\/package\.json\/inner is not a folder \(a file is in the way/],
  ];
  for (const [name, args, message] of cases) {
    it(`refuses ${name} with exit 2, one line on stderr, and nothing written`, async () => {
      const directory = tempDir();
      writeFileSync(path.join(directory, "package.json"), "{}");
      const result = await runCli(args, { cwd: directory });
      expect(result.code).toBe(2);
      expect(result.stderr.trim().split("\n")).toHaveLength(1);
      expect(result.stderr).toMatch(message);
      expect(result.stdout).toBe("");
      expect(existsSync(path.join(directory, ".troupe"))).toBe(false);
      expect(existsSync(path.join(directory, "workspace"))).toBe(false);
    });
  }

  it("refuses a zero-byte troupe.db instead of taking it as a new database", async () => {
    const directory = tempDir();
    mkdirSync(path.join(directory, ".troupe"));
    writeFileSync(path.join(directory, ".troupe", "troupe.db"), "");
    for (const args of [["run", "compute 2 + 2"], ["runs", "list"], ["audit", "list"]]) {
      const result = await runCli(args, { cwd: directory });
      expect([args.join(" "), result.code]).toEqual([args.join(" "), 2]);
      expect(result.stderr.trim().split("\n")).toHaveLength(1);
      expect(result.stderr).toMatch(/^troupe: \S+\/\.troupe\/troupe\.db is empty \(0 bytes\), so it is not a troupe database; move it away or delete it to start a new one, or restore it from a copy$/m);
    }
    expect(readdirSync(path.join(directory, ".troupe"))).toEqual(["troupe.db"]);
    expect(existsSync(path.join(directory, "workspace"))).toBe(false);
  });

  it("refuses a data dir that is not writable even for root", async () => {
    const result = await runCli(["run", "hello", "--data-dir", "/sys"], { cwd: tempDir() });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/not writable/);
  });
});

describe("durable runs across processes", () => {
  it("pauses for plan approval in one process and finishes when approved from another", async () => {
    const directory = tempDir();
    const log = path.join(directory, "calls.jsonl");
    const first = await runCli(["run", "research two things", "--approve-plan", "--json", "--thread", "approval-1"], {
      cwd: directory,
      env: {
        TROUPE_PROVIDER: "scripted",
        TROUPE_SCRIPT: writeScript(directory, "one.json", [planStep([subtask("s1", "research", "Thing one"), subtask("s2", "research", "Thing two")])]),
        TROUPE_SCRIPT_LOG: log,
      },
    });
    expect(first.code).toBe(3);
    const waiting = parseResult(first.stdout);
    expect(waiting.status).toBe("interrupted");
    expect(waiting.interrupt?.kind).toBe("plan-approval");
    expect(waiting.plan.map((view) => view.status)).toEqual(["pending", "pending"]);

    const second = await runCli(["resume", "approval-1", "--approve", "--json"], {
      cwd: directory,
      env: {
        TROUPE_SCRIPT: writeScript(directory, "two.json", [finalStep("s1", "one"), finalStep("s2", "two"), reviewStep(0.9), answerStep("one and two")]),
        TROUPE_SCRIPT_LOG: log,
      },
    });
    expect(second.stderr).not.toContain("unexpected");
    expect(second.code).toBe(0);
    const done = parseResult(second.stdout);
    expect(done.status).toBe("completed");
    expect(done.runId).toBe(waiting.runId);
    expect(done.answer).toBe("one and two");
    const calls = readScriptLog(log).filter((line) => line.phase === "start");
    expect(calls.map((line) => line.role)).toEqual(["planner", "research", "research", "critic", "synthesizer"]);
    expect(new Set(calls.map((line) => line.pid)).size).toBe(2);
  });

  it("resumes a run whose process was killed (SIGKILL) from its last checkpoint; finished subtasks run exactly once", async () => {
    const directory = tempDir();
    const log = path.join(directory, "calls.jsonl");
    const plan = planStep([
      subtask("s1", "research", "Fast lookup"),
      subtask("s2", "research", "Slow lookup"),
      subtask("s3", "execute", "Combine", { dependsOn: ["s1", "s2"], args: { fast: { ref: "s1", path: "$" } } }),
    ]);
    const child = spawn(process.execPath, [CLI, "run", "look up two things and combine them", "--json", "--thread", "crash-1"], {
      cwd: directory,
      env: {
        ...cleanEnv(),
        TROUPE_PROVIDER: "scripted",
        TROUPE_SCRIPT: writeScript(directory, "before.json", [plan, finalStep("s1", "fast result", { delayMs: 50 }), finalStep("s2", "never arrives", { gate: "never" })]),
        TROUPE_SCRIPT_LOG: log,
      },
      stdio: "ignore",
    });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on("exit", (_code, signal) => resolve(signal)));
    const database = path.join(directory, ".troupe", "troupe.db");
    const s1Recorded = (): boolean => {
      if (!existsSync(database)) return false;
      const db = new Database(database, { readonly: true, fileMustExist: true });
      try {
        // s1's task has saved its result among the checkpoint's pending writes.
        const row = db.prepare("SELECT COUNT(*) AS n FROM writes WHERE CAST(value AS TEXT) LIKE '%fast result%'").get() as { n: number };
        return row.n > 0;
      } catch {
        return false;
      } finally {
        db.close();
      }
    };
    await waitFor(() => (s1Recorded() && readScriptLog(log).some((line) => line.phase === "start" && line.subtask === "s2") ? true : undefined), () => `the run to reach s2: ${JSON.stringify(readScriptLog(log))}`, 50);
    child.kill("SIGKILL");
    expect(await exited).toBe("SIGKILL");

    const stale = await runCli(["runs", "list", "--json"], { cwd: directory });
    expect((JSON.parse(stale.stdout) as Array<{ status: string }>)[0]?.status).toBe("running");

    const resumed = await runCli(["resume", "crash-1", "--json"], {
      cwd: directory,
      env: {
        TROUPE_SCRIPT: writeScript(directory, "after.json", [
          finalStep("s2", "slow result"),
          finalStep("s3", "fast result + slow result", { contains: '"fast":"fast result"' }),
          reviewStep(0.9),
          answerStep("combined"),
        ]),
        TROUPE_SCRIPT_LOG: log,
      },
    });
    expect(resumed.stderr).not.toMatch(/unexpected|no step/);
    expect(resumed.code).toBe(0);
    const output = parseResult(resumed.stdout);
    expect(output.status).toBe("completed");
    expect(output.answer).toBe("combined");
    expect(output.plan.map((view) => [view.id, view.status, view.attempts])).toEqual([
      ["s1", "done", 1],
      ["s2", "done", 1],
      ["s3", "done", 1],
    ]);
    const starts = readScriptLog(log).filter((line) => line.phase === "start");
    expect(starts.filter((line) => line.role === "planner")).toHaveLength(1);
    expect(starts.filter((line) => line.subtask === "s1")).toHaveLength(1);
    expect(starts.filter((line) => line.subtask === "s2")).toHaveLength(2);
    const again = await runCli(["resume", "crash-1"], { cwd: directory, env: { TROUPE_SCRIPT: path.join(directory, "after.json") } });
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/already finished/);
  });
});

describe("other commands", () => {
  it("prints the orchestration graph as Mermaid", async () => {
    const result = await runCli(["graph"]);
    expect(result.code).toBe(0);
    for (const edge of [
      "__start__ --> intake",
      "intake --> coordinator",
      "coordinator -.-> planner",
      'coordinator -. "subtasks to run" .-> execute',
      "execute --> coordinator",
      "critic --> coordinator",
      "coordinator -.-> approve_answer",
      "finalize --> __end__",
    ]) {
      expect(result.stdout).toContain(edge);
    }
  });

  it("lists tools with their schemas and calls one, refusing paths outside the workspace", async () => {
    const directory = tempDir();
    const list = await runCli(["tools", "list", "--json"], { cwd: directory });
    const tools = JSON.parse(list.stdout) as Array<{ name: string; schema: { properties: Record<string, unknown> } }>;
    expect(tools.map((tool) => tool.name)).toEqual([
      "board_post", "board_read", "calculator", "code_run", "file_append", "file_copy", "file_delete", "file_list", "file_move", "file_read", "file_write", "http_fetch", "json", "memory_forget", "memory_save", "memory_search", "propose_edit", "text_stats", "thread_result", "web_search",
    ]);
    expect(tools.find((tool) => tool.name === "calculator")?.schema.properties).toHaveProperty("expression");
    const call = await runCli(["tools", "call", "calculator", "--args", '{"expression":"17% of 2,340"}'], { cwd: directory });
    expect(call.stdout.trim()).toBe("397.8");
    const escape = await runCli(["tools", "call", "file_read", "--args", '{"path":"../../etc/passwd"}', "--json"], { cwd: directory });
    expect(escape.code).toBe(1);
    expect(JSON.parse(escape.stdout)).toMatchObject({ ok: false, error: { code: "path_outside_workspace" } });
    const denied = await runCli(["tools", "call", "file_write", "--as", "research", "--args", '{"path":"a.txt","content":"x"}'], { cwd: directory });
    expect(denied.code).toBe(1);
    expect(denied.stderr).toMatch(/file_write failed \(permission_denied\): permission denied: research holds READ on file_write, which needs WRITE/);
    const badJson = await runCli(["tools", "call", "calculator", "--args", "{nope"], { cwd: directory });
    expect(badJson.code).toBe(2);
  });
});
