import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { Troupe } from "../src/runtime/engine.js";
import { modelSetOf } from "../src/testing/model-set.js";
import { answerStep, finalStep, planStep, reviewStep, subtask, toolStep } from "../src/testing/script.js";
import { type ScriptStep, ScriptedChatModel } from "../src/testing/scripted-chat-model.js";
import { ROOT, tempDir } from "./helpers.js";

const FIXTURE = path.join(ROOT, "test/fixtures/mcp-notes-server.mjs");

function callsReceived(log: string): Array<{ name: string }> {
  try {
    return readFileSync(log, "utf8").trim().split("\n").filter(Boolean).map((line) => JSON.parse(line) as { name: string });
  } catch {
    return [];
  }
}

async function engineWith(servers: Record<string, unknown>, extra: Record<string, unknown> = {}, script: { steps: ScriptStep[] } = { steps: [] }) {
  const directory = tempDir();
  const model = new ScriptedChatModel(script);
  const troupe = await Troupe.create({
    models: modelSetOf(model),
    dataDir: path.join(directory, "data"),
    workspace: path.join(directory, "workspace"),
    toolsConfig: { mcp: { servers }, ...extra },
  });
  return { troupe, directory, model };
}

describe("MCP tools from a real server over stdio", () => {
  it("lists the server's tools namespaced, with their schemas and levels from the annotations", async () => {
    const log = path.join(tempDir(), "calls.jsonl");
    const { troupe } = await engineWith({ notes: { command: process.execPath, args: [FIXTURE], env: { NOTES_CALL_LOG: log } } });
    try {
      const mcp = troupe.tools.list().filter((tool) => tool.source === "mcp:notes");
      expect(mcp.map((tool) => [tool.name, tool.permission, tool.riskLevel])).toEqual([
        ["notes.add_note", "EXECUTE", "medium"],
        ["notes.delete_notes", "EXECUTE", "high"],
        ["notes.echo", "READ", "low"],
        ["notes.fail", "EXECUTE", "medium"],
      ]);
      expect(troupe.tools.spec("notes.add_note").function.parameters).toMatchObject({ type: "object", properties: { text: { type: "string" } }, required: ["text"] });
      // Role defaults: research reads (so it reaches the read-only tool), nobody else gets EXECUTE on them.
      expect(troupe.agents.get("research")?.tools).toContain("notes.echo");
      expect(troupe.agents.get("research")?.tools).not.toContain("notes.add_note");
      expect(troupe.agents.get("code")?.tools).not.toContain("notes.echo");
    } finally {
      await troupe.shutdown();
    }
  });

  it("calls them under the same permissions, approvals and audit as built-in tools", async () => {
    const log = path.join(tempDir(), "calls.jsonl");
    const { troupe } = await engineWith(
      { notes: { command: process.execPath, args: [FIXTURE], env: { NOTES_CALL_LOG: log } } },
      { permissions: { grants: [{ agent: "execute", tool: "notes.*", level: "EXECUTE", grantedBy: "test" }] } },
    );
    try {
      // A server not marked trusted: its results are untrusted data (docs/trust.md).
      expect(await troupe.callTool("notes.echo", { message: "hi" }, { agent: "research" })).toEqual({
        ok: true,
        value: { text: "echo: hi" },
        summary: "echo: hi",
        label: { trust: "untrusted", sources: [{ kind: "mcp", name: "notes.echo" }] },
      });
      expect(await troupe.callTool("notes.add_note", { text: "secret plan" }, { agent: "research" })).toMatchObject({ ok: false, error: { code: "permission_denied" } });
      expect(await troupe.callTool("notes.add_note", { text: 42 }, { agent: "execute" })).toMatchObject({ ok: false, error: { code: "invalid_arguments" } });
      expect(await troupe.callTool("notes.add_note", { text: "groceries" }, { agent: "execute" })).toMatchObject({ ok: true, value: { text: "stored note 1", structured: { count: 1 } } });
      expect(await troupe.callTool("notes.delete_notes", {}, { agent: "execute" })).toMatchObject({ ok: false, error: { code: "approval_required" } });
      expect(await troupe.callTool("notes.fail", {}, { agent: "execute" })).toMatchObject({ ok: false, error: { code: "mcp_tool_error", message: "it failed on purpose" } });
      expect(await troupe.callTool("notes.delete_notes", {})).toMatchObject({ ok: true, value: { text: "deleted" } });
      // What reached the server: only the allowed, valid calls.
      expect(callsReceived(log).map((call) => call.name)).toEqual(["echo", "add_note", "delete_notes"]);
      const rows = await troupe.store.audit.list();
      expect(rows.map((row) => [row.agent, row.tool, row.decision, row.status, row.errorCode])).toEqual([
        ["research", "notes.echo", "allowed", "ok", null],
        ["research", "notes.add_note", "denied", "not_run", "permission_denied"],
        ["execute", "notes.add_note", "allowed", "not_run", "invalid_arguments"],
        ["execute", "notes.add_note", "allowed", "ok", null],
        ["execute", "notes.delete_notes", "denied", "not_run", "approval_required"],
        ["execute", "notes.fail", "allowed", "error", "mcp_tool_error"],
        ["operator", "notes.delete_notes", "allowed", "ok", null],
      ]);
      expect(rows[1]?.args).toBe('{"text":"secret plan"}');
    } finally {
      await troupe.shutdown();
    }
  });

  it("lets a worker use a server's tool in a run, audited with the run", async () => {
    const log = path.join(tempDir(), "calls.jsonl");
    const { troupe, model } = await engineWith({ notes: { command: process.execPath, args: [FIXTURE], env: { NOTES_CALL_LOG: log } } }, {}, {
      steps: [
        planStep([subtask("s1", "research", "Ask the notes server to echo hello")]),
        toolStep("s1", "notes.echo", { message: "hello" }),
        finalStep("s1", "the server said echo: hello", { contains: "echo: hello" }),
        reviewStep(0.9),
        answerStep("echo: hello"),
      ],
    });
    try {
      const result = await troupe.run({ task: "echo hello through MCP" });
      model.assertDone();
      expect(result.status).toBe("completed");
      expect(result.trace.toolCalls.map((call) => [call.tool, call.ok])).toEqual([["notes.echo", true]]);
      expect((await troupe.store.audit.list({ runId: result.runId })).map((row) => [row.agent, row.tool, row.subtaskId, row.status])).toEqual([["research", "notes.echo", "s1", "ok"]]);
    } finally {
      await troupe.shutdown();
    }
  });

  it("refuses to start with a server that cannot be reached, naming it, unless it is optional", async () => {
    await expect(engineWith({ broken: { command: "/nonexistent/mcp-server" } })).rejects.toThrow(/the MCP server "broken" \(\/nonexistent\/mcp-server\) could not be used/);
    const { troupe } = await engineWith({ broken: { command: "/nonexistent/mcp-server", optional: true } });
    expect(troupe.warnings.join(" ")).toContain('"broken"');
    await troupe.shutdown();
  });
});

describe("MCP tools over streamable HTTP", () => {
  it("lists and calls a server's tools", async () => {
    const server = spawn(process.execPath, [FIXTURE, "--http"], { stdio: ["ignore", "pipe", "inherit"] });
    try {
      const port = await new Promise<string>((resolve) => server.stdout.on("data", (chunk: Buffer) => {
        const match = /listening (\d+)/.exec(chunk.toString());
        if (match?.[1]) resolve(match[1]);
      }));
      // Marked trusted in the config: its results are the user's own data.
      const { troupe } = await engineWith({ remote: { url: `http://127.0.0.1:${port}/mcp`, trusted: true } });
      try {
        expect(troupe.tools.names().filter((name) => name.startsWith("remote."))).toEqual(["remote.add_note", "remote.delete_notes", "remote.echo", "remote.fail"]);
        expect(await troupe.callTool("remote.echo", { message: "over http" }, { agent: "research" })).toMatchObject({ ok: true, value: { text: "echo: over http" }, label: { trust: "trusted" } });
      } finally {
        await troupe.shutdown();
      }
    } finally {
      server.kill();
    }
  });
});
