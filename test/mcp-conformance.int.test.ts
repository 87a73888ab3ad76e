import { spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { cleanEnv, ROOT, serveProcess, tempDir } from "./helpers.js";

/** The official suite's CLI (`@modelcontextprotocol/conformance`, a devDependency). */
const SUITE = path.join(ROOT, "node_modules/@modelcontextprotocol/conformance/dist/index.js");
const EXPECTED_FAILURES = path.join(ROOT, "test/fixtures/mcp-conformance-expected-failures.yml");

/** The scenarios the expected-failures file lists under `server:`, each with the comment above it (its reason). */
function expectedFailures(): Map<string, string> {
  const listed = new Map<string, string>();
  let section = "";
  let reason: string[] = [];
  for (const line of readFileSync(EXPECTED_FAILURES, "utf8").split("\n")) {
    const top = /^(\w+):\s*$/.exec(line);
    if (top) {
      section = top[1] as string;
      reason = [];
      continue;
    }
    const comment = /^\s+#\s?(.*)$/.exec(line);
    if (comment) {
      reason.push(comment[1] as string);
      continue;
    }
    const entry = /^\s+-\s+(\S+)\s*$/.exec(line);
    if (entry && section === "server") {
      listed.set(entry[1] as string, reason.join(" ").trim());
      reason = [];
    }
  }
  return listed;
}

interface Check {
  id: string;
  status: "SUCCESS" | "FAILURE" | "WARNING" | "INFO" | "SKIPPED";
  errorMessage?: string;
}

/** Each scenario's checks, from the result folders the suite writes (`server-<scenario>-<time>/checks.json`). */
function resultsIn(directory: string): Map<string, Check[]> {
  const results = new Map<string, Check[]>();
  for (const folder of readdirSync(directory)) {
    const scenario = /^server-(.+)-\d{4}-\d{2}-\d{2}T/.exec(folder)?.[1];
    if (scenario) results.set(scenario, JSON.parse(readFileSync(path.join(directory, folder, "checks.json"), "utf8")) as Check[]);
  }
  return results;
}

function runSuite(args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SUITE, ...args], { cwd: tempDir("troupe-conformance-cwd-"), env: cleanEnv(), stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, output }));
  });
}

describe("the official MCP conformance suite against troupe's /mcp", () => {
  it("passes every scenario but the fixture-only ones (each listed with why); an expected failure that passes fails the test", async () => {
    const expected = expectedFailures();
    expect(expected.size).toBeGreaterThan(0);
    for (const [scenario, reason] of expected) expect(reason, `${scenario} has no reason in ${EXPECTED_FAILURES}`).not.toBe("");
    // The suite cannot send an Authorization header: it runs against a troupe without keys, on loopback (the default).
    const served = await serveProcess(tempDir());
    try {
      const out = tempDir("troupe-conformance-");
      const run = await runSuite(["server", "--url", `${served.url}/mcp`, "--suite", "all", "--expected-failures", EXPECTED_FAILURES, "-o", out]);
      const results = resultsIn(out);
      // The suite counts a warning as a failure too (its baseline rule).
      const failing = [...results].filter(([, checks]) => checks.some((check) => check.status === "FAILURE" || check.status === "WARNING")).map(([scenario]) => scenario);
      const why = Object.fromEntries(
        [...results].map(([scenario, checks]) => [
          scenario,
          checks
            .filter((check) => check.status === "FAILURE" || check.status === "WARNING")
            .map((check) => `${check.id}: ${check.errorMessage ?? check.status}`)
            .join("; "),
        ]),
      );
      expect(results.size, run.output).toBe(32);
      // A scenario failing that is not listed is troupe's to fix; one listed that passes must leave the list.
      expect(failing.filter((scenario) => !expected.has(scenario)).map((scenario) => `${scenario}: ${why[scenario]}`)).toEqual([]);
      expect([...expected.keys()].filter((scenario) => !failing.includes(scenario))).toEqual([]);
      expect(run.code, run.output).toBe(0);
      expect([...results.keys()].filter((scenario) => !expected.has(scenario)).sort()).toEqual(
        ["dns-rebinding-protection", "logging-set-level", "ping", "prompts-list", "resources-list", "server-initialize", "server-sse-multiple-streams", "tools-call-error", "tools-call-simple-text", "tools-list"].sort(),
      );
      // docs/protocols.md lists every remaining failure.
      const docs = readFileSync(path.join(ROOT, "docs/protocols.md"), "utf8");
      expect([...expected.keys()].filter((scenario) => !docs.includes(`\`${scenario}\``))).toEqual([]);
    } finally {
      served.child.kill("SIGTERM");
      await served.exited;
    }
  });
});
