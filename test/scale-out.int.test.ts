/**
 * Scale-out on Postgres: API processes and worker processes sharing one database and its run
 * queue (each test its own database on the run's throwaway cluster), driven by the scripted
 * provider, whose call log names the process of every model call.
 */
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import type { PlannedSubtask } from "../src/core/plan.js";
import { Troupe } from "../src/runtime/engine.js";
import { modelSetOf } from "../src/testing/model-set.js";
import { answerStep, finalStep, planStep, reviewStep, subtask } from "../src/testing/script.js";
import { ScriptedChatModel } from "../src/testing/scripted-chat-model.js";
import { readScriptLog, runCli, tempDir, writeScript } from "./helpers.js";
import { startThrowawayPostgres } from "../src/testing/postgres-cluster.js";
import { schemaVersionOf } from "../src/store/database/migrator.js";
import { freshDatabase } from "./postgres.js";
import { call, serveApi, startWorker, stopAll, submit, taskStatus, until } from "./scale-out-helpers.js";

afterEach(stopAll);

const pad = (index: number): string => String(index).padStart(2, "0");

/** The status of a GET sent with this Host header (fetch will not set one). */
function statusWithHost(url: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const sent = httpRequest(url, { headers: { host } }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    sent.on("error", reject);
    sent.end();
  });
}

/** A deployment's shared settings: one database, one workspace, the scripted model, a short lease. */
async function deployment(steps: Parameters<typeof writeScript>[2], extra: Record<string, string> = {}) {
  const directory = tempDir("troupe-scale-");
  const workspace = path.join(directory, "workspace");
  mkdirSync(workspace, { recursive: true });
  const log = path.join(directory, "calls.jsonl");
  const env = {
    TROUPE_DATABASE_URL: await freshDatabase("scale"),
    TROUPE_PROVIDER: "scripted",
    TROUPE_SCRIPT: writeScript(directory, "script.json", steps),
    TROUPE_SCRIPT_LOG: log,
    TROUPE_WORKSPACE: workspace,
    TROUPE_LEASE_SECONDS: "15",
    ...extra,
  };
  return { directory, workspace, log, env };
}

describe("API processes and worker processes on one Postgres", () => {
  it("completes 20 tasks while one of two workers is killed with SIGKILL mid-way: its runs are taken over, each subtask finishes once, each file is written once", async () => {
    const tasks = 20;
    const steps = [
      ...Array.from({ length: tasks }, (_, index) =>
        planStep(
          [
            subtask("s1", "research", "Look the figure up"),
            subtask("s2", "execute", "Save it", {
              dependsOn: ["s1"],
              tool: "file_append",
              args: { path: { value: `out-${pad(index)}.txt` }, content: { value: `done ${pad(index)}\n` } },
            }),
          ] as PlannedSubtask[],
          { contains: `[task ${pad(index)}]` },
        ),
      ),
      // Each worker process reads its own copy of the script: room for every task on either.
      finalStep("s1", "the figure is 42", { delayMs: 2_500, times: tasks * 2 }),
      reviewStep(0.9, {}, { times: tasks * 2 }),
      answerStep("saved", { times: tasks * 2 }),
    ];
    const { directory, workspace, log, env } = await deployment(steps);
    const api = await serveApi(directory, env);
    const doomed = await startWorker(directory, env, 5);
    const survivor = await startWorker(directory, env, 5);
    const ids: string[] = [];
    for (let index = 0; index < tasks; index += 1) ids.push(await submit(api.url, { task: `look the figure up and save it [task ${pad(index)}]` }));

    // Kill the doomed worker while it is inside model calls of s1, and none of its s1 calls ended in the last half second
    // (a call that had just ended may not have its result saved yet: it would run again, rightly).
    const ofDoomed = (phase: string) => readScriptLog(log).filter((line) => line.pid === doomed.pid && line.subtask === "s1" && line.phase === phase);
    await until(() => {
      const starts = ofDoomed("start");
      const ends = ofDoomed("end");
      const lastEnd = Math.max(0, ...ends.map((line) => (line as unknown as { at: number }).at));
      return ends.length >= 2 && starts.length > ends.length && Date.now() - lastEnd > 500 ? true : undefined;
    }, "the doomed worker to be inside s1 calls");
    doomed.child.kill("SIGKILL");
    expect((await doomed.exited).signal).toBe("SIGKILL");
    // Counted once it is dead: a call it began between a look at the log and the kill was cut short too.
    const inFlight = ofDoomed("start").length - ofDoomed("end").length;

    await until(async () => {
      const statuses = await Promise.all(ids.map((id) => taskStatus(api.url, id)));
      return statuses.every((status) => status === "completed" || status === "failed") ? statuses : undefined;
    }, "every task to finish");
    for (const id of ids) expect([id, await taskStatus(api.url, id)]).toEqual([id, "completed"]);

    // Each result file written once (the write-ahead audit settles a call the dead worker had begun).
    for (let index = 0; index < tasks; index += 1) {
      expect(readFileSync(path.join(workspace, `out-${pad(index)}.txt`), "utf8")).toBe(`done ${pad(index)}\n`);
    }
    // Each s1 finished once: only the calls cut short by the kill ran again.
    const lines = readScriptLog(log).filter((line) => line.subtask === "s1");
    expect(lines.filter((line) => line.phase === "end")).toHaveLength(tasks);
    expect(lines.filter((line) => line.phase === "start")).toHaveLength(tasks + inFlight);
    expect(readScriptLog(log).filter((line) => line.role === "planner" && line.phase === "end").length).toBeLessThanOrEqual(tasks + inFlight);
    // The survivor says it took runs over.
    const workers = (await call<{ items: Array<{ id: string; lease_takeovers: number; alive: boolean }> }>(`${api.url}/api/v1/workers`)).body.data.items;
    // Every run the dead worker held, whatever it was doing: at least those inside s1.
    const takeovers = workers.find((worker) => worker.id === survivor.worker)?.lease_takeovers ?? 0;
    expect(workers.find((worker) => worker.id === survivor.worker)?.alive).toBe(true);
    expect(takeovers).toBeGreaterThanOrEqual(inFlight);
    const metrics = await (await fetch(`${survivor.url}/metrics`)).text();
    expect(metrics).toMatch(new RegExp(`agent_lease_takeovers_total\\{worker="${survivor.worker}"\\} ${takeovers}`));
    // A worker's /metrics and /health (no keys) answer only to names of this machine: not to a rebound one.
    expect(await statusWithHost(`${survivor.url}/metrics`, "evil.example.com")).toBe(421);
    expect(await statusWithHost(`${survivor.url}/health`, "evil.example.com")).toBe(421);
    expect(await statusWithHost(`${survivor.url}/health`, new URL(survivor.url).host)).toBe(200);
    // And the API's health reports the database, the queue and both workers (the dead one silent).
    const health = (await (await fetch(`${api.url}/health`)).json()) as { ready: boolean; checks: { queue: { ok: boolean; depth: number } }; workers: Array<{ id: string }> };
    expect(health.ready).toBe(true);
    expect(health.checks.queue).toMatchObject({ ok: true, depth: 0 });
  });

  it("resumes a run on a worker when a person approves it through another API process, and streams its events to clients of either", async () => {
    // One subtask: its worker's text is the answer (the fast route), no synthesizer call.
    const steps = [planStep([subtask("s1", "research", "Look it up")]), finalStep("s1", "found it"), reviewStep(0.9)];
    const { directory, log, env } = await deployment(steps);
    const first = await serveApi(directory, env);
    const second = await serveApi(directory, env);
    const worker = await startWorker(directory, env, 2);
    const id = await submit(first.url, { task: "look it up, with my approval", approve_plan: true });
    await until(async () => ((await taskStatus(second.url, id)) === "interrupted" ? true : undefined), "the plan to wait for approval");
    // A stream opened on the first API process before the approval, kept open across it.
    const stream = fetch(`${first.url}/api/v1/tasks/${id}/events`).then((response) => response.text());
    await sleep(300);
    const approved = await call<{ status: string }>(`${second.url}/api/v1/tasks/${id}/resume`, { method: "POST", body: { decision: "approve" } });
    expect([approved.status, approved.body.data.status]).toEqual([202, "queued"]);
    await until(async () => ((await taskStatus(first.url, id)) === "completed" ? true : undefined), "the run to complete");
    const view = (await call<{ result: { answer: string } }>(`${first.url}/api/v1/tasks/${id}`)).body.data;
    expect(view.result.answer).toBe("found it");
    // Every model call was the worker's: neither API process ran anything.
    expect(new Set(readScriptLog(log).map((line) => line.pid))).toEqual(new Set([worker.pid]));
    const text = await stream;
    const types = [...text.matchAll(/^event: (\S+)$/gm)].map((match) => match[1]);
    expect(types).toContain("approval-request");
    expect(types.filter((type) => type === "run-start")).toHaveLength(2);
    expect(types.at(-1)).toBe("run-end");
    expect(text).toMatch(/"type":"run-end","status":"completed"/);
    // The second API process streams the same stored events.
    const replay = await (await fetch(`${second.url}/api/v1/tasks/${id}/events`)).text();
    expect([...replay.matchAll(/^id: (\d+)$/gm)].map((match) => Number(match[1]))).toEqual([...text.matchAll(/^id: (\d+)$/gm)].map((match) => Number(match[1])));
  });

  it("cancels a run from an API process while a worker drives it: the worker stops it, records it cancelled, and the cancel answers with it", async () => {
    // s1's call never replies on its own (a gate nobody opens): only the cancel can end it.
    const steps = [planStep([subtask("s1", "research", "Take forever")]), finalStep("s1", "never", { gate: "never" })];
    const { directory, log, env } = await deployment(steps);
    const api = await serveApi(directory, env);
    const worker = await startWorker(directory, env, 2);
    const id = await submit(api.url, { task: "take forever" });
    await until(() => (readScriptLog(log).some((line) => line.subtask === "s1" && line.phase === "start") ? true : undefined), "s1 to start on the worker");
    const cancelled = await call<{ status: string }>(`${api.url}/api/v1/tasks/${id}/cancel`, { method: "POST" });
    expect([cancelled.status, cancelled.body.data.status]).toEqual([200, "cancelled"]);
    const events = await (await fetch(`${api.url}/api/v1/tasks/${id}/events`)).text();
    expect(events).toMatch(/"type":"run-end","status":"cancelled"/);
    // The worker is free again, and a cancelled run is no one's: the queue is empty.
    const health = (await (await fetch(`${worker.url}/health`)).json()) as { worker: { held: number }; checks: { queue: { depth: number } } };
    expect(health.worker.held).toBe(0);
    expect(health.checks.queue.depth).toBe(0);
    expect((await call(`${api.url}/api/v1/tasks/${id}/cancel`, { method: "POST" })).status).toBe(409);
  });

  it("drains a worker on SIGTERM: its runs go back to the queue at their last checkpoint and another worker finishes them without redoing finished steps", async () => {
    const steps = [
      planStep([subtask("s1", "research", "First"), subtask("s2", "research", "Second", { dependsOn: ["s1"] })], { times: 2 }),
      finalStep("s1", "first done", { delayMs: 1_500, times: 2 }),
      finalStep("s2", "second done", { delayMs: 1_500, times: 2 }),
      reviewStep(0.9, {}, { times: 2 }),
      answerStep("both done", { times: 2 }),
    ];
    const { directory, log, env } = await deployment(steps, { TROUPE_SHUTDOWN_GRACE_MS: "20000" });
    const api = await serveApi(directory, env);
    const workers = [await startWorker(directory, env, 2), await startWorker(directory, env, 2)];
    const id = await submit(api.url, { task: "two steps" });
    const s1 = await until(() => readScriptLog(log).find((line) => line.subtask === "s1" && line.phase === "start"), "s1 to start");
    // The worker that took the run is drained while s1 runs: s1 finishes (its step reaches the checkpoint), s2 does not start there.
    const draining = workers.find((worker) => worker.pid === s1.pid) as (typeof workers)[0];
    const other = workers.find((worker) => worker !== draining) as (typeof workers)[0];
    draining.child.kill("SIGTERM");
    expect((await draining.exited).code).toBe(0);
    await until(async () => ((await taskStatus(api.url, id)) === "completed" ? true : undefined), "the run to finish on the other worker");
    const lines = readScriptLog(log);
    expect(lines.filter((line) => line.subtask === "s1" && line.phase === "end").map((line) => line.pid)).toEqual([draining.pid]);
    expect(lines.filter((line) => line.subtask === "s2" && line.phase === "end").map((line) => line.pid)).toEqual([other.pid]);
    const events = await (await fetch(`${api.url}/api/v1/tasks/${id}/events`)).text();
    expect(events).toMatch(/"type":"run-end","status":"interrupted"/);
    expect(events).toMatch(/"type":"run-start"[^\n]*"resumed":true/);
  });
});

describe("when the database goes away", () => {
  it("finishes a run whose database restarted under it, from its last checkpoint, without redoing a finished step; the API answers 503 with a code meanwhile", async () => {
    // A cluster of its own: this test restarts it.
    const cluster = await startThrowawayPostgres();
    try {
      const directory = tempDir("troupe-restart-");
      const log = path.join(directory, "calls.jsonl");
      const steps = [
        planStep([subtask("s1", "research", "First"), subtask("s2", "research", "Second", { dependsOn: ["s1"] })], { times: 2 }),
        finalStep("s1", "first done", { times: 2 }),
        finalStep("s2", "second done", { delayMs: 4_000, times: 2 }),
        reviewStep(0.9, {}, { times: 2 }),
        answerStep("both done despite the restart", { times: 2 }),
      ];
      const env = {
        TROUPE_DATABASE_URL: await cluster.database("restart"),
        TROUPE_PROVIDER: "scripted",
        TROUPE_SCRIPT: writeScript(directory, "script.json", steps),
        TROUPE_SCRIPT_LOG: log,
        TROUPE_LEASE_SECONDS: "15",
      };
      const api = await serveApi(directory, env);
      await startWorker(directory, env, 2);
      const id = await submit(api.url, { task: "two steps across a restart" });
      await until(() => (readScriptLog(log).some((line) => line.subtask === "s2" && line.phase === "start") ? true : undefined), "s2 to start");
      await cluster.stop("fast");
      const down = await fetch(`${api.url}/health`);
      expect(down.status).toBe(503);
      expect(((await down.json()) as { code: string }).code).toBe("database_unreachable");
      await sleep(1_000);
      await cluster.start();
      await until(async () => ((await fetch(`${api.url}/health`)).status === 200 ? true : undefined), "the API to be ready again");
      await until(async () => ((await taskStatus(api.url, id)) === "completed" ? true : undefined), "the run to finish after the restart");
      const view = (await call<{ result: { answer: string } }>(`${api.url}/api/v1/tasks/${id}`)).body.data;
      expect(view.result.answer).toBe("both done despite the restart");
      const lines = readScriptLog(log);
      expect(lines.filter((line) => line.subtask === "s1" && line.phase === "end")).toHaveLength(1);
      expect(lines.filter((line) => line.subtask === "s2" && line.phase === "end")).toHaveLength(1);
    } finally {
      await stopAll();
      await cluster.destroy();
    }
  });
});

describe("evals on Postgres", () => {
  it("stores an eval submitted to an API process that runs nothing; a worker takes it up and runs it, and its events stream from the API", async () => {
    const directory = tempDir("troupe-evals-");
    const env = { TROUPE_DATABASE_URL: await freshDatabase("evals"), TROUPE_PROVIDER: "offline", TROUPE_LEASE_SECONDS: "15" };
    const api = await serveApi(directory, env);
    await startWorker(directory, env, 2);
    const accepted = await call<{ eval_id: string }>(`${api.url}/api/v1/evals`, {
      method: "POST",
      body: { suite: [{ id: "product", task: "compute 6*7", expect: { answer_includes: "42" } }], name: "tiny" },
    });
    expect(accepted.status).toBe(202);
    const id = accepted.body.data.eval_id;
    const done = await until(async () => {
      const view = (await call<{ status: string; passed: number }>(`${api.url}/api/v1/evals/${id}`)).body.data;
      return view.status === "completed" ? view : undefined;
    }, "the eval to complete");
    expect(done.passed).toBe(1);
    const events = await (await fetch(`${api.url}/api/v1/evals/${id}/events`)).text();
    expect([...events.matchAll(/^event: (\S+)$/gm)].map((match) => match[1])).toEqual(["eval-start", "case-start", "case-end", "eval-end"]);
  });

  it("keeps a thread's conversation and the long-term memory in Postgres: a worker saves, another process recalls, the API lists it", async () => {
    const directory = tempDir("troupe-memory-pg-");
    const workspace = path.join(directory, "workspace");
    mkdirSync(workspace, { recursive: true });
    const env = { TROUPE_DATABASE_URL: await freshDatabase("memory"), TROUPE_PROVIDER: "offline", TROUPE_WORKSPACE: workspace, TROUPE_LEASE_SECONDS: "15" };
    const api = await serveApi(directory, env);
    await startWorker(directory, env, 2);
    const finished = async (body: Record<string, unknown>): Promise<{ status: string; result: { answer: string } | null }> => {
      const id = await submit(api.url, body);
      return until(async () => {
        const view = (await call<{ status: string; result: { answer: string } | null }>(`${api.url}/api/v1/tasks/${id}`)).body.data;
        return ["completed", "failed", "cancelled"].includes(view.status) ? view : undefined;
      }, `"${String(body.task)}" to finish`);
    };
    // A follow-up on the thread resolves "it" from the earlier run, whichever worker ran it.
    expect((await finished({ task: "compute 2+3", thread_id: "talk" })).status).toBe("completed");
    expect((await finished({ task: "save it to mem.txt", thread_id: "talk" })).status).toBe("completed");
    expect(readFileSync(path.join(workspace, "mem.txt"), "utf8").trim()).toBe("5");
    // A fact a worker saved is listed by the API process and recalled by a run on another thread.
    expect((await finished({ task: "remember that the capital of Atlantis is Poseidonia" })).status).toBe("completed");
    const listed = (await call<{ total: number; items: Array<{ text: string }> }>(`${api.url}/api/v1/memory?query=Atlantis`)).body.data;
    expect(listed.items.map((item) => item.text)).toEqual(["the capital of Atlantis is Poseidonia"]);
    const asked = await finished({ task: "What is the capital of Atlantis?", thread_id: "elsewhere" });
    expect([asked.status, asked.result?.answer]).toEqual(["completed", expect.stringContaining("Poseidonia")]);
    // The CLI reads the same memories from the database.
    const cli = await runCli(["memory", "search", "capital of Atlantis", "--json", "--principal", "local"], { cwd: directory, env });
    expect(cli.code, cli.stderr).toBe(0);
    expect((JSON.parse(cli.stdout) as { items: Array<{ text: string }> }).items.map((item) => item.text)).toEqual(["the capital of Atlantis is Poseidonia"]);
  });
});

describe("one thread, one driver", () => {
  it("never lets two processes drive the same thread: of two starts raced on one run, one drives it and the other is refused", async () => {
    const databaseUrl = await freshDatabase("race");
    const rounds = 12;
    const make = async (directory: string): Promise<{ troupe: Troupe; model: ScriptedChatModel }> => {
      const model = new ScriptedChatModel({
        steps: [planStep([subtask("s1", "research", "Look")], { delayMs: 150, times: rounds }), finalStep("s1", "found", { times: rounds }), reviewStep(0.9, {}, { times: rounds }), answerStep("done", { times: rounds })],
      });
      const troupe = await Troupe.create({ models: modelSetOf(model), dataDir: path.join(directory, "data"), workspace: path.join(directory, "ws"), databaseUrl });
      return { troupe, model };
    };
    // Two instances, each with its own pool, lock session and queue connection: two processes, as the database sees them.
    const one = await make(tempDir());
    const two = await make(tempDir());
    try {
      for (let round = 0; round < rounds; round += 1) {
        const record = await one.troupe.enqueue({ task: `round ${round}` });
        const outcomes = await Promise.allSettled([one.troupe.start(record.id), two.troupe.start(record.id)]);
        const fulfilled = outcomes.filter((outcome) => outcome.status === "fulfilled");
        const refused = outcomes.filter((outcome): outcome is PromiseRejectedResult => outcome.status === "rejected");
        expect(fulfilled).toHaveLength(1);
        expect(refused).toHaveLength(1);
        expect(String(refused[0]?.reason)).toMatch(/is running in another process|has already started/);
        expect((await one.troupe.store.runs.get(record.id))?.status).toBe("completed");
      }
      // Each round planned once, between both.
      expect(one.model.callsFor("planner").length + two.model.callsFor("planner").length).toBe(rounds);
    } finally {
      await one.troupe.shutdown();
      await two.troupe.shutdown();
    }
  });

  it("refuses `troupe resume` of a thread a worker is driving (exit 2), and the worker finishes it", async () => {
    const steps = [planStep([subtask("s1", "research", "Slow")]), finalStep("s1", "slowly found", { delayMs: 12_000 }), reviewStep(0.9), answerStep("done once")];
    const { directory, log, env } = await deployment(steps);
    const api = await serveApi(directory, env);
    await startWorker(directory, env, 1);
    const id = await submit(api.url, { task: "slow lookup", thread_id: "contested" });
    await until(() => (readScriptLog(log).some((line) => line.subtask === "s1" && line.phase === "start") ? true : undefined), "s1 to start");
    const resumed = await runCli(["resume", "contested", "--json"], { cwd: directory, env });
    expect(resumed.code).toBe(2);
    expect(resumed.stderr.trim().split("\n")).toHaveLength(1);
    expect(resumed.stderr).toMatch(/is still running in process \d+ \(worker \S+\)/);
    await until(async () => ((await taskStatus(api.url, id)) === "completed" ? true : undefined), "the worker to finish");
    expect(readScriptLog(log).filter((line) => line.subtask === "s1" && line.phase === "start")).toHaveLength(1);
  });
});

describe("bad input on Postgres", () => {
  it("refuses a wrong database URL, an unreachable server, and a worker without Postgres: exit 2, one line, nothing written", async () => {
    const directory = tempDir();
    const cases: Array<[string[], Record<string, string>, RegExp]> = [
      [["run", "compute 1+1"], { TROUPE_DATABASE_URL: "mysql://x@localhost/db" }, /^troupe: TROUPE_DATABASE_URL: must be a Postgres URL/],
      [["run", "compute 1+1", "--database-url", "postgres://nobody@127.0.0.1:1/none"], {}, /^troupe: cannot reach the database at postgres:\/\/nobody@127\.0\.0\.1:1\/none \(ECONNREFUSED\)$/m],
      [["worker"], {}, /^troupe: troupe worker needs TROUPE_DATABASE_URL/],
      [["serve", "--workers", "0"], {}, /^troupe: --workers 0 \(an API process that runs no tasks\) needs TROUPE_DATABASE_URL/],
      [["migrate", "--database-url", "postgres://u:secret@127.0.0.1:1/db"], {}, /^troupe: cannot reach the database at postgres:\/\/u:\*\*\*@127\.0\.0\.1:1\/db/],
    ];
    for (const [args, env, message] of cases) {
      const result = await runCli(args, { cwd: directory, env });
      expect([args.join(" "), result.code]).toEqual([args.join(" "), 2]);
      expect(result.stderr.trim().split("\n")).toHaveLength(1);
      expect(result.stderr).toMatch(message);
      expect(result.stderr).not.toContain("secret");
    }
    expect(existsSync(path.join(directory, "workspace", "result.txt"))).toBe(false);
  });

  it("refuses a database migrated by a newer troupe, and migrates an empty one with `troupe migrate`", async () => {
    const directory = tempDir();
    const databaseUrl = await freshDatabase("newer");
    const migrated = await runCli(["migrate", "--json"], { cwd: directory, env: { TROUPE_DATABASE_URL: databaseUrl } });
    expect(migrated.code).toBe(0);
    expect(JSON.parse(migrated.stdout)).toMatchObject({ backend: "postgres" });
    const { default: pg } = await import("pg");
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    await client.query("INSERT INTO troupe_schema (version, applied_at) VALUES (999, 0)");
    await client.end();
    const refused = await runCli(["run", "compute 1+1"], { cwd: directory, env: { TROUPE_DATABASE_URL: databaseUrl } });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(new RegExp(`^troupe: .* has troupe schema version 999, newer than this troupe knows \\(${schemaVersionOf("postgres")}\\): upgrade troupe, or use another database\n$`));
  });
});
