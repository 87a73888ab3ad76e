import { spawn } from "node:child_process";
import Database from "better-sqlite3";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { RunResult } from "../src/core/run.js";
import { answerStep, finalStep, planStep, reviewStep, subtask, toolStep } from "../src/testing/script.js";
import { CLI, cleanEnv, readScriptLog, runCli, tempDir, writeScript } from "./helpers.js";
import { waitFor } from "./wait.js";

describe("a worker killed after a tool's side effect", () => {
  it("does not append twice when the run resumes: the call id settles the call that had run", async () => {
    const directory = tempDir();
    const workspace = path.join(directory, "workspace");
    mkdirSync(workspace, { recursive: true });
    const log = path.join(directory, "calls.jsonl");
    // No tool waits for approval here, so the worker's steps are not durable: it runs again from
    // its start on resume, and the call id is what settles its append.
    writeFileSync(path.join(directory, "troupe.config.json"), JSON.stringify({ tools: { approval: { riskLevels: [] } } }));
    // The worker appends, then its next model call takes a minute: the process is killed in it.
    const steps = [
      planStep([subtask("s1", "execute", "Log the start, then report")]),
      toolStep("s1", "file_append", { path: "log.txt", content: "started\n" }),
      finalStep("s1", "never arrives", { gate: "never", contains: "appended to log.txt" }),
    ];
    const child = spawn(process.execPath, [CLI, "run", "log the start", "--json", "--thread", "append-once", "--workspace", workspace], {
      cwd: directory,
      env: { ...cleanEnv(), TROUPE_PROVIDER: "scripted", TROUPE_SCRIPT: writeScript(directory, "before.json", steps), TROUPE_SCRIPT_LOG: log },
      stdio: "ignore",
    });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on("exit", (_code, signal) => resolve(signal)));
    // Killed once the second model call of s1 has started, that is after the append returned.
    await waitFor(() => (readScriptLog(log).filter((line) => line.phase === "start" && line.subtask === "s1").length >= 2 ? true : undefined), () => `the worker to get past its append: ${JSON.stringify(readScriptLog(log))}`, 25);
    child.kill("SIGKILL");
    expect(await exited).toBe("SIGKILL");
    expect(readFileSync(path.join(workspace, "log.txt"), "utf8")).toBe("started\n");

    // The same worker runs again from its start and makes the same call (same ordinal, tool and arguments).
    const resumed = await runCli(["resume", "append-once", "--json", "--workspace", workspace], {
      cwd: directory,
      env: {
        TROUPE_SCRIPT: writeScript(directory, "after.json", [
          toolStep("s1", "file_append", { path: "log.txt", content: "started\n" }),
          finalStep("s1", "logged", { contains: "appended to log.txt" }),
          reviewStep(0.9),
          answerStep("logged once"),
        ]),
        TROUPE_SCRIPT_LOG: log,
      },
    });
    expect(resumed.stderr).not.toMatch(/unexpected|no step/);
    expect(resumed.code).toBe(0);
    expect((JSON.parse(resumed.stdout) as RunResult).status).toBe("completed");
    expect(readFileSync(path.join(workspace, "log.txt"), "utf8")).toBe("started\n");
    // Both calls of the append are one audit row: the second was served from the record of the first.
    const audit = await runCli(["audit", "list", "--json"], { cwd: directory });
    const rows = (JSON.parse(audit.stdout) as Array<{ tool: string; status: string; reason: string | null }>).filter((row) => row.tool === "file_append");
    expect(rows).toHaveLength(1);
    expect(rows[0]?.status).toBe("ok");
    expect(existsSync(path.join(directory, ".troupe", "troupe.db"))).toBe(true);
  });
});

describe("a process killed after a step's tasks finished, before its checkpoint", () => {
  it("resumes the run: the saved writes are applied, not taken for a finished graph", async () => {
    const directory = tempDir();
    const workspace = path.join(directory, "workspace");
    mkdirSync(workspace, { recursive: true });
    const log = path.join(directory, "calls.jsonl");
    const child = spawn(process.execPath, [CLI, "run", "compute it", "--json", "--thread", "torn", "--workspace", workspace], {
      cwd: directory,
      env: { ...cleanEnv(), TROUPE_PROVIDER: "scripted", TROUPE_SCRIPT: writeScript(directory, "before.json", [planStep([subtask("s1", "execute", "Compute")], { gate: "never" })]), TROUPE_SCRIPT_LOG: log },
      stdio: "ignore",
    });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on("exit", (_code, signal) => resolve(signal)));
    await waitFor(() => (readScriptLog(log).some((line) => line.phase === "start" && line.role === "planner") ? true : undefined), "the planner to be called", 25);
    child.kill("SIGKILL");
    expect(await exited).toBe("SIGKILL");
    // What the disk holds when the process dies between a task's writes and the next checkpoint:
    // intake's writes are saved against the checkpoint before it, and no checkpoint follows them.
    const db = new Database(path.join(directory, ".troupe", "troupe.db"));
    const newest = db.prepare("SELECT checkpoint_id FROM checkpoints WHERE thread_id = 'torn' ORDER BY checkpoint_id DESC LIMIT 1").get() as { checkpoint_id: string };
    db.prepare("DELETE FROM writes WHERE thread_id = 'torn' AND checkpoint_id = ?").run(newest.checkpoint_id);
    db.prepare("DELETE FROM checkpoints WHERE thread_id = 'torn' AND checkpoint_id = ?").run(newest.checkpoint_id);
    const pending = db.prepare("SELECT COUNT(*) AS count FROM writes WHERE thread_id = 'torn' AND channel = 'branch:to:planner'").get() as { count: number };
    db.close();
    expect(pending.count).toBe(1);

    const resumed = await runCli(["resume", "torn", "--json", "--workspace", workspace], {
      cwd: directory,
      env: {
        TROUPE_PROVIDER: "scripted",
        TROUPE_SCRIPT: writeScript(directory, "after.json", [planStep([subtask("s1", "execute", "Compute")]), finalStep("s1", "42"), reviewStep(0.9), answerStep("42")]),
      },
    });
    expect(resumed.stderr).not.toMatch(/already finished/);
    expect(resumed.code).toBe(0);
    const result = JSON.parse(resumed.stdout) as RunResult;
    expect(result.status).toBe("completed");
    expect(result.answer).toContain("42");
  });
});
