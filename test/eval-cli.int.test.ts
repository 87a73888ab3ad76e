import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { Comparison } from "../src/eval/compare.js";
import type { EvalResults } from "../src/eval/results.js";
import { runCli, tempDir } from "./helpers.js";

/** Writes a suite (one case a line) and returns its path. */
function writeSuite(directory: string, name: string, cases: Array<Record<string, unknown>>): string {
  const file = path.join(directory, name);
  writeFileSync(file, `${cases.map((item) => JSON.stringify(item)).join("\n")}\n`);
  return file;
}

const PERCENT = "compute 17% of 2,340 and save it to result.txt";
const SEVEN_SIX = "compute 6*7 and save it to answer.txt";

/**
 * Offline cases whose verdicts are known: one passing every kind of expectation at once, one
 * failing honestly as expected, and one failing each kind (cost cannot fail offline, where every
 * call is free: it fails in the record and replay test, on the fake OpenAI server's prices).
 */
const KNOWN: Array<{ case: Record<string, unknown>; passed: boolean; failed?: string[] }> = [
  {
    case: {
      id: "every-kind-passes",
      task: PERCENT,
      expect: {
        status: "completed",
        answer_includes: ["397.8"],
        answer_excludes: ["needs a language model"],
        answer_matches: "\\b397\\.8\\b",
        files: { "result.txt": "397.8\n", "nothing.txt": null },
        file_includes: { "result.txt": "397" },
        max_model_calls: 20,
        max_cost_usd: 0,
      },
    },
    passed: true,
  },
  { case: { id: "fails-honestly", task: "write a poem about the sea", expect: { status: "failed", answer_includes: "needs a language model" } }, passed: true },
  { case: { id: "status-fails", task: "write a poem about the sea" }, passed: false, failed: ["status"] },
  { case: { id: "includes-fails", task: SEVEN_SIX, expect: { answer_includes: ["43"] } }, passed: false, failed: ["answer_includes"] },
  { case: { id: "excludes-fails", task: SEVEN_SIX, expect: { answer_excludes: ["42"] } }, passed: false, failed: ["answer_excludes"] },
  { case: { id: "matches-fails", task: SEVEN_SIX, expect: { answer_matches: "^forty-two$" } }, passed: false, failed: ["answer_matches"] },
  { case: { id: "files-fails", task: SEVEN_SIX, expect: { files: { "answer.txt": "41", "missing.txt": "x" } } }, passed: false, failed: ["files", "files"] },
  { case: { id: "file-includes-fails", task: SEVEN_SIX, expect: { file_includes: { "answer.txt": ["42", "43"] } } }, passed: false, failed: ["file_includes"] },
  // SEVEN_SIX takes 1 model call on the default review: the planner's (its verified tool results skip the critic, and its plan states the answer).
  { case: { id: "calls-fail", task: SEVEN_SIX, expect: { max_model_calls: 0 } }, passed: false, failed: ["max_model_calls"] },
  { case: { id: "judge-not-judged", task: SEVEN_SIX, expect: { judge: "the answer says 42" } }, passed: true },
];

function evalResults(stdout: string): EvalResults {
  return JSON.parse(stdout) as EvalResults;
}

describe("troupe eval on the offline model", () => {
  it("gives each case its known verdict, naming the expectation that failed, and keeps every run", async () => {
    const directory = tempDir("troupe-eval-");
    const suite = writeSuite(
      directory,
      "known.jsonl",
      KNOWN.map((item) => item.case),
    );
    const dataDir = path.join(directory, "data");
    const result = await runCli(["eval", suite, "--json", "--data-dir", dataDir, "--concurrency", "3"], { cwd: directory });
    expect(result.code).toBe(1);
    const output = evalResults(result.stdout);
    expect(output).toMatchObject({ suite: "known.jsonl", provider: "offline:rules-v1", mode: "live", status: "completed", total: KNOWN.length, passed: 3, failed: KNOWN.length - 3 });
    expect(output.passRate).toBeCloseTo(3 / KNOWN.length, 3);
    expect(output.meetsMinPassRate).toBe(false);
    for (const known of KNOWN) {
      const verdict = output.cases.find((item) => item.id === known.case.id);
      expect(verdict?.passed, `${String(known.case.id)}: ${JSON.stringify(verdict?.failures)}`).toBe(known.passed);
      expect(verdict?.failures.map((failure) => failure.expectation)).toEqual(known.failed ?? []);
      expect(verdict?.runId).toMatch(/^run-/);
    }
    const byId = new Map(output.cases.map((item) => [item.id, item]));
    expect(byId.get("status-fails")?.failures[0]?.message).toMatch(/^expected completed, got failed \(stop reason failed\); not done: s1 failed \(unable\)/);
    expect(byId.get("includes-fails")?.failures[0]?.message).toBe('the answer does not include "43"');
    expect(byId.get("excludes-fails")?.failures[0]?.message).toBe('the answer includes "42"');
    expect(byId.get("matches-fails")?.failures[0]?.message).toBe("the answer does not match /^forty-two$/");
    expect(byId.get("files-fails")?.failures.map((failure) => failure.message)).toEqual(['answer.txt holds "42", expected "41"', "missing.txt was not written"]);
    expect(byId.get("file-includes-fails")?.failures[0]?.message).toBe('answer.txt does not include "43"');
    expect(byId.get("calls-fail")?.failures[0]?.message).toBe("1 model calls, more than 0");
    // The offline model never judges: the case is marked not judged and passes on its other expectations.
    expect(byId.get("judge-not-judged")?.judge).toMatchObject({ judged: false, rubric: "the answer says 42" });
    expect(byId.get("judge-not-judged")?.judge?.reason).toMatch(/offline rule-based model, which cannot judge/);
    expect(output).toMatchObject({ judged: 0, notJudged: 1 });
    expect(output.metrics.llmCalls).toBe(output.cases.reduce((sum, item) => sum + item.metrics.llmCalls, 0));
    // Progress went to stderr while the cases ran: one line per case with the running tally.
    expect(result.stderr).toMatch(new RegExp(`eval known\\.jsonl: ${KNOWN.length} cases on offline:rules-v1, 3 at a time`));
    expect(result.stderr).toMatch(new RegExp(`\\[${KNOWN.length}/${KNOWN.length}\\] . \\S+ .* 3 passing, ${KNOWN.length - 3} failing`));

    // Each case's run is kept: `troupe runs show` opens a failure.
    const failing = byId.get("status-fails");
    const shown = await runCli(["runs", "show", failing?.runId ?? "", "--json", "--data-dir", dataDir], { cwd: directory });
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ runId: failing?.runId, task: "write a poem about the sea", status: "failed" });
  });

  it("prints a table with the verdict, the failed expectations, calls, tokens, cost and time, and the failures with their runs", async () => {
    const directory = tempDir("troupe-eval-");
    const suite = writeSuite(directory, "table.jsonl", [
      { id: "saves", task: PERCENT, expect: { files: { "result.txt": "397.8" } } },
      { id: "wrong-file", task: SEVEN_SIX, expect: { files: { "answer.txt": "41" } } },
    ]);
    const result = await runCli(["eval", suite, "--data-dir", path.join(directory, "data")], { cwd: directory });
    expect(result.code).toBe(1);
    const lines = result.stdout.split("\n");
    expect(lines[0]).toMatch(/^case\s+verdict\s+failed expectations\s+calls\s+tokens\s+cost\s+time$/);
    expect(lines.find((line) => line.startsWith("saves"))).toMatch(/^saves\s+pass\s+\d+\s+[\d,]+\s+\$0\.0000\s+\d+(\.\d)? m?s$/);
    expect(lines.find((line) => line.startsWith("wrong-file"))).toMatch(/^wrong-file\s+FAIL\s+files\s+\d+/);
    expect(result.stdout).toContain('  - files: answer.txt holds "42", expected "41"');
    expect(result.stdout).toMatch(/run run-\S+ \(troupe runs show run-\S+\) · workspace \S+wrong-file/);
    expect(result.stdout).toMatch(/passed 1 of 2 \(50%\) · minimum 100% → not met/);
  });

  it("runs each case in its own workspace, in parallel, never seeing another case's files", async () => {
    const directory = tempDir("troupe-eval-");
    const read = "read shared.txt and save it to copy.txt";
    const suite = writeSuite(directory, "isolation.jsonl", [
      { id: "case-a", task: read, files: { "shared.txt": "from case A\n", "only-a.txt": "a\n" }, expect: { files: { "copy.txt": "from case A", "only-b.txt": null } } },
      { id: "case-b", task: read, files: { "shared.txt": "from case B\n", "only-b.txt": "b\n" }, expect: { files: { "copy.txt": "from case B", "only-a.txt": null } } },
      // No files of its own: the others' shared.txt must not be there for it to read.
      { id: "case-c", task: read, expect: { status: "failed", files: { "copy.txt": null, "shared.txt": null } } },
    ]);
    const result = await runCli(["eval", suite, "--json", "--concurrency", "3", "--data-dir", path.join(directory, "data")], { cwd: directory });
    const output = evalResults(result.stdout);
    expect(output.cases.map((item) => [item.id, item.passed, item.failures])).toEqual([
      ["case-a", true, []],
      ["case-b", true, []],
      ["case-c", true, []],
    ]);
    expect(result.code).toBe(0);
    expect(result.stderr).toContain("3 at a time");
    // Three workspaces, three threads, and no file written anywhere but in each case's own folder.
    expect(new Set(output.cases.map((item) => item.workspace)).size).toBe(3);
    expect(new Set(output.cases.map((item) => item.threadId)).size).toBe(3);
    const files = (workspace: string) => readdirSync(workspace, { recursive: true }).map(String).sort();
    const [a, b, c] = output.cases.map((item) => files(item.workspace));
    expect(a).toEqual(["copy.txt", "only-a.txt", "shared.txt"]);
    expect(b).toEqual(["copy.txt", "only-b.txt", "shared.txt"]);
    expect(c).toEqual([]);
    expect(existsSync(path.join(directory, "workspace"))).toBe(false);
  });

  it("exits 0 when the pass rate reaches --min-pass-rate and 1 below it, and writes the results with --out", async () => {
    const directory = tempDir("troupe-eval-");
    const suite = writeSuite(directory, "half.jsonl", [
      { id: "passes", task: SEVEN_SIX, expect: { files: { "answer.txt": "42" } } },
      { id: "fails", task: SEVEN_SIX, expect: { answer_includes: ["43"] } },
    ]);
    const dataDir = path.join(directory, "data");
    const out = path.join(directory, "results.json");
    const half = await runCli(["eval", suite, "--min-pass-rate", "0.5", "--out", out, "--data-dir", dataDir], { cwd: directory });
    expect(half.code).toBe(0);
    expect(half.stdout).toMatch(/passed 1 of 2 \(50%\) · minimum 50% → met/);
    const written = JSON.parse(readFileSync(out, "utf8")) as EvalResults;
    expect(written).toMatchObject({ suite: "half.jsonl", total: 2, passed: 1, passRate: 0.5, minPassRate: 0.5, meetsMinPassRate: true });
    const higher = await runCli(["eval", suite, "--min-pass-rate", "60%", "--json", "--data-dir", dataDir], { cwd: directory });
    expect(higher.code).toBe(1);
    expect(evalResults(higher.stdout)).toMatchObject({ passRate: 0.5, minPassRate: 0.6, meetsMinPassRate: false });
  });

  describe("exits 2 on a bad suite or flags, with one line naming the problem, and runs nothing", () => {
    const good = { id: "ok", task: SEVEN_SIX };
    const cases: Array<{ name: string; lines?: string[]; args?: string[]; message: RegExp }> = [
      { name: "an unknown key in expect, with its line", lines: [JSON.stringify(good), JSON.stringify({ id: "b", task: SEVEN_SIX, expect: { answer_include: ["42"] } })], message: /^troupe: suite\.jsonl line 2: expect: unknown key "answer_include"\n$/ },
      { name: "an unknown key in a case", lines: [JSON.stringify({ ...good, judge: "x" })], message: /^troupe: suite\.jsonl line 1: unknown key "judge" \(a judge's rubric goes in expect\.judge\)\n$/ },
      { name: "a line that is not JSON", lines: [JSON.stringify(good), "", '{"id": "b", task: 1}'], message: /^troupe: suite\.jsonl line 3: not a JSON object \(/ },
      { name: "a missing task", lines: [JSON.stringify({ id: "x" })], message: /^troupe: suite\.jsonl line 1: task: / },
      { name: "a duplicate id", lines: [JSON.stringify(good), JSON.stringify(good)], message: /^troupe: suite\.jsonl line 2: id "ok" is already used \(suite\.jsonl line 1\)\n$/ },
      { name: "a bad regular expression", lines: [JSON.stringify({ ...good, expect: { answer_matches: "(" } })], message: /^troupe: suite\.jsonl line 1: expect\.answer_matches: is not a regular expression troupe can run: error parsing regexp: missing closing \)/ },
      { name: "a file outside the workspace", lines: [JSON.stringify({ ...good, files: { "../x.txt": "x" } })], message: /^troupe: suite\.jsonl line 1: files\["\.\.\/x\.txt"\]: "\.\.\/x\.txt" is not a path inside the workspace: "\.\.\/x\.txt" leaves the workspace \("\.\."\)\n$/ },
      { name: "a bad status", lines: [JSON.stringify({ ...good, expect: { status: "done" } })], message: /^troupe: suite\.jsonl line 1: expect\.status: must be one of completed, failed, interrupted\n$/ },
      { name: "an empty suite", lines: [""], message: /^troupe: suite\.jsonl: the suite has no cases\n$/ },
      { name: "a missing suite file", args: ["eval", "nowhere.jsonl"], message: /^troupe: cannot read the suite nowhere\.jsonl: no such file\n$/ },
      { name: "a pass rate above 1", args: ["--min-pass-rate", "1.5"], message: /^troupe: --min-pass-rate must be a number from 0 to 1 \(or a percentage\), not "1\.5"\n$/ },
      { name: "a concurrency of 0", args: ["--concurrency", "0"], message: /^troupe: --concurrency must be a whole number from 1 to 16, not "0"\n$/ },
      { name: "--record with --replay", args: ["--record", "a", "--replay", "b"], message: /^troupe: --record and --replay cannot be used together\n$/ },
      { name: "--replay of a missing folder", args: ["--replay", "no-cassettes"], message: /^troupe: --replay no-cassettes: no such folder of cassettes\n$/ },
      { name: "--compare of a missing file", args: ["--compare", "earlier.json"], message: /^troupe: --compare earlier\.json: no such file\n$/ },
      { name: "--out in a missing folder", args: ["--out", "no/such/results.json"], message: /^troupe: --out no\/such\/results\.json: the folder \S+ does not exist\n$/ },
      { name: "an unknown provider", args: ["--provider", "gemini"], message: /^troupe: unknown provider "gemini"/ },
    ];
    for (const testCase of cases) {
      it(testCase.name, async () => {
        const directory = tempDir("troupe-eval-");
        writeFileSync(path.join(directory, "suite.jsonl"), `${(testCase.lines ?? [JSON.stringify(good)]).join("\n")}\n`);
        const args = testCase.args?.[0] === "eval" ? testCase.args : ["eval", "suite.jsonl", ...(testCase.args ?? [])];
        const result = await runCli([...args, "--data-dir", "data"], { cwd: directory });
        expect(result.stderr).toMatch(testCase.message);
        expect(result.code).toBe(2);
        expect(result.stdout).toBe("");
        // Nothing ran: no run was kept (an unknown provider stops before the database is opened too).
        expect(existsSync(path.join(directory, "data", "evals"))).toBe(false);
      });
    }
    it("refuses a --compare file that is not eval results", async () => {
      const directory = tempDir("troupe-eval-");
      writeFileSync(path.join(directory, "suite.jsonl"), `${JSON.stringify(good)}\n`);
      writeFileSync(path.join(directory, "earlier.json"), JSON.stringify({ runId: "run-1", status: "completed" }));
      const result = await runCli(["eval", "suite.jsonl", "--compare", "earlier.json"], { cwd: directory });
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/^troupe: --compare earlier\.json: not the results of troupe eval \(passRate: /);
    });
  });

  it("--compare shows, per case and in total, what changed against an earlier results file", async () => {
    const directory = tempDir("troupe-eval-");
    const dataDir = path.join(directory, "data");
    const earlierFile = path.join(directory, "earlier.json");
    const before = writeSuite(directory, "v1.jsonl", [
      { id: "steady", task: SEVEN_SIX, expect: { files: { "answer.txt": "42" } } },
      { id: "gets-fixed", task: SEVEN_SIX, expect: { answer_includes: ["43"] } },
      { id: "breaks", task: SEVEN_SIX, expect: { answer_includes: ["42"] } },
      { id: "dropped", task: SEVEN_SIX },
    ]);
    const first = await runCli(["eval", before, "--out", earlierFile, "--data-dir", dataDir], { cwd: directory });
    expect(first.code).toBe(1);
    const after = writeSuite(directory, "v2.jsonl", [
      { id: "steady", task: SEVEN_SIX, expect: { files: { "answer.txt": "42" } } },
      { id: "gets-fixed", task: SEVEN_SIX, expect: { answer_includes: ["42"] } },
      // A longer task: more tokens than before.
      { id: "breaks", task: `${SEVEN_SIX}, then copy answer.txt to answer-copy.txt`, expect: { answer_includes: ["43"] } },
      { id: "added", task: SEVEN_SIX },
    ]);
    const second = await runCli(["eval", after, "--compare", earlierFile, "--json", "--data-dir", dataDir], { cwd: directory });
    expect(second.code).toBe(1);
    const output = JSON.parse(second.stdout) as EvalResults & { comparison: Comparison };
    const comparison = output.comparison;
    expect(comparison).toMatchObject({ against: earlierFile, newlyPassing: ["gets-fixed"], newlyFailing: ["breaks"], added: ["added"], removed: ["dropped"] });
    expect(comparison.passRate).toEqual({ before: 0.75, after: 0.75, delta: 0 });
    const change = Object.fromEntries(comparison.cases.map((item) => [item.id, item]));
    expect(change.steady).toMatchObject({ change: "still passing", tokensDelta: 0, costDelta: 0 });
    expect(change.breaks?.change).toBe("newly failing");
    expect(change.breaks?.tokensDelta).toBeGreaterThan(0);
    expect(change.added).toMatchObject({ change: "new", tokensDelta: null });
    expect(change.dropped).toMatchObject({ change: "removed" });
    expect(comparison.tokens.delta).toBe(comparison.cases.reduce((sum, item) => sum + (item.tokensDelta ?? 0), 0));

    const table = await runCli(["eval", after, "--compare", earlierFile, "--data-dir", dataDir], { cwd: directory });
    expect(table.stdout).toContain(`compared with ${earlierFile}:`);
    expect(table.stdout).toContain("pass rate 75% → 75% (±0 points)");
    expect(table.stdout).toContain("newly passing: gets-fixed");
    expect(table.stdout).toContain("newly failing: breaks");
    expect(table.stdout).toContain("new cases: added");
    expect(table.stdout).toContain("removed cases: dropped");
    expect(table.stdout).toMatch(/ {2}breaks\s+newly failing\s+\+[\d,]+\s+±0/);
  });
});
