import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { finalStep, planStep, reviewStep, subtask } from "../src/testing/script.js";
import type { RunResult } from "../src/core/run.js";
import { runCli, tempDir, writeScript } from "./helpers.js";

/** A fresh folder with a workspace, where troupe runs on its defaults (the offline model, SQLite in .troupe/). */
function freshFolder(files: Record<string, string | Buffer> = {}): { directory: string; workspace: string } {
  const directory = tempDir();
  const workspace = path.join(directory, "workspace");
  mkdirSync(workspace, { recursive: true });
  for (const [name, content] of Object.entries(files)) writeFileSync(path.join(workspace, name), content);
  return { directory, workspace };
}

function resultOf(stdout: string): RunResult {
  return JSON.parse(stdout) as RunResult;
}

describe("defaults that work, from a fresh data directory", () => {
  it("deleting a file works out of the box and waits for a person's approval", async () => {
    const { directory, workspace } = freshFolder({ "junk.txt": "junk\n" });
    const waiting = await runCli(["run", "delete junk.txt", "--thread", "tidy", "--json"], { cwd: directory });
    expect(waiting.code, waiting.stderr).toBe(3);
    expect(resultOf(waiting.stdout).interrupt).toMatchObject({ kind: "tool-approval", payload: expect.objectContaining({ tool: "file_delete", agent: "cleanup" }) });
    expect(existsSync(path.join(workspace, "junk.txt"))).toBe(true);
    const approved = await runCli(["resume", "tidy", "--approve", "--json"], { cwd: directory });
    expect(approved.code, approved.stderr).toBe(0);
    expect(existsSync(path.join(workspace, "junk.txt"))).toBe(false);
  });

  it("a configuration gap is reported as one, naming the setting to change, without a re-plan", async () => {
    const { directory, workspace } = freshFolder({ "junk.txt": "junk\n" });
    // The config takes file_delete away from the only agent that holds it.
    writeFileSync(path.join(directory, "troupe.config.json"), JSON.stringify({ tools: { permissions: { roles: { cleanup: [{ tool: "file_list", level: "READ" }] } } } }));
    const run = await runCli(["run", "delete junk.txt", "--json"], { cwd: directory });
    expect(run.code).toBe(1);
    const result = resultOf(run.stdout);
    expect(result.error).toMatch(/no agent may use file_delete — a configuration gap, not a planning mistake: grant it to an agent in the config file's tools\.permissions/);
    expect(result.trace.nodes.filter((node) => node === "planner")).toHaveLength(1);
    expect(existsSync(path.join(workspace, "junk.txt"))).toBe(true);
  });

  it("a binary file read and saved is copied byte for byte", async () => {
    const bytes = randomBytes(1024 * 1024);
    const { directory, workspace } = freshFolder({ "b.bin": bytes });
    const run = await runCli(["run", "read b.bin and save it to c.bin", "--json"], { cwd: directory });
    expect(run.code, run.stderr).toBe(0);
    expect(readFileSync(path.join(workspace, "c.bin")).equals(bytes)).toBe(true);
  });

  it("a referenced number reaches a direct file_write as its decimal text, and the trace says so", async () => {
    const { directory, workspace } = freshFolder();
    const script = writeScript(directory, "script.json", [
      planStep([
        subtask("s1", "execute", "Compute 17% of 2,340", { tool: "calculator", args: { expression: { value: "17% of 2340" } } }),
        subtask("s2", "execute", "Save it to result.txt", { tool: "file_write", dependsOn: ["s1"], args: { path: { value: "result.txt" }, content: { ref: "s1", path: "$" } } }),
      ]),
      reviewStep(0.9),
      { role: "synthesizer", content: "397.8, saved to result.txt." },
    ]);
    const run = await runCli(["run", "compute 17% of 2,340 and save it to result.txt", "--json"], { cwd: directory, env: { TROUPE_PROVIDER: "scripted", TROUPE_SCRIPT: script } });
    expect(run.code, run.stderr).toBe(0);
    expect(readFileSync(path.join(workspace, "result.txt"), "utf8")).toBe("397.8");
    const write = resultOf(run.stdout).trace.toolCalls.find((call) => call.tool === "file_write");
    expect(write?.notes).toEqual(['content: the number 397.8 given as the text "397.8"']);
  });

  it("a worker is offered its agent's own tools whatever the plan names, and every tool it may use when the plan leaves them open", async () => {
    const { directory } = freshFolder();
    const script = writeScript(directory, "script.json", [
      planStep([subtask("s1", "execute", "Transform the first figure"), subtask("s2", "execute", "Combine both results", { tools: ["calculator"] })]),
      finalStep("s1", "done"),
      finalStep("s2", "done"),
      reviewStep(0.9),
      { role: "synthesizer", content: "done" },
    ]);
    const run = await runCli(["run", "transform and combine", "--json"], { cwd: directory, env: { TROUPE_PROVIDER: "scripted", TROUPE_SCRIPT: script } });
    expect(run.code, run.stderr).toBe(0);
    const [open, planned] = resultOf(run.stdout).plan;
    // Tools left open: everything the agent may use (no offer recorded: nothing was held back).
    expect(open?.offer).toBeUndefined();
    // Tools named: those, and the agent's own.
    const offered = planned?.offer?.offered.map((tool) => tool.name) ?? [];
    for (const name of ["calculator", "file_write", "file_read", "json", "code_run"]) expect(offered).toContain(name);
    expect(planned?.offer?.offered.find((tool) => tool.name === "calculator")?.why).toBe("named by the plan");
  });

  it("troupe tools list shows the same tools in a fresh folder and once .troupe/ exists", async () => {
    const { directory } = freshFolder();
    const names = (stdout: string) => (JSON.parse(stdout) as Array<{ name: string }>).map((tool) => tool.name).sort();
    const before = await runCli(["tools", "list", "--json"], { cwd: directory });
    expect(before.code, before.stderr).toBe(0);
    expect(existsSync(path.join(directory, ".troupe"))).toBe(false);
    const run = await runCli(["run", "compute 2+3", "--json"], { cwd: directory });
    expect(run.code, run.stderr).toBe(0);
    expect(existsSync(path.join(directory, ".troupe"))).toBe(true);
    const after = await runCli(["tools", "list", "--json"], { cwd: directory });
    expect(names(after.stdout)).toEqual(names(before.stdout));
    for (const name of ["memory_save", "memory_search", "memory_forget", "thread_result", "file_delete"]) expect(names(before.stdout)).toContain(name);
    const tools = JSON.parse(before.stdout) as Array<{ name: string; agents: string[] }>;
    expect(tools.find((tool) => tool.name === "file_delete")?.agents).toEqual(["cleanup"]);
  });
});
