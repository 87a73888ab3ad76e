import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { ToolOutcome } from "../src/tools/define-tool.js";
import { Troupe } from "../src/runtime/engine.js";
import { modelSetOf } from "../src/testing/model-set.js";
import { ScriptedChatModel } from "../src/testing/scripted-chat-model.js";
import { ROOT, tempDir } from "./helpers.js";

// A configured MCP server's schemas are programs in disguise. Checked in-process (as before), the
// recursive `anyOf` below froze troupe for every caller (2^40 steps), and the output pattern
// `^(a+)+$` ran on V8's backtracking RegExp inside the SDK client.

const HOSTILE = path.join(ROOT, "test/fixtures/mcp-hostile-schema-server.mjs");
const NOTES = path.join(ROOT, "test/fixtures/mcp-notes-server.mjs");

function callsReceived(log: string): string[] {
  try {
    return readFileSync(log, "utf8").trim().split("\n").filter(Boolean).map((line) => (JSON.parse(line) as { name: string }).name);
  } catch {
    return [];
  }
}

/** `{ next: { next: … } }`, `depth` levels with neither `x` nor `y`: every level fails both branches. */
function deepTree(depth: number): Record<string, unknown> {
  let tree: Record<string, unknown> = {};
  for (let level = 0; level < depth; level += 1) tree = { next: tree };
  return tree;
}

describe("an MCP server's hostile schemas are checked off the event loop", () => {
  it("another caller's calls finish while a 2^40-step argument check runs; the check is stopped at its deadline and the call never sent", async () => {
    const directory = tempDir();
    const log = path.join(directory, "calls.jsonl");
    const troupe = await Troupe.create({
      models: modelSetOf(new ScriptedChatModel({ steps: [] })),
      dataDir: path.join(directory, "data"),
      workspace: path.join(directory, "workspace"),
      toolsConfig: {
        mcp: {
          servers: {
            // The check's deadline is half the server's timeout, at most 5 s: long enough that the other server's three round trips end first on a busy machine.
            hostile: { command: process.execPath, args: [HOSTILE], env: { HOSTILE_CALL_LOG: log }, timeoutMs: 20_000 },
            notes: { command: process.execPath, args: [NOTES] },
          },
        },
      },
    });
    try {
      let hostileSettled = false;
      const hostile = troupe.callTool("hostile.walk", { tree: deepTree(40) }, { agent: "research" }).finally(() => {
        hostileSettled = true;
      });
      // Three round trips to another server, one after another, each while the check still runs.
      for (const message of ["one", "two", "three"]) {
        expect(await troupe.callTool("notes.echo", { message }, { agent: "research" })).toMatchObject({ ok: true, value: { text: `echo: ${message}` } });
        expect(hostileSettled).toBe(false);
      }
      const outcome: ToolOutcome = await hostile;
      expect(outcome).toMatchObject({ ok: false, error: { code: "timeout", message: expect.stringMatching(/^the arguments for hostile\.walk could not be checked against the server's schema within 5000 ms/) } });

      // The same schema still does its job: the shallow part in-process, the rest in the worker.
      expect(await troupe.callTool("hostile.walk", { tree: {}, label: 7 }, { agent: "research" })).toMatchObject({ ok: false, error: { code: "invalid_arguments", message: expect.stringContaining("/label must be string") } });
      expect(await troupe.callTool("hostile.walk", { tree: { next: {} } }, { agent: "research" })).toMatchObject({ ok: false, error: { code: "invalid_arguments", message: expect.stringContaining("/tree") } });
      expect(await troupe.callTool("hostile.walk", { tree: { x: 1, next: { y: 2 } } }, { agent: "research" })).toMatchObject({ ok: true, value: { text: "walked" } });
      // Only the valid call reached the server.
      expect(callsReceived(log)).toEqual(["walk"]);

      // The output schema's pattern runs on RE2 in the worker: a mismatch, found at once.
      let outputSettled = false;
      const shout = troupe.callTool("hostile.shout", { word: "a".repeat(40) }, { agent: "research" }).finally(() => {
        outputSettled = true;
      });
      expect(await shout).toMatchObject({ ok: false, error: { code: "mcp_failed", message: expect.stringMatching(/does not match the tool's output schema: \/loud must match pattern "\^\(a\+\)\+\$"/) } });
      expect(outputSettled).toBe(true);
      const rows = await troupe.store.audit.list();
      expect(rows.filter((row) => row.tool === "hostile.walk").map((row) => [row.status, row.errorCode])).toEqual([
        ["error", "timeout"],
        ["not_run", "invalid_arguments"],
        ["error", "invalid_arguments"],
        ["ok", null],
      ]);
    } finally {
      await troupe.shutdown();
    }
  });
});
