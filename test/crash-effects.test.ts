import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import type { RunResult } from "../src/core/run.js";
import { answerStep, finalStep, planStep, reviewStep, subtask, toolStep } from "../src/testing/script.js";
import { CLI, cleanEnv, readScriptLog, runCli, tempDir, writeScript } from "./helpers.js";

describe("a worker killed after a tool's side effect", () => {
  it("does not append twice when the run resumes: the call id settles the call that had run", async () => {
    const directory = tempDir();
    const workspace = path.join(directory, "workspace");
    mkdirSync(workspace, { recursive: true });
    const log = path.join(directory, "calls.jsonl");
    // The worker appends, then its next model call takes a minute: the process is killed in it.
    const steps = [
      planStep([subtask("s1", "execute", "Log the start, then report")]),
      toolStep("s1", "file_append", { path: "log.txt", content: "started\n" }),
      finalStep("s1", "never arrives", { delayMs: 60_000, contains: "appended to log.txt" }),
    ];
    const child = spawn(process.execPath, [CLI, "run", "log the start", "--json", "--thread", "append-once", "--workspace", workspace], {
      cwd: directory,
      env: { ...cleanEnv(), TROUPE_PROVIDER: "scripted", TROUPE_SCRIPT: writeScript(directory, "before.json", steps), TROUPE_SCRIPT_LOG: log },
      stdio: "ignore",
    });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on("exit", (_code, signal) => resolve(signal)));
    const deadline = Date.now() + 30_000;
    // Killed once the second model call of s1 has started, that is after the append returned.
    while (readScriptLog(log).filter((line) => line.phase === "start" && line.subtask === "s1").length < 2) {
      if (Date.now() > deadline) throw new Error(`the worker did not get past its append: ${JSON.stringify(readScriptLog(log))}`);
      await sleep(25);
    }
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
