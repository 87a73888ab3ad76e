import path from "node:path";
import { describe, expect, it } from "vitest";
import { Troupe } from "../src/runtime/engine.js";
import { runCli, tempDir } from "./helpers.js";

describe("the command line for operating over time", () => {
  it("runs history, runs fork, runs delete, gc, schedule and grants: JSON out, bad input exit 2", async () => {
    const directory = tempDir();
    const env = { TROUPE_DATA_DIR: path.join(directory, "data"), TROUPE_WORKSPACE: path.join(directory, "ws"), TROUPE_PROVIDER: "offline" };
    const cli = async (args: string[]) => runCli(args, { cwd: directory, env });
    const json = async <T>(args: string[]): Promise<T> => {
      const result = await cli(args);
      if (result.code !== 0) throw new Error(`${args.join(" ")}: exit ${result.code}: ${result.stderr}`);
      return JSON.parse(result.stdout) as T;
    };

    // The run the commands work on is made through the library (the CLI's `run` is tested
    // elsewhere), on the same data directory the child processes read.
    const troupe = await Troupe.create({ provider: "offline", dataDir: env.TROUPE_DATA_DIR, workspace: env.TROUPE_WORKSPACE });
    // The audit's reflections are the critic's verdicts, which the default review skips on verified tool results: ask for the critic.
    const run = await troupe.run({ task: "compute 2+3 and then double it", threadId: "t1", review: "always" }).finally(() => troupe.shutdown());
    expect(run.answer).toContain("10");

    // Three independent sets of commands, each in order, side by side: runs and gc, schedules, grants.
    const runsAndGc = async (): Promise<void> => {
      const history = await json<Array<{ checkpointId: string; runId: string; after: string; next: string[] }>>(["runs", "history", "t1", "--json"]);
      expect(history.every((entry) => entry.runId === run.runId)).toBe(true);
      expect(history.at(-1)?.after).toMatch(/run ended: completed/);
      const fork = await json<{ runId: string; threadId: string; status: string; answer: string }>(["runs", "fork", run.runId, "--from", "s2", "--json"]);
      expect(fork).toMatchObject({ status: "completed" });
      expect(fork.threadId).not.toBe("t1");
      expect(fork.answer).toContain("10");
      const shown = await json<{ forkedFrom: { runId: string; subtaskId: string } }>(["runs", "show", fork.runId, "--json"]);
      expect(shown.forkedFrom).toMatchObject({ runId: run.runId, subtaskId: "s2" });

      const deleted = await json<{ runs: number; threads: { deleted: number } }>(["runs", "delete", run.runId, "--json"]);
      expect(deleted).toMatchObject({ runs: 1, threads: { deleted: 1 } });
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      const dry = await json<{ dryRun: boolean; runs: number }>(["gc", "--older-than", "1s", "--dry-run", "--json"]);
      expect(dry).toMatchObject({ dryRun: true, runs: 1 });
      const bad = await cli(["gc", "--older-than", "thirty days"]);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain("--older-than");
    };

    const schedules = async (): Promise<void> => {
      const schedule = await json<{ name: string; nextTick: number }>(["schedule", "add", "*/5 * * * *", "compute 1+1", "--name", "five", "--thread", "sched", "--catch-up", "once", "--json"]);
      expect(schedule).toMatchObject({ name: "five", nextTick: expect.any(Number) });
      expect((await json<Array<{ name: string; catchUp: string }>>(["schedule", "list", "--json"])).map((item) => [item.name, item.catchUp])).toEqual([["five", "once"]]);
      const badCron = await cli(["schedule", "add", "every day", "x"]);
      expect(badCron.code).toBe(2);
      expect(badCron.stderr).toContain("five fields");
      expect((await cli(["schedule", "remove", "five"])).code).toBe(0);
    };

    const grants = async (): Promise<void> => {
      const grant = await json<{ id: string }>(["grants", "add", "--agent", "research", "--tool", "file_write", "--level", "write", "--for", "1h", "--reason", "notes", "--by", "alice", "--json"]);
      const listed = await json<Array<{ id: string | null; source: string; live: boolean }>>(["grants", "list", "--agent", "research", "--json"]);
      expect(listed.find((item) => item.id === grant.id)).toMatchObject({ source: "runtime", live: true });
      await json(["grants", "revoke", grant.id, "--by", "bob", "--json"]);
      // Revoked: out of the grants in force, still listed with --all.
      const all = await json<Array<{ id: string | null; live: boolean; revokedBy: string | null }>>(["grants", "list", "--all", "--json"]);
      expect(all.find((item) => item.id === grant.id)).toMatchObject({ live: false, revokedBy: "bob" });
    };

    const busy = async (): Promise<void> => {
      expect((await cli(["run", "x", "--on-busy", "sometimes"])).code).toBe(2);
    };
    await Promise.all([runsAndGc(), schedules(), grants(), busy()]);
    // The grants' changes and the run's reflections, in the audit.
    const audit = await json<{ byTool: Record<string, unknown>; reflections: { total: number } | null }>(["audit", "stats", "--json"]);
    expect(audit.byTool["troupe.grants"]).toBeDefined();
    expect(audit.reflections?.total).toBeGreaterThan(0);
  });
});
