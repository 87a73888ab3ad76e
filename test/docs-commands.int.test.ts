import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { cloneFolder, docBlocks, expectAsDocumented, readerEnv, runDocument } from "./doc-commands.js";
import { ROOT } from "./helpers.js";

describe("the docs' commands, on a clone", () => {
  it("reads the tour and docs/cli.md's examples as blocks of commands, leaving synopses out", () => {
    const tour = docBlocks(path.join(ROOT, "README.md"), "## A five-minute tour");
    const lines = tour.flatMap((block) => block.commands.map((command) => command.line));
    expect(lines).toContain('npx troupe run "list the files and compute 2^10" --approve-plan --thread demo');
    expect(tour.flatMap((block) => block.commands).find((command) => command.line.startsWith("npx troupe run \"list the files"))?.expectedExit).toBe(3);
    expect(tour.flatMap((block) => block.commands).find((command) => command.line === "npx troupe serve")?.special?.kind).toBe("server");
    expect(tour.flatMap((block) => block.commands).find((command) => command.line === "npx troupe chat")?.special).toEqual({ kind: "person", prefix: "npx troupe chat", input: ["compute 6*7", "/quit"] });
    const cli = docBlocks(path.join(ROOT, "docs", "cli.md"));
    expect(cli.flatMap((block) => block.commands.map((command) => command.line))).toContain('echo "compute 12*12" | npx troupe run - --json');
    expect(cli.flatMap((block) => block.commands.map((command) => command.line)).some((line) => line.includes("[flags]"))).toBe(false);
  });

  it("runs the README's five-minute tour as written: each exit code as documented, no warning", { timeout: 600_000 }, async () => {
    const folder = cloneFolder();
    const results = await runDocument(docBlocks(path.join(ROOT, "README.md"), "## A five-minute tour"), folder, readerEnv());
    expectAsDocumented(results);
    // What the tour says it leaves: result.txt and mem.txt, and the eval's 13 cases all passing.
    expect(readFileSync(path.join(folder, "workspace", "result.txt"), "utf8")).toBe("397.8");
    expect(readFileSync(path.join(folder, "workspace", "mem.txt"), "utf8")).toBe("5");
    expect(results.find((result) => result.command.line.startsWith("npx troupe eval"))?.stdout).toMatch(/passed 13 of 13/);
    // The approved plan's answer is its template filled by code from the verified results: said once, with no claim left without a source.
    const approved = results.find((result) => result.command.line.startsWith("npx troupe resume demo --approve"));
    expect(approved?.stdout).toContain("answer: by template");
    expect(approved?.stdout.split("2^10 = 1024").length).toBe(2);
    expect(approved?.stdout.split("**Evidence**").length).toBeLessThanOrEqual(2);
    expect(approved?.stdout).not.toContain("no source found");
  });

  it("runs docs/cli.md's examples as written", { timeout: 600_000 }, async () => {
    const results = await runDocument(docBlocks(path.join(ROOT, "docs", "cli.md")), cloneFolder(), readerEnv());
    expect(results.length).toBeGreaterThan(10);
    expectAsDocumented(results);
  });
});
