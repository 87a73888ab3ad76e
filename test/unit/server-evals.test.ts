import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { EvalAccepted, EvalList, EvalView, TaskView } from "../../src/server/schemas.js";
import { answerStep, finalStep, planStep, reviewStep, subtask } from "../../src/testing/script.js";
import { envelope, makeApp, parseSse, waitFor } from "../server-helpers.js";

const KEYS = { apiKeys: "alice:key-alice-123,bob:key-bob-456" };
const ALICE = { authorization: "Bearer key-alice-123" };
const BOB = { authorization: "Bearer key-bob-456" };

const SUITE = [
  { id: "saves", task: "compute 17% of 2,340 and save it to result.txt", expect: { files: { "result.txt": "397.8" } } },
  { id: "wrong", task: "compute 6*7 and save it to answer.txt", expect: { answer_includes: ["43"] } },
  { id: "poem", task: "write a poem about the sea", expect: { status: "failed", judge: "the answer is a poem" } },
];
const jsonl = (cases: Array<Record<string, unknown>>): string => cases.map((item) => JSON.stringify(item)).join("\n");

type App = Awaited<ReturnType<typeof makeApp>>;

async function waitForEval(app: App, id: string, headers: Record<string, string> = {}): Promise<EvalView> {
  return waitFor(async () => {
    const view = envelope<EvalView>(await app.app.inject({ method: "GET", url: `/api/v1/evals/${id}`, headers })).data;
    return ["completed", "failed", "cancelled"].includes(view.status) ? EvalView.parse(view) : undefined;
  }, `eval ${id} to finish`);
}

describe("POST /evals", () => {
  it("answers 202 with the stored eval, runs each case as a task of the caller's, and reports each verdict with its run", async () => {
    const app = await makeApp({ config: KEYS });
    const response = await app.app.inject({ method: "POST", url: "/api/v1/evals", headers: ALICE, payload: { suite: jsonl(SUITE), name: "smoke", concurrency: 2, min_pass_rate: 0.5 } });
    expect(response.statusCode).toBe(202);
    const accepted = EvalAccepted.parse(envelope(response).data);
    expect(accepted).toEqual({ eval_id: expect.stringMatching(/^eval-/), name: "smoke", status: "queued", total: 3 });
    expect(response.headers.location).toBe(`/api/v1/evals/${accepted.eval_id}`);
    // Stored before the answer went out, as the caller's.
    expect((await app.troupe.store.evals.get(accepted.eval_id))?.owner).toBe("alice");

    const view = await waitForEval(app, accepted.eval_id, ALICE);
    expect(view).toMatchObject({ name: "smoke", status: "completed", provider: "offline:rules-v1", total: 3, passed: 2, failed: 1, min_pass_rate: 0.5, meets_min_pass_rate: true });
    expect(view.pass_rate).toBeCloseTo(2 / 3, 3);
    expect(view.cases.map((item) => [item.id, item.state, item.status])).toEqual([
      ["saves", "passed", "completed"],
      ["wrong", "failed", "completed"],
      ["poem", "passed", "failed"],
    ]);
    expect(view.cases[1]?.failures).toEqual([{ expectation: "answer_includes", message: 'the answer does not include "43"' }]);
    expect(view.cases[2]?.judge).toMatchObject({ judged: false });
    expect(view.results).toMatchObject({ evalId: accepted.eval_id, suite: "smoke", total: 3, passed: 2, mode: "live" });

    // Each case's run is a task of the caller's: its page opens it; another key sees nothing.
    for (const item of view.cases) {
      const task = await app.app.inject({ method: "GET", url: `/api/v1/tasks/${item.run_id}`, headers: ALICE });
      expect(task.statusCode).toBe(200);
      expect(TaskView.parse(envelope(task).data).task).toBe(SUITE.find((entry) => entry.id === item.id)?.task);
      expect((await app.app.inject({ method: "GET", url: `/api/v1/tasks/${item.run_id}`, headers: BOB })).statusCode).toBe(404);
    }
    // Its own workspace, in the data directory.
    const saves = view.cases[0]?.run_id ?? "";
    expect((await app.troupe.store.runs.get(saves))?.evalId).toBe(accepted.eval_id);
    expect(readFileSync(path.join(app.directory, "data", "evals", accepted.eval_id, "saves", "result.txt"), "utf8")).toBe("397.8");
    expect(existsSync(path.join(app.directory, "workspace", "result.txt"))).toBe(false);

    // The list is the caller's alone.
    const mine = EvalList.parse(envelope(await app.app.inject({ method: "GET", url: "/api/v1/evals", headers: ALICE })).data);
    expect(mine.items.map((item) => [item.eval_id, item.status])).toEqual([[accepted.eval_id, "completed"]]);
    expect(EvalList.parse(envelope(await app.app.inject({ method: "GET", url: "/api/v1/evals", headers: BOB })).data).total).toBe(0);
    const hidden = await app.app.inject({ method: "GET", url: `/api/v1/evals/${accepted.eval_id}`, headers: BOB });
    expect(hidden.statusCode).toBe(404);
    expect(envelope(hidden).code).toBe("eval_not_found");
    expect((await app.app.inject({ method: "GET", url: `/api/v1/evals/${accepted.eval_id}/events`, headers: BOB })).statusCode).toBe(404);
    // The same keys guard it: no key, no eval.
    expect((await app.app.inject({ method: "POST", url: "/api/v1/evals", payload: { suite: jsonl(SUITE) } })).statusCode).toBe(401);
  });

  it("takes the cases as an array too", async () => {
    const app = await makeApp();
    const response = await app.app.inject({ method: "POST", url: "/api/v1/evals", payload: { suite: SUITE.slice(0, 1) } });
    expect(response.statusCode).toBe(202);
    const view = await waitForEval(app, envelope<{ eval_id: string }>(response).data.eval_id);
    expect(view).toMatchObject({ name: "suite", status: "completed", passed: 1, total: 1 });
  });

  describe("refuses a bad suite with 400, naming the line (or index) and key, and stores nothing", () => {
    const cases: Array<{ name: string; body: Record<string, unknown>; code: string; message: RegExp }> = [
      { name: "an unknown expectation", body: { suite: jsonl([SUITE[0] as Record<string, unknown>, { id: "b", task: "x", expect: { answer_include: ["42"] } }]) }, code: "suite_invalid", message: /^suite line 2: expect: unknown key "answer_include"$/ },
      { name: "an empty task in an array", body: { suite: [SUITE[0], { id: "b", task: "  " }] }, code: "suite_invalid", message: /^suite\[1\]: task: the task is empty$/ },
      { name: "a task over 5,000 characters", body: { suite: [{ id: "long", task: "x".repeat(5_001) }] }, code: "suite_invalid", message: /^suite\[0\]: task: the task is longer than 5000 characters$/ },
      { name: "a line that is not JSON", body: { suite: "{nope" }, code: "suite_invalid", message: /^suite line 1: not a JSON object/ },
      { name: "more than 100 cases", body: { suite: Array.from({ length: 101 }, (_, index) => ({ id: `c${index}`, task: "compute 1+1" })) }, code: "suite_too_large", message: /^suite: 101 cases, more than 100$/ },
      { name: "an unknown field", body: { suite: jsonl(SUITE), provider: "openai" }, code: "unknown_field", message: /unknown field: provider/ },
      { name: "a concurrency above 8", body: { suite: jsonl(SUITE), concurrency: 9 }, code: "concurrency_out_of_range", message: /concurrency/ },
      { name: "no suite", body: {}, code: "suite_required", message: /suite/ },
    ];
    for (const testCase of cases) {
      it(testCase.name, async () => {
        const app = await makeApp();
        const response = await app.app.inject({ method: "POST", url: "/api/v1/evals", payload: testCase.body });
        expect(response.statusCode).toBe(400);
        const body = envelope(response);
        expect(body.code).toBe(testCase.code);
        expect(body.message).toMatch(testCase.message);
        expect(await app.troupe.store.evals.count()).toBe(0);
      });
    }
  });
});

describe("GET /evals/:id/events (SSE)", () => {
  it("streams the eval's progress live — each case's start with its run and end with the tally — and resumes after Last-Event-ID", async () => {
    const app = await makeApp({
      steps: [planStep([subtask("s1", "research", "Look it up")], { times: 2 }), finalStep("s1", "found it", { times: 2, delayMs: 200 }), reviewStep(0.9, {}, { times: 2 }), answerStep("found it", { times: 2 })],
    });
    const address = await app.app.listen({ host: "127.0.0.1", port: 0 });
    const suite = [
      { id: "one", task: "look one up", expect: { answer_includes: "found" } },
      { id: "two", task: "look two up", expect: { answer_includes: "lost" } },
    ];
    const id = envelope<{ eval_id: string }>(await app.app.inject({ method: "POST", url: "/api/v1/evals", payload: { suite, concurrency: 1 } })).data.eval_id;
    const response = await fetch(`${address}/api/v1/evals/${id}/events`);
    expect(response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const reader = (response.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
    let body = "";
    let statusAtFirstEvent: string | undefined;
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      body += chunk.value;
      if (statusAtFirstEvent === undefined && body.includes("data:")) statusAtFirstEvent = (await app.troupe.store.evals.get(id))?.status;
    }
    // The stream was open while the eval ran, and ended with it.
    expect(statusAtFirstEvent).toBe("running");
    const events = parseSse(body);
    expect(events.map((event) => event.id)).toEqual(events.map((_, index) => index + 1));
    expect(events.every((event) => event.data.type === event.event && event.data.evalId === id)).toBe(true);
    expect(events.map((event) => event.event)).toEqual(["eval-start", "case-start", "case-end", "case-start", "case-end", "eval-end"]);
    const ends = events.filter((event) => event.event === "case-end").map((event) => event.data as { done: number; passing: number; failing: number; result: { id: string; passed: boolean; runId: string } });
    expect(ends.map((end) => [end.result.id, end.result.passed, end.done, end.passing, end.failing])).toEqual([
      ["one", true, 1, 1, 0],
      ["two", false, 2, 1, 1],
    ]);
    const starts = events.filter((event) => event.event === "case-start").map((event) => event.data);
    expect(starts.map((start) => start.runId)).toEqual(ends.map((end) => end.result.runId));
    expect(events.at(-1)?.data).toMatchObject({ type: "eval-end", status: "completed", total: 2, passed: 1, failed: 1, meetsMinPassRate: false });

    const resumed = parseSse((await app.app.inject({ method: "GET", url: `/api/v1/evals/${id}/events`, headers: { "last-event-id": "3" } })).body);
    expect(resumed.map((event) => event.id)).toEqual([4, 5, 6]);
    expect((await app.app.inject({ method: "GET", url: `/api/v1/evals/${id}/events`, headers: { "last-event-id": "6" } })).statusCode).toBe(204);
    expect(app.evalHub.watchers(id)).toBe(0);
  });
});

describe("an eval's cases", () => {
  it("are not resumed or cancelled as tasks: a case waiting for an approval stays with its eval", async () => {
    const app = await makeApp({ toolsConfig: { permissions: { grants: [{ agent: "execute", tool: "file_delete", level: "WRITE" }] } } });
    const suite = [{ id: "deletes", task: "delete old.txt", files: { "old.txt": "stale\n" }, expect: { status: "interrupted", files: { "old.txt": "stale" } } }];
    const id = envelope<{ eval_id: string }>(await app.app.inject({ method: "POST", url: "/api/v1/evals", payload: { suite } })).data.eval_id;
    const view = await waitForEval(app, id);
    expect(view.cases[0]).toMatchObject({ state: "passed", status: "interrupted" });
    const runId = view.cases[0]?.run_id ?? "";
    for (const action of ["resume", "cancel"]) {
      const response = await app.app.inject({ method: "POST", url: `/api/v1/tasks/${runId}/${action}`, payload: action === "resume" ? { decision: "approve" } : {} });
      expect(response.statusCode).toBe(409);
      expect(envelope(response)).toMatchObject({
        code: "eval_case",
        message: `run ${runId} is a case of eval ${id}; ${action === "resume" ? "an eval's cases are not resumed (run the eval again)" : "an eval's cases are not cancelled one by one (cancel the eval instead)"}`,
      });
    }
    expect((await app.troupe.store.runs.get(runId))?.status).toBe("interrupted");
    expect(existsSync(path.join(app.directory, "data", "evals", id, "deletes", "old.txt"))).toBe(true);
  });

  it("stop with their eval when it is cancelled", async () => {
    const app = await makeApp({ steps: [planStep([subtask("s1", "research", "Take a while")]), finalStep("s1", "done", { gate: "never" })] });
    const id = envelope<{ eval_id: string }>(await app.app.inject({ method: "POST", url: "/api/v1/evals", payload: { suite: [{ id: "slow", task: "take a while" }, { id: "never", task: "never starts" }], concurrency: 1 } })).data.eval_id;
    await waitFor(() => (app.model?.calls.some((call) => call.subtask === "s1") ? true : undefined), "the case's subtask to start");
    const response = await app.app.inject({ method: "POST", url: `/api/v1/evals/${id}/cancel` });
    expect(response.statusCode).toBe(200);
    expect(envelope(response).data).toMatchObject({ eval_id: id, status: "cancelled" });
    const view = EvalView.parse(envelope(await app.app.inject({ method: "GET", url: `/api/v1/evals/${id}` })).data);
    expect(view.cases.map((item) => [item.id, item.state, item.status])).toEqual([
      ["slow", "failed", "cancelled"],
      ["never", "pending", null],
    ]);
    expect((await app.app.inject({ method: "POST", url: `/api/v1/evals/${id}/cancel` })).statusCode).toBe(409);
  });

  it("left running by a server that died are failed when the next one starts, and a queued eval runs", async () => {
    const app = await makeApp();
    const { evals, runs } = app.troupe.store;
    const stale = await evals.create({ id: "eval-stale", owner: "local", name: "old", status: "running", provider: "offline:rules-v1", total: 1, minPassRate: 1, concurrency: 1, suite: [{ id: "a", task: "compute 1+1" }] });
    await runs.create({ id: "run-stale", threadId: "thread-stale", task: "compute 1+1", status: "running", request: {}, pid: 999_999_999, host: "elsewhere", owner: "local", evalId: stale.id, startedAt: Date.now() });
    await evals.create({ id: "eval-waiting", owner: "local", name: "next", status: "queued", provider: "offline:rules-v1", total: 1, minPassRate: 1, concurrency: 1, suite: [{ id: "b", task: "compute 6*7" }] });
    // The task queue leaves the eval's run alone; the evals take it up.
    expect(await app.tasks.recover()).toEqual({ resumed: 0, queued: 0, crashed: 0 });
    expect(await app.evals.recover()).toEqual({ queued: 1, failed: 1 });
    expect(await evals.get("eval-stale")).toMatchObject({ status: "failed", error: "the server stopped while this eval ran; submit it again" });
    expect(await runs.get("run-stale")).toMatchObject({ status: "failed", error: "the server stopped while this eval ran; submit it again" });
    const events = parseSse((await app.app.inject({ method: "GET", url: "/api/v1/evals/eval-stale/events" })).body);
    expect(events.map((event) => event.event)).toEqual(["eval-end"]);
    expect(await waitForEval(app, "eval-waiting")).toMatchObject({ status: "completed", passed: 1 });
  });
});
