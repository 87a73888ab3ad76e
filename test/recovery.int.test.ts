import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { answerStep, finalStep, planStep, reviewStep, subtask, toolStep } from "../src/testing/script.js";
import { CLI, cleanEnv, runCli, runScripted, tempDir, writeScript } from "./helpers.js";

// On main, a crash trial whose run had a code_run in flight at the kill failed it as "outcome
// unknown", and a map whose items failed that way still passed review with files missing.

describe("recovery completes what can be checked or undone", () => {
  it("resumes a run killed while its script ran: the script runs again on a fresh copy, and its effect is there once", async () => {
    const directory = tempDir();
    const workspace = path.join(directory, "workspace");
    mkdirSync(workspace);
    // Appends a line, then takes a while: the kill lands while it runs (its line only in the stage).
    const code = "open('/workspace/code.log', 'a').write('ran\\n')\nimport time\ntime.sleep(1.5)\nprint('done')";
    const plan = [subtask("s1", "code", "Run the logging script", { tool: "code_run", args: { language: { value: "python" }, code: { value: code } }, writes: ["code.log"] })];
    const script = writeScript(directory, "script.json", [
      { ...planStep(plan), times: 5 },
      { ...reviewStep(1), times: 5 },
      { ...answerStep("logged"), times: 5 },
    ]);
    const env = { TROUPE_PROVIDER: "scripted", TROUPE_SCRIPT: script };
    const base = ["--workspace", workspace, "--thread", "killed"];
    const child = spawn(process.execPath, [CLI, "run", "log it", ...base], { cwd: directory, env: { ...cleanEnv(), ...env }, stdio: "ignore" });
    const stages = path.join(directory, ".troupe", "stages");
    // Killed once the script's stage exists (it is running on the copy).
    for (let wait = 0; wait < 300; wait += 1) {
      const staged = existsSync(stages) && readdirSync(stages).some((folder) => readdirSync(path.join(stages, folder)).length > 0);
      if (staged) break;
      await sleep(50);
    }
    await sleep(400);
    child.kill("SIGKILL");
    await new Promise((resolve) => child.once("exit", resolve));
    expect(existsSync(path.join(workspace, "code.log"))).toBe(false);
    const resumed = await runCli(["resume", "killed", "--workspace", workspace, "--json"], { cwd: directory, env });
    expect(JSON.parse(resumed.stdout)).toMatchObject({ status: "completed", plan: [{ id: "s1", status: "done" }] });
    expect(readFileSync(path.join(workspace, "code.log"), "utf8")).toBe("ran\n");
  });

  it("does not pass review while a map's items did not make the files they were to, and runs those items again", async () => {
    const paths = ["out/a.txt", "out/b.txt", "out", "out/d.txt"];
    const plan = [subtask("s1", "execute", "Write four files", { tool: "file_write", mapOver: "path", args: { path: { value: paths }, content: { value: "x" } } })];
    const { model, result, troupe } = await runScripted([planStep(plan), { ...reviewStep(0.95), times: 3 }, answerStep("written")]);
    model.assertDone();
    // The item writing "out" (a folder by then) fails every round; the critic's scores never let it pass.
    expect(result.status).toBe("failed");
    expect(result.stopReason).toBe("max_iterations");
    expect(result.trace.reviews.map((review) => review.passed)).toEqual([false, false, false]);
    expect(result.trace.reviews[0]?.issues).toContainEqual("s1: 1 of its items did not leave the files they were to make (out)");
    expect(result.plan[0]).toMatchObject({ status: "done", map: { succeeded: 3, failed: 1 } });
    expect(readdirSync(path.join(troupe.workspace, "out")).sort()).toEqual(["a.txt", "b.txt", "d.txt"]);
  });

  it("a worker's map too: an item whose recorded write is not in the workspace keeps the review from passing, though the item said it was done", async () => {
    const names = ["a", "b", "c"];
    const plan = [subtask("s1", "execute", "Write out/<name>.txt for each name", { mapOver: "name", args: { name: { value: names } } })];
    // Item c writes under a file (not a folder): the write fails, and its worker reports done all the same.
    const target = (name: string) => (name === "c" ? "blocker/c.txt" : `out/${name}.txt`);
    const items = [1, 2, 3].flatMap(() =>
      names.flatMap((name, index) => [toolStep("s1", "file_write", { path: target(name), content: name }, { item: index }), finalStep("s1", `wrote ${target(name)}`, { item: index })]),
    );
    const { model, result, troupe } = await runScripted([planStep(plan), ...items, { ...reviewStep(0.95), times: 3 }, answerStep("written")], {}, { workspaceFiles: { blocker: "a file, not a folder" } });
    expect(model.unexpected).toEqual([]);
    expect(result.status).toBe("failed");
    expect(result.trace.reviews[0]).toMatchObject({ passed: false });
    expect(result.trace.reviews[0]?.issues).toContainEqual("s1: 1 of its items did not leave the files they were to make (blocker/c.txt)");
    expect(result.plan[0]).toMatchObject({ status: "done", map: { succeeded: 3, failed: 0 } });
    expect(readdirSync(path.join(troupe.workspace, "out")).sort()).toEqual(["a.txt", "b.txt"]);
  });
});

