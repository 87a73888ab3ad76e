import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { LoggingMessageNotificationSchema, ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { answerStep, planStep, subtask } from "../src/testing/script.js";
import { structured } from "./protocol-helpers.js";
import { cleanEnv, CLI, ROOT, tempDir, writeScript } from "./helpers.js";
import { waitFor } from "./wait.js";

const INSPECTOR = path.join(ROOT, "node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js");

function stdioClient(directory: string, env: Record<string, string> = {}): { client: Client; transport: StdioClientTransport } {
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, "mcp"], cwd: directory, env: { ...cleanEnv(), ...env }, stderr: "pipe" });
  return { client: new Client({ name: "troupe-test", version: "1.0.0" }), transport };
}

/** Runs the MCP Inspector's CLI mode against `troupe mcp` started in `directory`; its stdout parsed as JSON. */
function inspect(directory: string, args: string[]): Promise<{ code: number | null; json: Record<string, unknown>; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [INSPECTOR, "--cli", process.execPath, CLI, "mcp", ...args], {
      cwd: directory,
      env: { ...cleanEnv(), HOME: directory, MCP_CATALOG_PATH: path.join(directory, "inspector-catalog.json") },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => {
      try {
        resolve({ code, json: JSON.parse(stdout) as Record<string, unknown>, stderr });
      } catch {
        reject(new Error(`the inspector printed no JSON (exit ${code}): ${stdout}\n${stderr}`));
      }
    });
  });
}

describe("troupe mcp over stdio", () => {
  it("serves the SDK's Client: tools, a run with progress notifications, and its answer on stdout's protocol only", async () => {
    const directory = tempDir();
    const { client, transport } = stdioClient(directory);
    await client.connect(transport);
    try {
      expect((await client.listTools()).tools.map((tool) => tool.name).sort()).toEqual(["decide", "get_run", "list_runs", "memory_save", "memory_search", "resume_run", "run_task"]);
      const progress: string[] = [];
      const outcome = structured<{ status: string; answer: string }>(
        await client.callTool({ name: "run_task", arguments: { task: "compute 17% of 2,340 and save it to result.txt" } }, undefined, { onprogress: (step) => progress.push(step.message ?? "") }),
      );
      expect(outcome.status).toBe("completed");
      expect(outcome.answer).toContain("397.8");
      expect(progress).toEqual(expect.arrayContaining(["s1 started (execute): Compute 17% of 2,340", "s2 done: wrote result.txt (5 bytes, new file)"]));
      expect(readFileSync(path.join(directory, "workspace", "result.txt"), "utf8")).toBe("397.8");
    } finally {
      await client.close();
    }
  });

  it("offers logging, prompts (the config's templates too), completions and subscriptions over stdio as over HTTP", async () => {
    const directory = tempDir();
    writeFileSync(
      path.join(directory, "troupe.config.json"),
      JSON.stringify({ taskTemplates: [{ name: "percent", description: "A percentage of an amount", task: "compute {{share}} of {{amount}}", arguments: [{ name: "share", values: ["17%", "50%"] }, { name: "amount" }] }] }),
    );
    const { client, transport } = stdioClient(directory);
    await client.connect(transport);
    try {
      expect(client.getServerCapabilities()).toMatchObject({ logging: {}, completions: {}, prompts: {}, resources: { subscribe: true } });
      const logs: string[] = [];
      client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => void logs.push(`${notification.params.level} ${(notification.params.data as { message: string }).message}`));
      await client.setLoggingLevel("debug");
      const prompt = await client.getPrompt({ name: "percent", arguments: { share: "50%", amount: "80" } });
      expect((prompt.messages[0]?.content as { text: string }).text).toMatch(/Task: compute 50% of 80$/);
      const outcome = structured<{ run_id: string; status: string; answer: string }>(await client.callTool({ name: "run_task", arguments: { task: "compute 50% of 80", thread_id: "stdio-thread", approve_plan: true } }));
      expect(outcome.status).toBe("interrupted");
      expect(logs).toEqual(expect.arrayContaining(["info run started", "notice waiting for a person: plan-approval", "debug step planner started"]));
      expect((await client.complete({ ref: { type: "ref/prompt", name: "task" }, argument: { name: "thread_id", value: "stdio" } })).completion.values).toEqual(["stdio-thread"]);
      expect((await client.complete({ ref: { type: "ref/prompt", name: "percent" }, argument: { name: "share", value: "1" } })).completion.values).toEqual(["17%"]);
      const updated: string[] = [];
      client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => void updated.push(notification.params.uri));
      await client.subscribeResource({ uri: `troupe://runs/${outcome.run_id}` });
      const done = structured<{ status: string; answer: string }>(await client.callTool({ name: "resume_run", arguments: { run_id: outcome.run_id, decision: "approve" } }));
      expect(done.status).toBe("completed");
      expect(done.answer).toContain("40");
      expect(updated).toContain(`troupe://runs/${outcome.run_id}`);
    } finally {
      await client.close();
    }
  });

  it("keeps a run's progress when the client goes away, and the next troupe mcp picks it up by id", async () => {
    const directory = tempDir();
    const script = writeScript(directory, "slow.json", [
      planStep([
        subtask("s1", "execute", "Multiply", { tool: "calculator", args: { expression: { value: "6*7" } } }),
        subtask("s2", "execute", "Write it", { tool: "file_write", dependsOn: ["s1"], args: { path: { value: "product.txt" }, content: { value: "42" } } }),
      ]),
      // Two verified direct tool results: the default review skips the critic, and the synthesizer is slow.
      answerStep("42, saved to product.txt", { delayMs: 3_000 }),
    ]);
    // The next process's model: the plan and the subtasks are in the checkpoint; what is left is the answer.
    const rest = writeScript(directory, "rest.json", [answerStep("42, saved to product.txt")]);
    const first = stdioClient(directory, { TROUPE_PROVIDER: "scripted", TROUPE_SCRIPT: script });
    await first.client.connect(first.transport);
    const started = structured<{ run_id: string; status: string; note?: string }>(await first.client.callTool({ name: "run_task", arguments: { task: "multiply 6 by 7 and save it", wait_seconds: 1 } }));
    expect(started.status).toBe("running");
    expect(started.note).toMatch(/get_run with this run_id/);
    // The host goes away while the synthesizer is writing: the run is suspended at its last checkpoint.
    await first.client.close();
    const second = stdioClient(directory, { TROUPE_PROVIDER: "scripted", TROUPE_SCRIPT: rest });
    await second.client.connect(second.transport);
    try {
      const picked = structured<{ run_id: string; status: string; answer: string }>(await second.client.callTool({ name: "get_run", arguments: { run_id: started.run_id, wait_seconds: 60 } }));
      expect(picked).toMatchObject({ run_id: started.run_id, status: "completed", answer: "42, saved to product.txt" });
      expect(readFileSync(path.join(directory, "workspace", "product.txt"), "utf8")).toBe("42");
    } finally {
      await second.client.close();
    }
  });

  it("a line that is not JSON is refused and the session goes on; the end of stdin ends the process cleanly", async () => {
    const directory = tempDir();
    const child = spawn(process.execPath, [CLI, "mcp"], { cwd: directory, env: cleanEnv(), stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
    child.stdin.write("{this is not json\n");
    child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } })}\n`);
    await waitFor(() => (stdout.includes('"id":1') ? true : undefined), () => `the answer to initialize after a line that is not JSON (stdout so far: ${stdout})`, 50);
    const answer = JSON.parse(stdout.split("\n").find((line) => line.includes('"id":1')) ?? "{}") as { result?: { serverInfo?: { name: string } } };
    expect(answer.result?.serverInfo?.name).toBe("troupe");
    child.stdin.end();
    expect(await exited).toBe(0);
    // Nothing but protocol messages reached stdout.
    for (const line of stdout.split("\n").filter(Boolean)) expect(() => JSON.parse(line)).not.toThrow();
  });

  it("works with the MCP Inspector's CLI mode: it lists the tools and calls run_task", async () => {
    const directory = tempDir();
    expect(existsSync(INSPECTOR)).toBe(true);
    const listed = await inspect(directory, ["--method", "tools/list"]);
    expect(listed.code).toBe(0);
    expect((listed.json.tools as Array<{ name: string; annotations?: { readOnlyHint?: boolean } }>).map((tool) => [tool.name, tool.annotations?.readOnlyHint])).toEqual(
      expect.arrayContaining([
        ["run_task", false],
        ["get_run", true],
      ]),
    );
    const called = await inspect(directory, ["--method", "tools/call", "--tool-name", "run_task", "--tool-arg", "task=compute 17% of 2,340 and save it to result.txt"]);
    expect(called.code).toBe(0);
    expect(called.json.structuredContent).toMatchObject({ status: "completed", answer: expect.stringContaining("397.8") });
    expect(readFileSync(path.join(directory, "workspace", "result.txt"), "utf8")).toBe("397.8");
  });
});
