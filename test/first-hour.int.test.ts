import { execFileSync, spawn } from "node:child_process";
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { CLI, cleanEnv, runCli, tempDir } from "./helpers.js";

/** A new folder to run the CLI in, with a few files a user might name. */
function folder(): string {
  const directory = tempDir("troupe-first-hour-");
  writeFileSync(path.join(directory, "answer.schema.json"), JSON.stringify({ type: "object", properties: { value: { type: "number" } }, required: ["value"] }));
  writeFileSync(path.join(directory, "not-a-schema.json"), JSON.stringify({ type: "nonsense" }));
  execFileSync("mkfifo", [path.join(directory, "a-fifo")]);
  return directory;
}

describe("bad input on the command line", () => {
  const cases: Array<[string, string[], Record<string, string>, RegExp]> = [
    ["a typed answer from the offline model", ["run", "compute 6*7", "--output-schema", "answer.schema.json"], {}, /^troupe: an output schema needs a model that writes typed answers \(JSON\), and offline:rules-v1 writes none/],
    ["an output schema that is not one", ["run", "compute 6*7", "--output-schema", "not-a-schema.json"], {}, /^troupe: the output schema is not a valid JSON Schema/],
    ["an output schema that is a FIFO", ["run", "compute 6*7", "--output-schema", "a-fifo"], {}, /^troupe: --output-schema a-fifo: .*a FIFO, not a regular file/],
    ["a webhook without its secret", ["run", "compute 6*7", "--webhook", "https://hooks.example.com/troupe"], {}, /^troupe: webhook: a webhook needs a secret/],
    ["a fork of a run that does not exist", ["runs", "fork", "run-nope", "--from", "s1"], {}, /^troupe: no run with id run-nope$/],
    ["a tool that does not exist", ["tools", "call", "no_such_tool", "--args", "{}"], {}, /^troupe: unknown tool "no_such_tool"/],
    ["a workspace that cannot be made", ["run", "compute 6*7", "--workspace", "/proc/nowhere/ws"], {}, /^troupe: the workspace \/proc\/nowhere\/ws cannot be used/],
    ["a config file that is not there", ["run", "compute 6*7", "--config", "missing.json"], {}, /^troupe: the config file .*missing\.json does not exist \(--config or TROUPE_CONFIG\)$/],
  ];
  it.each(cases)("%s: exit 2, one line on stderr, nothing written", async (_name, args, env, message) => {
    const directory = folder();
    const before = readdirSync(directory).sort();
    const result = await runCli(args, { cwd: directory, env });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr.trimEnd().split("\n")).toEqual([expect.stringMatching(message)]);
    expect(readdirSync(directory).sort()).toEqual(before);
    expect(existsSync(path.join(directory, ".troupe"))).toBe(false);
  });
});

describe("--config on troupe run", () => {
  it("reads the config file it names", async () => {
    const directory = folder();
    writeFileSync(path.join(directory, "strict.json"), JSON.stringify({ review: "always" }));
    const result = await runCli(["run", "compute 2+3", "--json", "--config", "strict.json"], { cwd: directory });
    expect(result.code).toBe(0);
    const output = JSON.parse(result.stdout) as { trace: { reviewDecisions: Array<{ review: string }> } };
    // review: always, from the file: the critic ran where the default (auto) skips a verified direct result.
    expect(output.trace.reviewDecisions[0]?.review).toBe("ran");
  });
});

describe("output into a pipe that closes early", () => {
  it("ends quietly, as shell tools do (troupe tools list | head -1)", async () => {
    const directory = folder();
    const child = spawn(process.execPath, [CLI, "tools", "list"], { cwd: directory, env: cleanEnv(), stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    // The reader takes one chunk and goes away, as head does.
    child.stdout?.once("data", () => child.stdout?.destroy());
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    expect(stderr).toBe("");
    expect(code).toBe(0);
  });
});
