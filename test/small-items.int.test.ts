import { execFileSync } from "node:child_process";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseSuite } from "../src/eval/suite.js";
import { runCli, tempDir } from "./helpers.js";

// Each of these misbehaved on main: accepted, hung, spun, or answered 1 where a user's input or
// configuration was at fault (2), or printed a usage error on two lines.

const oneLine = (stderr: string): string[] => stderr.trim().split("\n");

describe("small breaks, each with a clear error", () => {
  it("refuses an eval case whose starting file is the workspace itself", () => {
    expect(() => parseSuite(JSON.stringify({ id: "dot", task: "x", files: { ".": "y" } }), "suite.jsonl")).toThrow('suite.jsonl line 1: files["."]: "." names the workspace itself, not a file in it');
    expect(() => parseSuite(JSON.stringify({ id: "dot", task: "x", expect: { files: { "./": null } } }), "suite.jsonl")).toThrow(/names the workspace itself/);
  });

  it("refuses a config agent whose model names an unknown provider, in agents list", async () => {
    const directory = tempDir();
    writeFileSync(path.join(directory, "troupe.config.json"), JSON.stringify({ agents: [{ name: "helper", description: "helps", tools: [], model: "nope:zzz", prompt: "help" }] }));
    const listed = await runCli(["agents", "list"], { cwd: directory });
    expect(listed.code).toBe(2);
    expect(oneLine(listed.stderr)).toEqual(['troupe: agents.0 (helper): model "nope:zzz" names an unknown provider "nope" (known: offline, openai, anthropic, ollama, openai-compatible)']);
  });

  it("answers at once when a suite or a cassette is a FIFO (on main: a hang)", async () => {
    const directory = tempDir();
    execFileSync("mkfifo", [path.join(directory, "suite.jsonl")]);
    const suite = await runCli(["eval", "suite.jsonl"], { cwd: directory });
    expect([suite.code, oneLine(suite.stderr)]).toEqual([2, ["troupe: cannot read the suite suite.jsonl: it is not a regular file (a FIFO, a socket or a device)"]]);
    writeFileSync(path.join(directory, "ok.jsonl"), JSON.stringify({ id: "c1", task: "compute 1+1" }));
    mkdirSync(path.join(directory, "cassettes"));
    execFileSync("mkfifo", [path.join(directory, "cassettes", "c1.json")]);
    const cassette = await runCli(["eval", "ok.jsonl", "--replay", "cassettes"], { cwd: directory });
    expect(cassette.code).toBe(2);
    expect(cassette.stderr).toMatch(/cassettes\/c1\.json is a FIFO, not a regular file/);
  });

  it("refuses a data directory or workspace under /proc at once (on main: 100 % CPU for ever)", async () => {
    const directory = tempDir();
    const data = await runCli(["run", "compute 1+1", "--data-dir", "/proc/troupe-x"], { cwd: directory });
    expect([data.code, oneLine(data.stderr)]).toEqual([2, ["troupe: the data directory /proc/troupe-x cannot be created (ENOENT)"]]);
  });

  it("answers 2 with what to do for a database file that is damaged or not a database", async () => {
    const directory = tempDir();
    const cases: Array<[string, (file: string) => void, string[]]> = [
      ["text", (file) => writeFileSync(file, "hello, this is not SQLite"), ["runs", "list"]],
      ["folder", (file) => mkdirSync(file), ["audit", "list"]],
      ["nowhere", (file) => symlinkSync("/nonexistent/troupe.db", file), ["run", "compute 1+1"]],
      ["random", (file) => writeFileSync(file, Buffer.alloc(65_536, 7)), ["memory", "list"]],
    ];
    for (const [name, make, args] of cases) {
      const data = path.join(directory, name);
      mkdirSync(data);
      make(path.join(data, "troupe.db"));
      const result = await runCli([...args, "--data-dir", data], { cwd: directory });
      expect([name, result.code], result.stderr).toEqual([name, 2]);
      expect(oneLine(result.stderr).at(-1)).toMatch(new RegExp(`^troupe: the database ${data.replace(/[/.]/g, "\\$&")}/troupe\\.db cannot be used \\(.+\\): restore it from a copy, or move it away to start a new one$`));
    }
  });

  it("prints a missing argument on one line", async () => {
    const result = await runCli(["resume"]);
    expect([result.code, oneLine(result.stderr)]).toEqual([2, ["troupe: missing required argument 'thread' (run with --help for usage)"]]);
  });
});
