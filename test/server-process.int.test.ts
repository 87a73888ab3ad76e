import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { answerStep, finalStep, planStep, reviewStep, subtask } from "../src/testing/script.js";
import { Troupe } from "../src/runtime/engine.js";
import { createLogger } from "../src/server/app.js";
import { startServer } from "../src/server/serve.js";
import { readScriptLog, ROOT, runCli, type ScriptLogLine, serveProcess, tempDir, writeScript } from "./helpers.js";
import { waitFor } from "./wait.js";

async function call<T = Record<string, unknown>>(url: string, init: { method?: string; body?: unknown } = {}): Promise<{ status: number; body: { code: string; data: T }; headers: Headers }> {
  const response = await fetch(url, {
    method: init.method ?? "GET",
    headers: init.body === undefined ? {} : { "content-type": "application/json" },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  return { status: response.status, body: (await response.json()) as { code: string; data: T }, headers: response.headers };
}

/** Submits a task the way a good client does: on 503 it waits for Retry-After and tries again. */
async function submit(url: string, body: Record<string, unknown>): Promise<string> {
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const response = await call<{ task_id: string }>(`${url}/api/v1/execute`, { method: "POST", body });
    if (response.status === 202) return response.body.data.task_id;
    if (response.status !== 503) throw new Error(`submit failed: ${response.status} ${JSON.stringify(response.body)}`);
    await sleep(Number(response.headers.get("retry-after") ?? "1") * 1000);
  }
  throw new Error("the server stayed overloaded");
}

const until = <T>(check: () => Promise<T | undefined>, what: string): Promise<T> => waitFor(check, what, 100);

async function count(url: string, status: string): Promise<number> {
  return (await call<{ total: number }>(`${url}/api/v1/tasks?status=${status}&limit=1`)).body.data.total;
}

const starts = (log: string, predicate: (line: ScriptLogLine) => boolean) => readScriptLog(log).filter((line) => line.phase === "start" && predicate(line)).length;

function runRow(directory: string, taskId: string): { status: string; suspended: string | null } {
  const db = new Database(path.join(directory, ".troupe", "troupe.db"), { readonly: true, fileMustExist: true });
  try {
    return db.prepare("SELECT status, suspended FROM runs WHERE id = ?").get(taskId) as { status: string; suspended: string | null };
  } finally {
    db.close();
  }
}

/** How many finished `run_subtask` writes hold this text (a subtask's saved result). */
function savedResults(directory: string, text: string): number {
  const file = path.join(directory, ".troupe", "troupe.db");
  if (!existsSync(file)) return 0;
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    // A finished subtask's task has saved its result among the checkpoint's pending writes.
    const row = db.prepare("SELECT COUNT(*) AS n FROM writes WHERE CAST(value AS TEXT) LIKE ?").get(`%${text}%`) as { n: number };
    return row.n;
  } catch {
    return 0;
  } finally {
    db.close();
  }
}

/** Processes whose command line holds `marker` (Linux /proc). */
function processesWith(marker: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(marker)) found.push(Number(entry));
    } catch {
      // the process ended meanwhile
    }
  }
  return found;
}

describe("troupe serve configuration", () => {
  const cases: Array<[string, string[], Record<string, string>, RegExp]> = [
    ["another address without API keys", ["--host", "0.0.0.0"], {}, /requires API keys: set TROUPE_API_KEYS/],
    ["--require-auth without keys", ["--require-auth"], {}, /^troupe: --require-auth \(TROUPE_REQUIRE_AUTH\) requires API keys: set TROUPE_API_KEYS .*, or serve 127\.0\.0\.1 without --require-auth$/m],
    ["a port that is not one", ["--port", "http"], {}, /^troupe: port:/],
    ["a bad TROUPE_MAX_RUNNING", [], { TROUPE_MAX_RUNNING: "0" }, /maxRunning/],
    ["a bad TROUPE_API_KEYS", [], { TROUPE_API_KEYS: "alice:" }, /TROUPE_API_KEYS entry 1 \(alice\): no key/],
    // The old form read this base64 key as the principal P2DNbwhv9ajp9rEF5vFfjg with the key "=".
    ["an unnamed base64 key", [], { TROUPE_API_KEYS: "P2DNbwhv9ajp9rEF5vFfjg==" }, /^troupe: TROUPE_API_KEYS entry 1: no name; each entry is name:key[^P]*$/m],
  ];
  for (const [name, args, env, message] of cases) {
    it(`refuses ${name} with exit 2 and writes nothing`, async () => {
      const directory = tempDir();
      const result = await runCli(["serve", "--port", "0", ...args], { cwd: directory, env });
      expect(result.code).toBe(2);
      expect(result.stderr.trim().split("\n")).toHaveLength(1);
      expect(result.stderr).toMatch(message);
      expect(existsSync(path.join(directory, ".troupe"))).toBe(false);
    });
  }
});

describe("troupe serve in a child process", () => {
  it("accepts 200 tasks submitted at once on the offline model and completes every one", async () => {
    const directory = tempDir();
    const server = await serveProcess(directory);
    const ids = await Promise.all(Array.from({ length: 200 }, (_, index) => submit(server.url, { task: `compute ${index} * 3` })));
    expect(new Set(ids).size).toBe(200);
    await until(async () => ((await count(server.url, "completed")) + (await count(server.url, "failed")) === 200 ? true : undefined), "200 tasks to finish");
    expect(await count(server.url, "failed")).toBe(0);
    for (const [index, id] of ids.entries()) {
      const view = await call<{ status: string; result: { answer: string } }>(`${server.url}/api/v1/tasks/${id}`);
      expect([id, view.body.data.status]).toEqual([id, "completed"]);
      expect(view.body.data.result.answer).toContain(`: ${index} * 3 = ${index * 3}`);
    }
    const health = (await call<{ tasks: { running: number; queued: number } }>(`${server.url}/health`)).body as unknown as { tasks: { running: number; queued: number } };
    expect(health.tasks).toMatchObject({ running: 0, queued: 0 });
    server.child.kill("SIGTERM");
    expect(await server.exited).toEqual({ code: 0, signal: null });
  });

  it("on SIGTERM refuses new tasks (503), lets the running step reach its checkpoint, and the next server finishes the task without redoing it", async () => {
    const directory = tempDir();
    const log = path.join(directory, "calls.jsonl");
    const plan = planStep([subtask("s1", "research", "Slow lookup"), subtask("s2", "research", "Use it", { dependsOn: ["s1"] })]);
    const server = await serveProcess(directory, {
      TROUPE_PROVIDER: "scripted",
      TROUPE_SCRIPT: writeScript(directory, "before.json", [plan, finalStep("s1", "slow result", { delayMs: 4000 })]),
      TROUPE_SCRIPT_LOG: log,
    });
    const id = await submit(server.url, { task: "look something up and use it" });
    await until(async () => (starts(log, (line) => line.subtask === "s1") === 1 ? true : undefined), "s1 to start");
    server.child.kill("SIGTERM");
    await until(async () => (/SIGTERM/.test(server.stderr()) ? true : undefined), "the server to see SIGTERM");
    const refused = await call(`${server.url}/api/v1/execute`, { method: "POST", body: { task: "one more" } });
    expect([refused.status, refused.body.code]).toEqual([503, "shutting_down"]);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await fetch(`${server.url}/health`)).status).toBe(503);
    expect(await server.exited).toEqual({ code: 0, signal: null });
    // The running step finished (drained at the superstep boundary), and the run is suspended.
    expect(readScriptLog(log).filter((line) => line.subtask === "s1").map((line) => line.phase)).toEqual(["start", "end"]);
    expect(runRow(directory, id)).toEqual({ status: "interrupted", suspended: "shutdown" });

    const next = await serveProcess(directory, {
      TROUPE_PROVIDER: "scripted",
      TROUPE_SCRIPT: writeScript(directory, "after.json", [finalStep("s2", "used it", { contains: "slow result" }), reviewStep(0.9), answerStep("done after restart")]),
      TROUPE_SCRIPT_LOG: log,
    });
    const view = await until(async () => {
      const response = await call<{ status: string; result: { answer: string } | null }>(`${next.url}/api/v1/tasks/${id}`);
      return ["completed", "failed"].includes(response.body.data.status) ? response.body.data : undefined;
    }, "the task to finish after the restart");
    expect(view).toMatchObject({ status: "completed", result: { answer: "done after restart" } });
    expect(starts(log, (line) => line.role === "planner")).toBe(1);
    expect(starts(log, (line) => line.subtask === "s1")).toBe(1);
    expect(starts(log, (line) => line.subtask === "s2")).toBe(1);
    const events = await fetch(`${next.url}/api/v1/tasks/${id}/events`).then((response) => response.text());
    expect(events).toMatch(/"type":"run-start"[^\n]*"resumed":true/);
    next.child.kill("SIGTERM");
    expect((await next.exited).code).toBe(0);
    // `troupe runs show --events` reads the same stored events the SSE stream (and the console) sent.
    const streamed = [...events.matchAll(/^id: (\d+)\nevent: (\S+)$/gm)].map((match) => [Number(match[1]), match[2]]);
    const shown = await runCli(["runs", "show", id, "--events", "--json"], { cwd: directory });
    expect(shown.code).toBe(0);
    expect((JSON.parse(shown.stdout) as Array<{ seq: number; type: string }>).map((event) => [event.seq, event.type])).toEqual(streamed);
    const lines = await runCli(["runs", "show", id, "--events"], { cwd: directory });
    expect(lines.stdout).toMatch(/^\s+1 {2}\d\d:\d\d:\d\d {2}run-start {8}started$/m);
    expect(lines.stdout).toMatch(/run-end\s+interrupted$/m);
    expect(lines.stdout).toMatch(/run-end\s+completed \(completed\)$/m);
  });

  it("stops a step that outlasts the grace period, marks the task interrupted, and re-runs only that step after restart", async () => {
    const directory = tempDir();
    const log = path.join(directory, "calls.jsonl");
    const plan = planStep([subtask("s1", "research", "Fast lookup"), subtask("s2", "research", "Very slow lookup")]);
    const server = await serveProcess(
      directory,
      {
        TROUPE_PROVIDER: "scripted",
        TROUPE_SCRIPT: writeScript(directory, "before.json", [plan, finalStep("s1", "fast result"), finalStep("s2", "never", { gate: "never" })]),
        TROUPE_SCRIPT_LOG: log,
        TROUPE_SHUTDOWN_GRACE_MS: "300",
      },
    );
    const id = await submit(server.url, { task: "look two things up" });
    await until(async () => (savedResults(directory, "fast result") > 0 && starts(log, (line) => line.subtask === "s2") === 1 ? true : undefined), "s1 saved and s2 running");
    server.child.kill("SIGTERM");
    expect(await server.exited).toEqual({ code: 0, signal: null });
    expect(runRow(directory, id)).toEqual({ status: "interrupted", suspended: "shutdown" });

    const next = await serveProcess(directory, {
      TROUPE_PROVIDER: "scripted",
      TROUPE_SCRIPT: writeScript(directory, "after.json", [finalStep("s2", "slow result"), reviewStep(0.9), answerStep("both found")]),
      TROUPE_SCRIPT_LOG: log,
    });
    const view = await until(async () => {
      const response = await call<{ status: string; plan: Array<{ id: string; status: string; attempts: number }> }>(`${next.url}/api/v1/tasks/${id}`);
      return ["completed", "failed"].includes(response.body.data.status) ? response.body.data : undefined;
    }, "the task to finish after the restart");
    expect(view.status).toBe("completed");
    expect(view.plan.map((item) => [item.id, item.status, item.attempts])).toEqual([
      ["s1", "done", 1],
      ["s2", "done", 1],
    ]);
    expect(starts(log, (line) => line.subtask === "s1")).toBe(1);
    expect(starts(log, (line) => line.subtask === "s2")).toBe(2);
    next.child.kill("SIGTERM");
    expect((await next.exited).code).toBe(0);
  });

  it("loses no accepted task to kill -9: after a restart every task completes and no finished step runs again", async () => {
    const directory = tempDir();
    const log = path.join(directory, "calls.jsonl");
    const tasks = 6;
    const plan = planStep([subtask("s1", "research", "Fast lookup"), subtask("s2", "research", "Slow lookup", { dependsOn: ["s1"] })], { times: tasks });
    const server = await serveProcess(
      directory,
      {
        TROUPE_PROVIDER: "scripted",
        TROUPE_SCRIPT: writeScript(directory, "before.json", [plan, finalStep("s1", "fast result", { times: tasks }), finalStep("s2", "never", { gate: "never", times: tasks })]),
        TROUPE_SCRIPT_LOG: log,
      },
      ["--max-running", "3"],
    );
    const ids: string[] = [];
    for (let index = 0; index < tasks; index += 1) ids.push(await submit(server.url, { task: `task number ${index}` }));
    // Three tasks are in their slow step (their first step saved); three wait in the queue.
    await until(async () => (starts(log, (line) => line.subtask === "s2") === 3 && savedResults(directory, "fast result") >= 3 ? true : undefined), "three tasks in their slow step");
    expect(await count(server.url, "queued")).toBe(3);
    server.child.kill("SIGKILL");
    expect((await server.exited).signal).toBe("SIGKILL");

    const next = await serveProcess(directory, {
      TROUPE_PROVIDER: "scripted",
      TROUPE_SCRIPT: writeScript(directory, "after.json", [
        { ...plan },
        finalStep("s1", "fast result", { times: tasks }),
        finalStep("s2", "slow result", { times: tasks, contains: "fast result" }),
        reviewStep(0.9, {}, { times: tasks }),
        answerStep("finished", { times: tasks }),
      ]),
      TROUPE_SCRIPT_LOG: log,
    });
    await until(async () => ((await count(next.url, "completed")) === tasks ? true : undefined), "every task to complete after the restart");
    for (const id of ids) {
      const view = await call<{ status: string; result: { answer: string } }>(`${next.url}/api/v1/tasks/${id}`);
      expect([id, view.body.data.status, view.body.data.result.answer]).toEqual([id, "completed", "finished"]);
    }
    // Each task planned once and ran its first step once, across both servers.
    expect(starts(log, (line) => line.role === "planner")).toBe(tasks);
    expect(starts(log, (line) => line.subtask === "s1")).toBe(tasks);
    // The three interrupted slow steps ran again; the three queued tasks ran theirs once.
    expect(starts(log, (line) => line.subtask === "s2")).toBe(tasks + 3);
    next.child.kill("SIGTERM");
    expect((await next.exited).code).toBe(0);
  });
});

describe("a poison task", () => {
  /** A folder whose config offers the crash MCP server's tools to the execute agent. */
  function crashSetup(tool: string) {
    const directory = tempDir();
    const calls = path.join(directory, "crash-calls.log");
    writeFileSync(
      path.join(directory, "troupe.config.json"),
      JSON.stringify({
        tools: {
          permissions: { grants: [{ agent: "execute", tool: "crash.*", level: "EXECUTE" }] },
          mcp: { servers: { crash: { command: process.execPath, args: [path.join(ROOT, "test/fixtures/mcp-crash-server.mjs")], env: { CRASH_CALL_LOG: calls } } } },
        },
      }),
    );
    const env = {
      TROUPE_PROVIDER: "scripted",
      TROUPE_SCRIPT: writeScript(directory, "plan.json", [
        planStep([subtask("s1", "execute", "Call the tool that kills troupe", { tool })]),
        reviewStep(0.9, {}, { times: 2 }),
        answerStep("done", { times: 2 }),
      ]),
    };
    const callCount = (): number => (existsSync(calls) ? readFileSync(calls, "utf8").trim().split("\n").length : 0);
    return { directory, env, callCount };
  }

  it("a call that killed the process is not run again after the restart: its outcome is unknown, a person is asked, and the task ends without another crash", async () => {
    const { directory, env, callCount } = crashSetup("crash.kill_host");
    const first = await serveProcess(directory, env);
    const id = await submit(first.url, { task: "run the poison tool" });
    expect((await first.exited).signal).toBe("SIGKILL");
    const second = await serveProcess(directory, env);
    // Whether it had its effect cannot be told: the task waits for a person instead of guessing.
    const waiting = await until(async () => {
      const response = await call<{ status: string; interrupt: { kind: string; payload: { reason: string } } | null }>(`${second.url}/api/v1/tasks/${id}`);
      return response.body.data.status === "interrupted" ? response.body.data : undefined;
    }, "the task to wait for a person");
    expect(waiting.interrupt).toMatchObject({ kind: "tool-approval", payload: { reason: expect.stringContaining("cannot be told from the workspace: approve to run it again, reject to leave it failed") } });
    expect(callCount()).toBe(1);
    await call(`${second.url}/api/v1/tasks/${id}/resume`, { method: "POST", body: { decision: "reject" } });
    const view = await until(async () => {
      const response = await call<{ status: string; plan: Array<{ id: string; status: string; error?: string }> }>(`${second.url}/api/v1/tasks/${id}`);
      return response.body.data.status === "failed" ? response.body.data : undefined;
    }, "the task to end");
    expect(callCount()).toBe(1);
    expect(view.plan[0]).toMatchObject({ status: "failed", error: expect.stringContaining("outcome_unknown") });
    expect((await fetch(`${second.url}/health`)).status).toBe(200);
    second.child.kill("SIGTERM");
    expect((await second.exited).code).toBe(0);
  });

  it("is failed, naming the crashes, once its process died twice in a row while it ran; the server that finds it stays up", async () => {
    // Declared idempotent, the tool is run again after the first crash: only the crash count stops it.
    const { directory, env, callCount } = crashSetup("crash.kill_host_again");
    const first = await serveProcess(directory, env);
    const id = await submit(first.url, { task: "run the poison tool" });
    expect((await first.exited).signal).toBe("SIGKILL");
    expect(runRow(directory, id).status).toBe("running");
    // The first restart takes it up again (one crash may be bad luck) and dies the same way.
    const second = await serveProcess(directory, env);
    expect((await second.exited).signal).toBe("SIGKILL");
    expect(callCount()).toBe(2);
    // The second restart fails it instead, and stays up.
    const third = await serveProcess(directory, env);
    const view = await until(async () => {
      const response = await call<{ status: string; stop_reason: string; error: string }>(`${third.url}/api/v1/tasks/${id}`);
      return response.body.data.status === "failed" ? response.body.data : undefined;
    }, "the poison task to be failed");
    expect(view.stop_reason).toBe("failed");
    expect(view.error).toContain("the process running this task died 2 times in a row while the task ran");
    expect((await fetch(`${third.url}/health`)).status).toBe(200);
    expect(callCount()).toBe(2);
    // Its audit trail shows the two calls that never finished.
    const audit = await runCli(["audit", "list", "--run", id, "--status", "started", "--json"], { cwd: directory });
    expect((JSON.parse(audit.stdout) as Array<{ tool: string }>).map((row) => row.tool)).toEqual(["crash.kill_host_again"]);
    // Other work goes on.
    const next = await submit(third.url, { task: "compute 6 * 7" });
    expect(next).toBeTruthy();
    third.child.kill("SIGTERM");
    expect((await third.exited).code).toBe(0);
  });
});

describe("graceful shutdown with the tool platform", () => {
  it("serves an MCP server's tools through the API, and its shutdown stops that server before it returns", async () => {
    const directory = tempDir();
    const marker = `mcp-marker-${process.pid}-${Date.now()}`;
    const fixture = path.join(ROOT, "test/fixtures/mcp-notes-server.mjs");
    const troupe = await Troupe.create({
      provider: "offline",
      dataDir: path.join(directory, "data"),
      workspace: path.join(directory, "workspace"),
      toolsConfig: { mcp: { servers: { notes: { command: process.execPath, args: [fixture, marker] } } } },
    });
    const server = await startServer({ troupe, config: { port: 0, rateLimitPerMinute: 0 }, logger: createLogger("warn") });
    let stopped = false;
    try {
      expect(processesWith(marker)).toHaveLength(1);
      const tools = (await call<{ tools: Array<{ name: string; source: string; permission: string }> }>(`${server.url}/api/v1/tools`)).body.data.tools;
      expect(tools.filter((tool) => tool.source === "mcp:notes").map((tool) => [tool.name, tool.permission])).toEqual([
        ["notes.add_note", "EXECUTE"],
        ["notes.delete_notes", "EXECUTE"],
        ["notes.echo", "READ"],
        ["notes.fail", "EXECUTE"],
      ]);
      const echoed = await call<{ result: unknown }>(`${server.url}/api/v1/tools/call`, { method: "POST", body: { tool_name: "notes.echo", parameters: { message: "hi" } } });
      expect(echoed.status).toBe(200);
      expect(JSON.stringify(echoed.body.data.result)).toContain("echo: hi");
      await server.shutdown("test");
      stopped = true;
      // Gone by the time shutdown returns: the engine's shutdown waits for its MCP clients to close.
      expect(processesWith(marker)).toEqual([]);
    } finally {
      if (!stopped) await server.shutdown("test failed");
    }
  });
});
