import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import type { RunResult } from "../src/core/run.js";
import { answerStep, finalStep, planStep, reviewStep, subtask } from "../src/testing/script.js";
import { cleanEnv, CLI, readScriptLog, runCli, tempDir, writeScript } from "./helpers.js";
import { waitFor } from "./wait.js";

/** The items of s1 the stash has recorded as finished (read-only, as another process would). */
function finishedItems(database: string): number[] {
  if (!existsSync(database)) return [];
  const db = new Database(database, { readonly: true, fileMustExist: true });
  try {
    const rows = db.prepare("SELECT item_index FROM stash_items WHERE subtask_id = 's1' ORDER BY item_index").all() as Array<{ item_index: number }>;
    return rows.map((row) => row.item_index);
  } catch {
    return [];
  } finally {
    db.close();
  }
}

describe("a crash in the middle of a map", () => {
  it("resumes a 50-item map killed with SIGKILL by running only the items that had not finished", async () => {
    const directory = tempDir();
    const log = path.join(directory, "calls.jsonl");
    const items = Array.from({ length: 50 }, (_, index) => index);
    const plan = planStep([subtask("s1", "research", "Look up each number", { args: { n: { value: items } }, mapOver: "n" })]);
    const child = spawn(process.execPath, [CLI, "run", "look up fifty numbers", "--json", "--thread", "map-crash", "--map-concurrency", "5"], {
      cwd: directory,
      env: {
        ...cleanEnv(),
        TROUPE_PROVIDER: "scripted",
        TROUPE_SCRIPT: writeScript(directory, "before.json", [plan, finalStep("s1", "found", { times: 50, delayMs: 400 })]),
        TROUPE_SCRIPT_LOG: log,
      },
      stdio: "ignore",
    });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on("exit", (_code, signal) => resolve(signal)));
    const database = path.join(directory, ".troupe", "troupe.db");
    await waitFor(() => (finishedItems(database).length >= 10 ? true : undefined), () => `the map to get going: ${JSON.stringify(readScriptLog(log).slice(-5))}`);
    child.kill("SIGKILL");
    expect(await exited).toBe("SIGKILL");
    const finished = finishedItems(database);
    expect(finished.length).toBeGreaterThanOrEqual(10);
    expect(finished.length).toBeLessThan(50);

    // Until it is resumed, the run shows the map as running (started, never ended).
    const [record] = JSON.parse((await runCli(["runs", "list", "--json"], { cwd: directory })).stdout) as Array<{ id: string; status: string }>;
    expect(record?.status).toBe("running");
    const shown = await runCli(["runs", "show", record?.id ?? "", "--json"], { cwd: directory });
    expect((JSON.parse(shown.stdout) as { graph: { nodes: Array<{ id: string; status: string }> } }).graph.nodes).toMatchObject([{ id: "s1", status: "RUNNING" }]);

    const resumed = await runCli(["resume", "map-crash", "--json"], {
      cwd: directory,
      env: {
        TROUPE_PROVIDER: "scripted",
        TROUPE_SCRIPT: writeScript(directory, "after.json", [finalStep("s1", "found", { times: 50 }), reviewStep(0.9), answerStep("all fifty found")]),
        TROUPE_SCRIPT_LOG: log,
      },
    });
    expect(resumed.stderr).not.toMatch(/unexpected|no step/);
    expect(resumed.code).toBe(0);
    const output = JSON.parse(resumed.stdout) as RunResult;
    expect(output.answer).toBe("all fifty found");
    expect(output.plan[0]).toMatchObject({ status: "done", attempts: 1, map: { overallStatus: "ALL_SUCCESS", total: 50, succeeded: 50, failed: 0 } });

    // The resumed process ran each unfinished item exactly once, and none of the finished ones.
    const secondPid = readScriptLog(log).find((line) => line.role === "critic")?.pid;
    const rerun = readScriptLog(log)
      .filter((line) => line.phase === "start" && line.subtask === "s1" && line.pid === secondPid)
      .map((line) => line.item);
    expect(rerun.slice().sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual(items.filter((item) => !finished.includes(item)));
    expect(finishedItems(database)).toEqual(items);
  });
});
