import { execFile } from "node:child_process";
import { mkdirSync, symlinkSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { ROOT, tempDir } from "./helpers.js";
import { PATIENCE_MS } from "./wait.js";

const run = promisify(execFile);
const BENCH = path.join(ROOT, "dist/bench/main.js");

/** The built benchmark with PATH holding nothing but node: no bubblewrap (nor any other program) to be found. */
async function benchWithoutBubblewrap(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const bin = path.join(tempDir("troupe-bench-refusal-"), "bin");
  mkdirSync(bin);
  symlinkSync(process.execPath, path.join(bin, "node"));
  try {
    const { stdout, stderr } = await run(process.execPath, [BENCH, ...args], { cwd: ROOT, env: { ...process.env, PATH: bin }, timeout: PATIENCE_MS });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? "", stderr: failed.stderr ?? "" };
  }
}

// The benchmark refuses a section whose prerequisite is missing, naming it, instead of reporting
// what the missing piece did to its figures (crash trials without bubblewrap read "0 / 20
// completed, 260 effects missing"). Nothing heavy runs: every section asked for is refused.
describe("the benchmark without bubblewrap", () => {
  it("refuses the sections that run scripts in the sandbox, names bubblewrap, measures nothing and exits 2", async () => {
    const { code, stdout, stderr } = await benchWithoutBubblewrap(["--only", "crash-trials,offline-corpus,tools"]);
    expect(code).toBe(2);
    for (const section of ["crash-trials", "offline-corpus", "tools"]) expect(stderr).toMatch(new RegExp(`bench: ${section} refused: bubblewrap \\(bwrap\\) is not installed`));
    expect(stdout).toMatch(/^REFUSED \(not measured: something the section needs is missing here\)$/m);
    expect(stdout).toMatch(/^ {2}crash-trials: bubblewrap \(bwrap\) is not installed/m);
    // No section's figures: no crash trial completed or failed, no corpus pass rate, no tool timings.
    expect(stdout).not.toMatch(/completed|pass rate|calculator call/i);
    expect(stdout).toMatch(/crash duplicates not run.*refused: crash-trials, offline-corpus, tools/);
  });

  it("says so in the JSON report too, with no figures for the refused sections", async () => {
    const { code, stdout } = await benchWithoutBubblewrap(["--only", "crash-trials", "--json"]);
    expect(code).toBe(2);
    const report = JSON.parse(stdout) as { refused: Record<string, string>; crashTrials?: unknown; targets: Record<string, unknown> };
    expect(Object.keys(report.refused)).toEqual(["crash-trials"]);
    expect(report.refused["crash-trials"]).toMatch(/^bubblewrap \(bwrap\) is not installed/);
    expect(report.crashTrials).toBeUndefined();
    expect(report.targets.crashDuplicates).toBeUndefined();
  });
});
