import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openStore, type Store } from "../../store/index.js";
import type { AuditSink } from "../audit.js";
import type { ToolContext } from "../define-tool.js";
import { PermissionPolicy } from "../permissions.js";
import { ToolRegistry } from "../registry.js";
import { Stage } from "../sandbox/staged-run.js";
import { workspaceRoot } from "../workspace.js";
import { createCodeRunTool } from "./code-run.js";

const made: string[] = [];
const stores: Store[] = [];
afterEach(() => {
  for (const store of stores.splice(0)) void store.close();
  for (const directory of made.splice(0)) rmSync(directory, { recursive: true, force: true });
});

async function setup() {
  const directory = mkdtempSync(path.join(tmpdir(), "troupe-stage-"));
  made.push(directory);
  const store = await openStore(path.join(directory, "data"));
  stores.push(store);
  const workspace = await workspaceRoot(path.join(directory, "ws"));
  const stagingDir = path.join(directory, "stages");
  const tool = () => createCodeRunTool({ timeoutMs: 10_000, stagingDir }) as never;
  return { directory, store, workspace, stagingDir, tool };
}

const python = (code: string, extra: Record<string, unknown> = {}) => ({ language: "python", code, ...extra });
/** Appends a line to log.txt and writes out/result.txt: a duplicate run shows as a second line. */
const APPEND = python("open('/workspace/log.txt', 'a').write('ran\\n')\nimport os\nos.makedirs('/workspace/out', exist_ok=True)\nopen('/workspace/out/result.txt', 'w').write('42')\nprint('done')");

describe("code_run's workspace follows what its caller may change", () => {
  it("is read-only for an agent whose subtask declares no writes: a script cannot delete, overwrite or move a file", async () => {
    const { workspace, tool } = await setup();
    for (const name of ["a.txt", "b.txt", "c.txt"]) writeFileSync(path.join(workspace, name), name);
    const registry = new ToolRegistry().register(tool());
    const script = "import os\nfor f in os.listdir('/workspace'): os.remove('/workspace/' + f)";
    const outcome = await registry.call("code_run", python(script), { workspace, agent: "execute" });
    expect(outcome).toMatchObject({ ok: false, error: { code: "code_error", message: expect.stringMatching(/Read-only file system/) } });
    expect(readdirSync(workspace).sort()).toEqual(["a.txt", "b.txt", "c.txt"]);
    // Reading still works.
    const read = await registry.call("code_run", python("print(open('/workspace/a.txt').read())"), { workspace, agent: "execute" });
    expect(read).toMatchObject({ ok: true, value: { stdout: "a.txt\n" } });
  });

  it("applies a script's writes inside the paths its subtask declares, and refuses writes outside them and deletions, applying nothing", async () => {
    const { workspace, tool } = await setup();
    writeFileSync(path.join(workspace, "keep.txt"), "keep");
    const registry = new ToolRegistry().register(tool());
    const context: ToolContext = { workspace, agent: "code", writes: ["out/"] };
    const inside = await registry.call("code_run", python("import os\nos.makedirs('/workspace/out', exist_ok=True)\nopen('/workspace/out/r.txt','w').write('x')"), context);
    expect(inside).toMatchObject({ ok: true, value: { changed: [{ path: "out", action: "mkdir" }, { path: "out/r.txt", action: "write" }] } });
    expect(readFileSync(path.join(workspace, "out/r.txt"), "utf8")).toBe("x");
    const outside = await registry.call("code_run", python("open('/workspace/out/s.txt','w').write('y')\nopen('/workspace/keep.txt','w').write('changed')"), context);
    expect(outside).toMatchObject({ ok: false, error: { code: "undeclared_writes", message: expect.stringMatching(/wrote keep\.txt, outside the paths its subtask declares \(out\/\).*nothing it wrote was applied/) } });
    expect(existsSync(path.join(workspace, "out/s.txt"))).toBe(false);
    expect(readFileSync(path.join(workspace, "keep.txt"), "utf8")).toBe("keep");
    const deleting = await registry.call("code_run", python("import os\nos.remove('/workspace/out/r.txt')"), context);
    expect(deleting).toMatchObject({ ok: false, error: { code: "undeclared_writes", message: expect.stringMatching(/deleted out\/r\.txt: deleting needs writes: true, which a person approves/) } });
    expect(existsSync(path.join(workspace, "out/r.txt"))).toBe(true);
  });

  it("is high-risk with writes: true, and waits for a person's approval like file_delete", async () => {
    const { workspace, tool } = await setup();
    writeFileSync(path.join(workspace, "a.txt"), "a");
    const policy = new PermissionPolicy({ grants: [{ agent: "execute", tool: "code_run", level: "EXECUTE", grantedBy: "test" }] });
    const registry = new ToolRegistry({ policy }).register(tool());
    const refused = await registry.call("code_run", python("import os\nos.remove('/workspace/a.txt')", { writes: true }), { workspace, agent: "execute" });
    expect(refused).toMatchObject({ ok: false, error: { code: "approval_required" } });
    const asked: string[] = [];
    const approved = await registry.call("code_run", python("import os\nos.remove('/workspace/a.txt')", { writes: true }), {
      workspace,
      agent: "execute",
      requestApproval: (request) => {
        asked.push(`${request.riskLevel}: ${request.reason}`);
        return { approved: true };
      },
    });
    expect(asked).toEqual(["high: code_run is high-risk (it runs code that can change or delete any workspace file) and needs approval before it runs"]);
    expect(approved).toMatchObject({ ok: true, value: { changed: [{ path: "a.txt", action: "delete" }] } });
    expect(existsSync(path.join(workspace, "a.txt"))).toBe(false);
    // Without writes the same agent's script needs no approval: it cannot change anything.
    expect(await registry.call("code_run", python("print(1)"), { workspace, agent: "execute" })).toMatchObject({ ok: true });
  });
});

describe("a staged code_run cut short by a crash is settled, never unknown", () => {
  /** A registry whose sink commits the started row and never completes it (the process "dies"), after the call ran or before it could. */
  function crashing(store: Store, tool: () => never, after: "begin" | "effect") {
    const controller = new AbortController();
    const sink: AuditSink = {
      record: (entry) => store.audit.record(entry),
      begin: async (entry, effect) => {
        const id = await store.audit.begin(entry, effect);
        if (after === "begin") controller.abort();
        return id;
      },
      complete: () => Promise.reject(new Error("the process died before this")),
      findCall: (callId) => store.audit.findCall(callId),
    };
    return { registry: new ToolRegistry({ audit: sink }).register(tool()), signal: controller.signal };
  }

  it("runs it again when it died before its changes were applied: the workspace holds one run's effect", async () => {
    const { store, workspace, tool } = await setup();
    const dead = crashing(store, tool, "begin");
    const context = { workspace, runId: "run-1", agent: "code", writes: ["log.txt", "out/"], callId: "run-1/s1/1/1/abc" };
    expect(await dead.registry.call("code_run", APPEND, { ...context, signal: dead.signal })).toMatchObject({ ok: false });
    expect(existsSync(path.join(workspace, "log.txt"))).toBe(false);
    const live = new ToolRegistry({ audit: store.audit }).register(tool());
    const outcome = await live.call("code_run", APPEND, context);
    expect(outcome).toMatchObject({ ok: true, value: { stdout: "done\n" } });
    expect(readFileSync(path.join(workspace, "log.txt"), "utf8")).toBe("ran\n");
    const rows = await store.audit.list({ runId: "run-1" });
    expect(rows.map((row) => [row.status, row.reason])).toEqual([["ok", expect.stringContaining("run again after a crash: it had changed nothing")]]);
  });

  it("answers from its journal when it died after its changes were applied: the script does not run twice", async () => {
    const { store, workspace, tool, stagingDir } = await setup();
    const dead = crashing(store, tool, "effect");
    const context = { workspace, runId: "run-1", agent: "code", writes: ["log.txt", "out/"], callId: "run-1/s1/1/1/def" };
    expect(await dead.registry.call("code_run", APPEND, context)).toMatchObject({ ok: true });
    expect(readFileSync(path.join(workspace, "log.txt"), "utf8")).toBe("ran\n");
    const live = new ToolRegistry({ audit: store.audit }).register(tool());
    const outcome = await live.call("code_run", APPEND, context);
    expect(outcome).toMatchObject({ ok: true, value: { stdout: "done\n", changed: expect.arrayContaining([{ path: "log.txt", action: "write" }]) } });
    expect(readFileSync(path.join(workspace, "log.txt"), "utf8")).toBe("ran\n");
    expect((await store.audit.list({ runId: "run-1" }))[0]?.reason).toMatch(/settled after a crash: its journaled effect was completed/);
    // The row is complete: its stage is gone.
    expect(readdirSync(stagingDir)).toEqual([]);
  });

  it("finishes applying the journal of a run that died part way through applying it", async () => {
    const { store, workspace, tool, stagingDir } = await setup();
    writeFileSync(path.join(workspace, "old.txt"), "old");
    const callId = "run-1/s1/1/1/ghi";
    const context = { workspace, runId: "run-1", agent: "code", callId, writes: ["new.txt", "old.txt"] };
    // The row as a process that died while applying left it, and its stage: the script's output and a journal not yet applied.
    const id = await store.audit.begin(
      { at: Date.now(), runId: "run-1", threadId: null, subtaskId: null, agent: "code", principal: null, tool: "code_run", args: "{}", decision: "allowed", status: "started", level: "EXECUTE", grant: null, reason: null, resultPreview: null, errorCode: null, error: null, durationMs: 0, attempts: 0, cached: false, callId },
      { targets: [{ path: "(staged workspace)", before: { stage: callId }, after: null }] },
    );
    expect(id).toBeGreaterThan(0);
    const stage = new Stage(stagingDir, callId);
    mkdirSync(stage.tree, { recursive: true });
    writeFileSync(path.join(stage.tree, "new.txt"), "new");
    writeFileSync(path.join(stage.tree, "old.txt"), "rewritten");
    writeFileSync(path.join(workspace, "new.txt"), "new"); // the first change had been applied
    const value = { language: "python", stdout: "ok\n", stderr: "", exitCode: 0, durationMs: 5, truncated: false };
    await stage.writeJournal({
      changes: [
        { action: "write", path: "new.txt", bytes: 3, sha256: "-", created: true },
        { action: "write", path: "old.txt", bytes: 9, sha256: "-", created: false },
      ],
      value,
      applied: false,
    });
    const live = new ToolRegistry({ audit: store.audit }).register(tool());
    expect(await live.call("code_run", APPEND, context)).toMatchObject({ ok: true, value });
    expect(readFileSync(path.join(workspace, "old.txt"), "utf8")).toBe("rewritten");
    expect(existsSync(path.join(workspace, "log.txt"))).toBe(false); // the script did not run again
  });
});
