import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { RunResult } from "../src/core/run.js";
import { answerStep, finalStep, planStep, reviewStep, subtask, toolStep } from "../src/testing/script.js";
import { ROOT, runCli, tempDir, writeScript } from "./helpers.js";

describe("the offline model with the new tools", () => {
  it("searches the knowledge folder and runs code in the sandbox, end to end", async () => {
    const directory = tempDir();
    mkdirSync(path.join(directory, "knowledge"));
    writeFileSync(path.join(directory, "knowledge", "wal.md"), "# SQLite WAL\n\nWrite-ahead logging lets readers continue while a writer appends.\n");
    const search = await runCli(["run", "search the knowledge folder for write-ahead logging", "--json"], { cwd: directory });
    expect(search.code).toBe(0);
    const found = JSON.parse(search.stdout) as RunResult;
    expect(found.answer).toContain("1. SQLite WAL (wal.md): # SQLite WAL Write-ahead logging lets readers continue");
    const run = await runCli(["run", 'write "print(6 * 7)" to answer.py, then run python answer.py and save it to answer.txt', "--json"], { cwd: directory });
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout) as RunResult;
    expect(result.trace.toolCalls.map((call) => call.tool)).toEqual(["file_write", "code_run", "file_write"]);
    expect(readFileSync(path.join(directory, "workspace", "answer.txt"), "utf8")).toBe("42");
  });
});

describe("troupe tools and troupe audit", () => {
  it("audits direct calls, as the operator or as an agent, and lists, summarises and exports them", async () => {
    const directory = tempDir();
    const cli = (...args: string[]) => runCli(args, { cwd: directory });
    expect((await cli("tools", "call", "calculator", "--args", '{"expression":"6*7"}')).stdout.trim()).toBe("42");
    expect((await cli("tools", "call", "file_write", "--args", '{"path":"notes.txt","content":"hello"}')).code).toBe(0);
    const denied = await cli("tools", "call", "file_write", "--as", "research", "--args", '{"path":"x.txt","content":"x","token":"ghp_abcdefghijklmnopqrstuvwxyz0123"}');
    expect(denied.code).toBe(1);
    expect(existsSync(path.join(directory, "workspace", "x.txt"))).toBe(false);
    expect((await cli("tools", "call", "file_read", "--as", "research", "--args", '{"path":"notes.txt"}')).stdout).toContain("hello");
    expect((await cli("tools", "call", "file_delete", "--as", "execute", "--args", '{"path":"notes.txt"}')).code).toBe(1);
    expect((await cli("tools", "call", "file_read", "--as", "nobody-here")).code).toBe(2);

    const list = await cli("audit", "list", "--json");
    expect(list.code).toBe(0);
    const rows = JSON.parse(list.stdout) as Array<Record<string, unknown>>;
    expect(rows.map((row) => [row.agent, row.tool, row.decision, row.status])).toEqual([
      ["operator", "calculator", "allowed", "ok"],
      ["operator", "file_write", "allowed", "ok"],
      ["research", "file_write", "denied", "not_run"],
      ["research", "file_read", "allowed", "ok"],
      ["execute", "file_delete", "denied", "not_run"],
    ]);
    expect(rows[2]?.args).toBe('{"path":"x.txt","content":"x","token":"[redacted]"}');
    const byAgent = JSON.parse((await cli("audit", "list", "--agent", "research", "--json")).stdout) as unknown[];
    expect(byAgent).toHaveLength(2);
    const human = await cli("audit", "list", "--decision", "denied");
    expect(human.stdout.trim().split("\n")).toHaveLength(2);
    expect(human.stdout).toContain("permission_denied");

    const stats = JSON.parse((await cli("audit", "stats", "--json")).stdout) as Record<string, unknown>;
    expect(stats).toMatchObject({ total: 5, succeeded: 3, failed: 2, denied: 2, successRate: 0.6 });
    expect(stats.byAgent).toMatchObject({ operator: { total: 2, succeeded: 2 }, research: { total: 2, succeeded: 1, denied: 1 }, execute: { total: 1, denied: 1 } });
    expect(stats.byTool).toMatchObject({ file_write: { total: 2, succeeded: 1 } });
    expect((await cli("audit", "stats")).stdout).toContain("success rate 60.0%");

    const jsonl = await cli("audit", "export", "--format", "jsonl");
    expect(jsonl.stdout.trim().split("\n").map((line) => (JSON.parse(line) as { tool: string }).tool)).toEqual(["calculator", "file_write", "file_write", "file_read", "file_delete"]);
    const csvFile = path.join(directory, "audit.csv");
    const csv = await cli("audit", "export", "--format", "csv", "--output", csvFile, "--agent", "research");
    expect(csv.code).toBe(0);
    const lines = readFileSync(csvFile, "utf8").trim().split("\n");
    expect(lines[0]).toBe("id,at,runId,threadId,subtaskId,agent,tool,args,decision,status,level,grant,reason,resultPreview,errorCode,error,durationMs,attempts,cached,principal,callId");
    expect(lines).toHaveLength(3);
    expect(lines[1]).toContain('"{""path"":""x.txt"",""content"":""x"",""token"":""[redacted]""}"');
    expect((await cli("audit", "export", "--format", "xml")).code).toBe(2);
    // Nothing recorded yet elsewhere: a clean answer, nothing created.
    const empty = await runCli(["audit", "stats", "--json", "--data-dir", path.join(directory, "none")], { cwd: directory });
    expect(JSON.parse(empty.stdout)).toMatchObject({ total: 0 });
    expect(existsSync(path.join(directory, "none"))).toBe(false);
  });

  it("reads the tools section of troupe.config.json, and rejects a bad one with exit 2 naming the field", async () => {
    const directory = tempDir();
    writeFileSync(
      path.join(directory, "troupe.config.json"),
      JSON.stringify({
        budget: { maxModelCalls: 50 },
        tools: {
          permissions: { grants: [{ agent: "research", tool: "file_write", level: "WRITE", grantedBy: "alice" }] },
          mcp: { servers: { notes: { command: process.execPath, args: [path.join(ROOT, "test/fixtures/mcp-notes-server.mjs")] } } },
        },
      }),
    );
    const list = await runCli(["tools", "list", "--json"], { cwd: directory });
    expect(list.code).toBe(0);
    const tools = JSON.parse(list.stdout) as Array<{ name: string; agents: string[]; needsApproval: boolean; source: string }>;
    expect(tools.find((tool) => tool.name === "file_write")?.agents).toEqual(["research", "code", "execute"]);
    expect(tools.find((tool) => tool.name === "notes.echo")).toMatchObject({ source: "mcp:notes", agents: ["research", "execute"] });
    expect(tools.find((tool) => tool.name === "file_delete")?.needsApproval).toBe(true);
    // Risk follows what a tool can do: code_run can change or delete any workspace file, like file_delete.
    expect(tools.find((tool) => tool.name === "code_run")).toMatchObject({ riskLevel: "high", riskWhy: "runs code that can change or delete any workspace file", riskPerCall: true, needsApproval: true });
    expect(tools.find((tool) => tool.name === "file_write")).toMatchObject({ riskLevel: "medium", riskWhy: "creates or overwrites workspace files", powers: ["workspace.write"] });
    const call = await runCli(["tools", "call", "notes.echo", "--args", '{"message":"cli"}'], { cwd: directory });
    expect(call.stdout).toContain("echo: cli");
    const written = await runCli(["tools", "call", "file_write", "--as", "research", "--args", '{"path":"a.txt","content":"ok"}'], { cwd: directory });
    expect(written.code).toBe(0);

    writeFileSync(path.join(directory, "troupe.config.json"), JSON.stringify({ tools: { permissions: { grants: [{ agent: "x", tool: "y", level: "SUPER" }] } } }));
    const bad = await runCli(["tools", "list"], { cwd: directory });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/troupe\.config\.json: tools\.permissions\.grants\.0\.level/);
  });

  it("pauses a run for a high-risk tool and resumes it from another process with --approve", async () => {
    const directory = tempDir();
    writeFileSync(path.join(directory, "troupe.config.json"), JSON.stringify({ tools: { approval: { tools: ["file_write"] } } }));
    const env = (file: string) => ({ TROUPE_PROVIDER: "scripted", TROUPE_SCRIPT: file });
    const first = await runCli(["run", "write the report", "--thread", "tool-approval"], {
      cwd: directory,
      env: env(writeScript(directory, "one.json", [planStep([subtask("s1", "code", "Write report.txt")]), toolStep("s1", "file_write", { path: "report.txt", content: "report" })])),
    });
    expect(first.code).toBe(3);
    expect(first.stdout).toContain("The code agent wants to run the medium-risk tool file_write (subtask s1):");
    expect(first.stdout).toContain('"path": "report.txt"');
    expect(first.stdout).toContain("troupe resume tool-approval --approve");
    expect(existsSync(path.join(directory, "workspace", "report.txt"))).toBe(false);
    const second = await runCli(["resume", "tool-approval", "--approve", "--json"], {
      cwd: directory,
      env: env(writeScript(directory, "two.json", [finalStep("s1", "wrote report.txt", { contains: "report.txt" }), reviewStep(0.9), answerStep("report written")])),
    });
    expect(second.code).toBe(0);
    expect((JSON.parse(second.stdout) as RunResult).status).toBe("completed");
    expect(readFileSync(path.join(directory, "workspace", "report.txt"), "utf8")).toBe("report");
    const audit = JSON.parse((await runCli(["audit", "list", "--json"], { cwd: directory })).stdout) as Array<{ tool: string; decision: string }>;
    expect(audit.map((row) => [row.tool, row.decision])).toEqual([["file_write", "approved"]]);
  });

  it("survives a code_run whose value is 100 MiB: a clear error, exit 1, and the call in the audit trail", async () => {
    const directory = tempDir();
    const call = await runCli(["tools", "call", "code_run", "--args", JSON.stringify({ language: "javascript", code: '"z".repeat(100*1024*1024)' })], { cwd: directory });
    expect(call.code).toBe(1);
    expect(call.stderr).toContain("code_run failed (result_too_large): the script's value is larger than the 8388608-byte cap on results");
    const audit = JSON.parse((await runCli(["audit", "list", "--json"], { cwd: directory })).stdout) as Array<{ tool: string; status: string; errorCode: string }>;
    expect(audit.map((row) => [row.tool, row.status, row.errorCode])).toEqual([["code_run", "error", "result_too_large"]]);
  });
});
