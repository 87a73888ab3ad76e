import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { TaskAccepted, TaskList, TaskView } from "../../src/server/schemas.js";
import { answerStep, finalStep, planStep, reviewStep, subtask, toolStep } from "../../src/testing/script.js";
import { envelope, makeApp, waitFor, waitForStatus } from "../server-helpers.js";

const TASK = "compute 17% of 2,340 and save it to result.txt";

async function submit(app: Awaited<ReturnType<typeof makeApp>>, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  return app.app.inject({ method: "POST", url: "/api/v1/execute", payload: body, headers });
}

describe("POST /execute and GET /tasks/:id", () => {
  it("answers 202 with the stored task at once, runs it in the background, and reports status, progress, result and metrics", async () => {
    const app = await makeApp();
    const response = await submit(app, { task: TASK });
    expect(response.statusCode).toBe(202);
    const accepted = envelope<{ task_id: string; thread_id: string; status: string }>(response);
    expect(accepted.code).toBe("ok");
    expect(TaskAccepted.parse(accepted.data)).toEqual({ task_id: expect.stringMatching(/^run-/), thread_id: expect.stringMatching(/^thread-/), status: "queued" });
    expect(response.headers.location).toBe(`/api/v1/tasks/${accepted.data.task_id}`);
    // Persisted before the answer went out.
    expect((await app.troupe.store.runs.get(accepted.data.task_id))?.owner).toBe("local");

    const done = await waitForStatus(app, accepted.data.task_id, ["completed", "failed"]);
    const view = TaskView.parse(done);
    expect(view.status).toBe("completed");
    expect(view.stop_reason).toBe("completed");
    expect(view.progress).toMatchObject({ subtasks_total: 2, subtasks_done: 2, subtasks_failed: 0, current_step: "completed" });
    expect(view.result?.answer).toContain("397.8");
    expect(view.plan.map((item) => [item.id, item.status])).toEqual([
      ["s1", "done"],
      ["s2", "done"],
    ]);
    expect(view.metrics?.toolCalls).toBe(2);
    expect(view.interrupt).toBeNull();
    expect(view.request).toEqual({ tools: null, max_iterations: 3, approve_plan: false, approve_answer: false });
  });

  it("lists only the caller's tasks, newest first, with paging and a status filter", async () => {
    const app = await makeApp({
      steps: [planStep([subtask("s1", "research", "Look")], { times: 3 }), finalStep("s1", "ok", { times: 3 }), reviewStep(0.9, {}, { times: 3 }), answerStep("done", { times: 3 })],
    });
    const ids: string[] = [];
    for (let index = 0; index < 3; index += 1) ids.push(envelope<{ task_id: string }>(await submit(app, { task: `task ${index}` })).data.task_id);
    for (const id of ids) await waitForStatus(app, id, ["completed"]);
    const first = await app.app.inject({ method: "GET", url: "/api/v1/tasks?limit=2" });
    const page = TaskList.parse(envelope(first).data);
    expect(page.items.map((item) => item.task_id)).toEqual([ids[2], ids[1]]);
    expect(page).toMatchObject({ total: 3, limit: 2, offset: 0, next_offset: 2 });
    const second = TaskList.parse(envelope(await app.app.inject({ method: "GET", url: "/api/v1/tasks?limit=2&offset=2" })).data);
    expect(second.items.map((item) => item.task_id)).toEqual([ids[0]]);
    expect(second.next_offset).toBeNull();
    const failed = TaskList.parse(envelope(await app.app.inject({ method: "GET", url: "/api/v1/tasks?status=failed" })).data);
    expect(failed.total).toBe(0);
    const completed = TaskList.parse(envelope(await app.app.inject({ method: "GET", url: "/api/v1/tasks?status=completed" })).data);
    expect(completed.total).toBe(3);
  });

  it("restricts a run to the tools it names", async () => {
    const app = await makeApp({
      steps: [planStep([subtask("s1", "execute", "Compute", { tool: "calculator", args: { expression: { value: "2+2" } } })], { times: 3 })],
    });
    const accepted = envelope<{ task_id: string }>(await submit(app, { task: "compute 2+2", tools: ["json"] })).data;
    const view = await waitForStatus(app, accepted.task_id, ["completed", "failed"]);
    // The plan names calculator, which this run may not use: every attempt is invalid.
    expect(app.model?.callsFor("planner")).toHaveLength(3);
    expect(view.status).toBe("failed");
    expect(String(view.error)).toMatch(/unknown tool "calculator"/);
    expect((view.request as { tools: string[] }).tools).toEqual(["json"]);
  });
});

describe("validation: every bad request is a 400 with a stable code (body limit 413, media type 415)", () => {
  const big = "x".repeat(10 * 1024 + 1);
  const cases: Array<[string, unknown, number, string]> = [
    ["no task", {}, 400, "task_required"],
    ["an empty task", { task: "" }, 400, "task_empty"],
    ["a whitespace task", { task: " \n\t " }, 400, "task_empty"],
    ["a task over 5,000 characters", { task: "x".repeat(5_001) }, 400, "task_too_long"],
    ["a task that is not text", { task: 42 }, 400, "task_invalid"],
    ["a context over 10 KB", { task: "t", context: big }, 400, "context_too_large"],
    ["a context object over 10 KB", { task: "t", context: { notes: big } }, 400, "context_too_large"],
    ["a context that is a number", { task: "t", context: 5 }, 400, "context_invalid"],
    ["max_iterations 0", { task: "t", max_iterations: 0 }, 400, "max_iterations_out_of_range"],
    ["max_iterations 51", { task: "t", max_iterations: 51 }, 400, "max_iterations_out_of_range"],
    ["max_iterations 2.5", { task: "t", max_iterations: 2.5 }, 400, "max_iterations_invalid"],
    ["max_iterations as text", { task: "t", max_iterations: "3" }, 400, "max_iterations_invalid"],
    ["an unknown tool", { task: "t", tools: ["calculator", "nope"] }, 400, "unknown_tool"],
    ["tools that are not a list", { task: "t", tools: "calculator" }, 400, "tools_invalid"],
    ["an unknown field", { task: "t", priority: "high" }, 400, "unknown_field"],
    ["approve_plan that is not a boolean", { task: "t", approve_plan: "yes" }, 400, "approve_plan_invalid"],
    ["a bad thread id", { task: "t", thread_id: "no spaces allowed" }, 400, "thread_id_invalid"],
    ["a body that is a list", [{ task: "t" }], 400, "invalid_body"],
  ];
  for (const [name, body, status, code] of cases) {
    it(`refuses ${name} (${code})`, async () => {
      const app = await makeApp();
      const response = await submit(app, body as Record<string, unknown>);
      expect(response.statusCode).toBe(status);
      const answer = envelope(response);
      expect(answer.code).toBe(code);
      expect(answer.message.length).toBeGreaterThan(5);
      expect(await app.troupe.store.runs.count()).toBe(0);
    });
  }

  it("names the unknown fields and every issue", async () => {
    const app = await makeApp();
    const answer = envelope<{ fields: string[]; issues: Array<{ code: string }> }>(await submit(app, { task: "", priority: 1, color: 2 }));
    expect(answer.code).toBe("unknown_field");
    expect(answer.data.fields).toEqual(["priority", "color"]);
    expect(answer.data.issues.map((issue) => issue.code).sort()).toEqual(["task_empty", "unknown_field"]);
  });

  it("refuses malformed JSON, a body that is not JSON, a body over the limit and a bad Idempotency-Key", async () => {
    const app = await makeApp({ config: { bodyLimitBytes: 4096 } });
    const malformed = await app.app.inject({ method: "POST", url: "/api/v1/execute", payload: '{"task": ', headers: { "content-type": "application/json" } });
    expect([malformed.statusCode, envelope(malformed).code]).toEqual([400, "invalid_json"]);
    const text = await app.app.inject({ method: "POST", url: "/api/v1/execute", payload: "task=hello", headers: { "content-type": "text/plain" } });
    expect([text.statusCode, envelope(text).code]).toEqual([415, "unsupported_media_type"]);
    const large = await submit(app, { task: "t", context: "y".repeat(5000) });
    expect([large.statusCode, envelope(large).code]).toEqual([413, "body_too_large"]);
    const key = await submit(app, { task: "t" }, { "idempotency-key": "x".repeat(300) });
    expect([key.statusCode, envelope(key).code]).toEqual([400, "idempotency_key_invalid"]);
    expect(await app.troupe.store.runs.count()).toBe(0);
  });

  it("checks queries, paths and the other bodies too", async () => {
    const app = await makeApp();
    const id = envelope<{ task_id: string }>(await submit(app, { task: TASK })).data.task_id;
    await waitForStatus(app, id, ["completed"]);
    const checks: Array<[string, string, unknown, number, string]> = [
      ["GET", "/api/v1/tasks?status=bogus", undefined, 400, "status_invalid"],
      ["GET", "/api/v1/tasks?limit=0", undefined, 400, "limit_out_of_range"],
      ["GET", "/api/v1/tasks?limit=500", undefined, 400, "limit_out_of_range"],
      ["GET", "/api/v1/tasks?limit=abc", undefined, 400, "limit_invalid"],
      ["GET", "/api/v1/tasks?sort=asc", undefined, 400, "unknown_field"],
      ["GET", `/api/v1/tasks/${id}/graph?format=svg`, undefined, 400, "format_invalid"],
      ["GET", `/api/v1/tasks/${id}/events?after=-1`, undefined, 400, "after_out_of_range"],
      ["POST", `/api/v1/tasks/${id}/resume`, {}, 400, "decision_required"],
      ["POST", `/api/v1/tasks/${id}/resume`, { decision: "maybe" }, 400, "decision_invalid"],
      ["POST", `/api/v1/tasks/${id}/resume`, { decision: "answer" }, 400, "answer_required"],
      ["POST", `/api/v1/tasks/${id}/resume`, { decision: "edit" }, 400, "edit_required"],
      ["POST", `/api/v1/tasks/${id}/resume`, { decision: "edit", plan: [{ id: "s1" }] }, 400, "plan_invalid"],
      ["POST", `/api/v1/tasks/${id}/resume`, { decision: "approve", extra: 1 }, 400, "unknown_field"],
      ["POST", "/api/v1/tools/call", { parameters: {} }, 400, "tool_name_required"],
      ["POST", "/api/v1/tools/call", { tool_name: "nope" }, 400, "unknown_tool"],
      ["POST", "/api/v1/tools/call", { tool_name: "calculator", parameters: { expression: 5 } }, 400, "invalid_arguments"],
      ["POST", "/api/v1/plan", { task: "" }, 400, "task_empty"],
      ["POST", "/api/v1/plan", { task: "t", tools: ["nope"] }, 400, "unknown_tool"],
      ["GET", "/api/v1/tasks/run-missing", undefined, 404, "task_not_found"],
      ["GET", "/api/v1/nothing-here", undefined, 404, "route_not_found"],
    ];
    for (const [method, url, payload, status, code] of checks) {
      const response = await app.app.inject({ method: method as "GET" | "POST", url, ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }) });
      expect([url, response.statusCode, envelope(response).code]).toEqual([url, status, code]);
    }
    const badId = await app.app.inject({ method: "GET", url: `/api/v1/tasks/${id}/events`, headers: { "last-event-id": "abc" } });
    expect([badId.statusCode, envelope(badId).code]).toEqual([400, "last_event_id_invalid"]);
  });
});

describe("API keys", () => {
  const keys = { apiKeys: "alice:key-alice-123,bob:key-bob-456" };
  const alice = { authorization: "Bearer key-alice-123" };
  const bob = { authorization: "Bearer key-bob-456" };

  it("requires a key on every route but /health and the console; a wrong key is 401 too", async () => {
    const app = await makeApp({ config: keys });
    const none = await app.app.inject({ method: "GET", url: "/api/v1/tasks" });
    expect([none.statusCode, envelope(none).code]).toEqual([401, "unauthorized"]);
    expect(none.headers["www-authenticate"]).toMatch(/^Bearer/);
    const wrong = await app.app.inject({ method: "GET", url: "/api/v1/tasks", headers: { authorization: "Bearer key-mallory" } });
    expect([wrong.statusCode, envelope(wrong).code]).toEqual([401, "invalid_api_key"]);
    for (const url of ["/metrics", "/openapi.json", "/api/v1/tools"]) {
      expect((await app.app.inject({ method: "GET", url })).statusCode).toBe(401);
    }
    expect((await app.app.inject({ method: "POST", url: "/api/v1/execute", payload: { task: TASK } })).statusCode).toBe(401);
    expect((await app.app.inject({ method: "GET", url: "/health" })).statusCode).toBe(200);
    const page = await app.app.inject({ method: "GET", url: "/" });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("troupe");
    expect(page.headers["content-security-policy"]).toContain("script-src 'self'");
    const vendor = await app.app.inject({ method: "GET", url: "/vendor/purify.js" });
    expect([vendor.statusCode, vendor.headers["content-type"]]).toEqual([200, "text/javascript; charset=utf-8"]);
    expect((await app.app.inject({ method: "GET", url: "/api/v1/tools", headers: alice })).statusCode).toBe(200);
    expect(await app.troupe.store.runs.count()).toBe(0);
  });

  it("a base64 key ending in '=' is the key, and '=' alone is no key (on main, 'Bearer =' wrote memories)", async () => {
    const app = await makeApp({ config: { apiKeys: "alice:P2DNbwhv9ajp9rEF5vFfjg==,bob:two words" } });
    const as = (key: string) => ({ authorization: `Bearer ${key}` });
    const save = (key: string) => app.app.inject({ method: "POST", url: "/api/v1/memory", payload: { text: "the vault code is 1234" }, headers: as(key) });
    expect((await save("=")).statusCode).toBe(401);
    expect((await save("P2DNbwhv9ajp9rEF5vFfjg")).statusCode).toBe(401);
    expect((await save("P2DNbwhv9ajp9rEF5vFfjg==")).statusCode).toBe(201);
    // A key with an inner space is carried whole by the header.
    expect((await app.app.inject({ method: "GET", url: "/api/v1/memory", headers: as("two words") })).statusCode).toBe(200);
    expect((await app.app.inject({ method: "GET", url: "/api/v1/memory", headers: as("two") })).statusCode).toBe(401);
  });

  it("keeps tasks to the key that created them: another key gets 404 everywhere, and its thread of the same name is its own", async () => {
    const app = await makeApp({ config: keys });
    const accepted = envelope<{ task_id: string; thread_id: string }>(await submit(app, { task: TASK, approve_plan: true }, alice)).data;
    await waitForStatus(app, accepted.task_id, ["interrupted"], alice);
    const id = accepted.task_id;
    for (const [method, url, payload] of [
      ["GET", `/api/v1/tasks/${id}`, undefined],
      ["GET", `/api/v1/tasks/${id}/events`, undefined],
      ["GET", `/api/v1/tasks/${id}/graph`, undefined],
      ["POST", `/api/v1/tasks/${id}/resume`, { decision: "approve" }],
      ["POST", `/api/v1/tasks/${id}/cancel`, undefined],
    ] as const) {
      const response = await app.app.inject({ method, url, headers: bob, ...(payload ? { payload } : {}) });
      expect([url, response.statusCode, envelope(response).code]).toEqual([url, 404, "task_not_found"]);
    }
    expect(envelope<{ total: number }>(await app.app.inject({ method: "GET", url: "/api/v1/tasks", headers: bob })).data.total).toBe(0);
    expect(envelope<{ total: number }>(await app.app.inject({ method: "GET", url: "/api/v1/tasks", headers: alice })).data.total).toBe(1);
    // A thread's name is its key's own: bob's thread of the same name is another thread (main answered 404 here).
    const same = await submit(app, { task: "compute 1+1", thread_id: accepted.thread_id }, bob);
    expect(same.statusCode).toBe(202);
    const bobs = envelope<{ task_id: string; thread_id: string }>(same).data;
    expect(bobs.thread_id).toBe(accepted.thread_id);
    expect((await waitForStatus(app, bobs.task_id, ["completed", "failed"], bob)).conversation).toEqual([]);
    const mine = await app.app.inject({ method: "GET", url: `/api/v1/tasks/${id}`, headers: alice });
    expect(envelope<{ status: string }>(mine).data.status).toBe("interrupted");
    expect((await app.troupe.store.runs.get(id))?.owner).toBe("alice");
  });
});

describe("rate limit", () => {
  it("answers 429 with Retry-After past the limit per key, and counts each key apart", async () => {
    const app = await makeApp({ config: { apiKeys: "alice:key-alice-123,bob:key-bob-456", rateLimitPerMinute: 3 } });
    const alice = { authorization: "Bearer key-alice-123" };
    for (let index = 0; index < 3; index += 1) {
      expect((await app.app.inject({ method: "GET", url: "/api/v1/tasks", headers: alice })).statusCode).toBe(200);
    }
    const limited = await app.app.inject({ method: "GET", url: "/api/v1/tasks", headers: alice });
    expect(limited.statusCode).toBe(429);
    expect(envelope(limited).code).toBe("rate_limited");
    expect(Number(limited.headers["retry-after"])).toBeGreaterThan(0);
    expect((await app.app.inject({ method: "GET", url: "/api/v1/tasks", headers: { authorization: "Bearer key-bob-456" } })).statusCode).toBe(200);
    expect((await app.app.inject({ method: "GET", url: "/health" })).statusCode).toBe(200);
  });
});

describe("Idempotency-Key", () => {
  it("returns the same task for a replay, and 422 for the same key with another body", async () => {
    const app = await makeApp();
    const headers = { "idempotency-key": "order-42" };
    const first = await submit(app, { task: TASK }, headers);
    const replay = await submit(app, { task: TASK }, headers);
    expect(first.statusCode).toBe(202);
    expect(replay.statusCode).toBe(202);
    expect(replay.headers["idempotent-replayed"]).toBe("true");
    expect(envelope<{ task_id: string }>(replay).data.task_id).toBe(envelope<{ task_id: string }>(first).data.task_id);
    const other = await submit(app, { task: "compute 1+1" }, headers);
    expect([other.statusCode, envelope(other).code]).toEqual([422, "idempotency_key_reused"]);
    expect(await app.troupe.store.runs.count()).toBe(1);
    const fresh = await submit(app, { task: TASK }, { "idempotency-key": "order-43" });
    expect(envelope<{ task_id: string }>(fresh).data.task_id).not.toBe(envelope<{ task_id: string }>(first).data.task_id);
    expect(await app.troupe.store.runs.count()).toBe(2);
  });
});

describe("resume and cancel", () => {
  it("waits for plan approval with the plan in the payload, and runs when approved", async () => {
    const app = await makeApp();
    const id = envelope<{ task_id: string }>(await submit(app, { task: TASK, approve_plan: true })).data.task_id;
    const waiting = TaskView.parse(await waitForStatus(app, id, ["interrupted"]));
    expect(waiting.interrupt?.kind).toBe("plan-approval");
    expect((waiting.interrupt?.payload.plan as Array<{ id: string }>).map((item) => item.id)).toEqual(["s1", "s2"]);
    expect(waiting.progress.current_step).toBe("waiting for plan-approval");
    const resumed = await app.app.inject({ method: "POST", url: `/api/v1/tasks/${id}/resume`, payload: { decision: "approve" } });
    expect(resumed.statusCode).toBe(202);
    expect(["queued", "running"]).toContain(envelope<{ status: string }>(resumed).data.status);
    const done = await waitForStatus(app, id, ["completed", "failed"]);
    expect(done.status).toBe("completed");
    const again = await app.app.inject({ method: "POST", url: `/api/v1/tasks/${id}/resume`, payload: { decision: "approve" } });
    expect([again.statusCode, envelope(again).code]).toEqual([409, "task_not_waiting"]);
  });

  it("runs an edited plan, rewrites on reject with feedback, and keeps an edited answer", async () => {
    const app = await makeApp({
      steps: [
        planStep([subtask("s1", "research", "Original step")]),
        planStep([subtask("s1", "research", "Replanned step")], { contains: "only the short version" }),
        finalStep("s9", "edited result"),
        reviewStep(0.9),
        answerStep("the model's answer"),
      ],
    });
    // The answer approval of the synthesizer's answer is part of the subject: the whole pipeline (no fast route).
    const id = envelope<{ task_id: string }>(await submit(app, { task: "research something", approve_plan: true, approve_answer: true, review: "always" })).data.task_id;
    await waitForStatus(app, id, ["interrupted"]);
    const reject = await app.app.inject({ method: "POST", url: `/api/v1/tasks/${id}/resume`, payload: { decision: "reject", feedback: "only the short version" } });
    expect(reject.statusCode).toBe(202);
    const replanned = TaskView.parse(
      await waitFor(async () => {
        const view = envelope(await app.app.inject({ method: "GET", url: `/api/v1/tasks/${id}` })).data as TaskView;
        return view.status === "interrupted" && view.plan[0]?.label === "Replanned step" ? view : undefined;
      }, "the new plan"),
    );
    expect(replanned.interrupt?.kind).toBe("plan-approval");
    const edit = await app.app.inject({ method: "POST", url: `/api/v1/tasks/${id}/resume`, payload: { decision: "edit", plan: [subtask("s9", "research", "Edited step")] } });
    expect(edit.statusCode).toBe(202);
    const answerWait = TaskView.parse(
      await waitFor(async () => {
        const view = envelope(await app.app.inject({ method: "GET", url: `/api/v1/tasks/${id}` })).data as TaskView;
        return view.status === "interrupted" && view.interrupt?.kind === "answer-approval" ? view : undefined;
      }, "the answer approval"),
    );
    expect(answerWait.interrupt?.payload.answer).toBe("the model's answer");
    expect(answerWait.plan.map((item) => [item.id, item.status])).toEqual([["s9", "done"]]);
    const noAnswer = await app.app.inject({ method: "POST", url: `/api/v1/tasks/${id}/resume`, payload: { decision: "edit", plan: [subtask("s1", "research", "x")] } });
    expect([noAnswer.statusCode, envelope(noAnswer).code]).toEqual([400, "answer_required"]);
    await app.app.inject({ method: "POST", url: `/api/v1/tasks/${id}/resume`, payload: { decision: "edit", answer: "the person's answer" } });
    const done = TaskView.parse(await waitForStatus(app, id, ["completed", "failed"]));
    expect(done.result?.answer).toBe("the person's answer");
    app.model?.assertDone();
  });

  it("answers tool approvals (issue 6's tool-approval interrupts): each pending call listed with its id, answered by interrupt_id, approve or reject only", async () => {
    const app = await makeApp({
      steps: [
        planStep([subtask("s1", "execute", "Remove a.txt"), subtask("s2", "execute", "Remove b.txt")]),
        toolStep("s1", "file_delete", { path: "a.txt" }),
        toolStep("s2", "file_delete", { path: "b.txt" }),
        finalStep("s2", "b gone", { contains: "deleted file b.txt" }),
        reviewStep(0.9),
        answerStep("one removed"),
      ],
      toolsConfig: { permissions: { grants: [{ agent: "execute", tool: "file_delete", level: "WRITE" }] } },
    });
    const workspace = path.join(app.directory, "workspace");
    mkdirSync(workspace, { recursive: true });
    writeFileSync(path.join(workspace, "a.txt"), "a");
    writeFileSync(path.join(workspace, "b.txt"), "b");
    const id = envelope<{ task_id: string }>(await submit(app, { task: "remove both" })).data.task_id;
    const waiting = TaskView.parse(await waitForStatus(app, id, ["interrupted"]));
    expect(waiting.interrupt?.kind).toBe("tool-approval");
    expect(waiting.progress.current_step).toBe("waiting for tool-approval");
    expect(waiting.interrupts.map((item) => [item.kind, item.payload.tool, (item.payload.args as { path: string }).path]).sort()).toEqual([
      ["tool-approval", "file_delete", "a.txt"],
      ["tool-approval", "file_delete", "b.txt"],
    ]);
    const resume = (payload: Record<string, unknown>) => app.app.inject({ method: "POST", url: `/api/v1/tasks/${id}/resume`, payload });
    // Only approve or reject answers a tool call; the refusal comes in the request, and the task still waits.
    const edit = await resume({ decision: "edit", answer: "x" });
    expect([edit.statusCode, envelope(edit).code]).toEqual([400, "decision_invalid"]);
    const stale = await resume({ decision: "approve", interrupt_id: "not-an-interrupt" });
    expect([stale.statusCode, envelope(stale).code]).toEqual([409, "interrupt_not_pending"]);
    expect(envelope(await app.app.inject({ method: "GET", url: `/api/v1/tasks/${id}` })).data.status).toBe("interrupted");

    const forB = waiting.interrupts.find((item) => (item.payload.args as { path: string }).path === "b.txt");
    expect((await resume({ decision: "approve", interrupt_id: forB?.id })).statusCode).toBe(202);
    const next = TaskView.parse(
      await waitFor(async () => {
        const view = envelope(await app.app.inject({ method: "GET", url: `/api/v1/tasks/${id}` })).data as TaskView;
        return view.status === "interrupted" && view.interrupts.length === 1 ? view : undefined;
      }, "the second approval alone"),
    );
    expect((next.interrupts[0]?.payload.args as { path: string }).path).toBe("a.txt");
    expect(existsSync(path.join(workspace, "b.txt"))).toBe(false);
    expect((await resume({ decision: "reject", feedback: "keep a", interrupt_id: next.interrupts[0]?.id })).statusCode).toBe(202);
    const done = TaskView.parse(await waitForStatus(app, id, ["completed", "failed"]));
    // A rejected call ends its subtask (not retried): the task did not do all it was asked.
    expect(done.status).toBe("failed");
    expect(done.interrupts).toEqual([]);
    expect(existsSync(path.join(workspace, "a.txt"))).toBe(true);
    expect((await app.troupe.store.audit.list({ runId: id })).map((row) => [row.tool, row.decision]).sort()).toEqual([
      ["file_delete", "approved"],
      ["file_delete", "rejected"],
    ]);
    app.model?.assertDone();
  });

  it("leaves a task waiting when a queued decision no longer fits (its interrupt was answered meanwhile), instead of failing it", async () => {
    const app = await makeApp({
      steps: [planStep([subtask("s1", "execute", "Remove a.txt")]), toolStep("s1", "file_delete", { path: "a.txt" })],
      toolsConfig: { permissions: { grants: [{ agent: "execute", tool: "file_delete", level: "WRITE" }] } },
    });
    const id = envelope<{ task_id: string }>(await submit(app, { task: "remove a" })).data.task_id;
    await waitForStatus(app, id, ["interrupted"]);
    // A decision for an interrupt that is no longer pending, as a restarted server would find it in the queue.
    await app.troupe.store.runs.update(id, { status: "queued", interrupt: null, pendingDecision: { decision: "approve", interruptId: "answered-elsewhere" } });
    expect(await app.tasks.recover()).toMatchObject({ queued: 1 });
    const view = TaskView.parse(
      await waitFor(async () => {
        const current = envelope(await app.app.inject({ method: "GET", url: `/api/v1/tasks/${id}` })).data as TaskView;
        return current.status !== "queued" && current.status !== "running" ? current : undefined;
      }, "the task to settle"),
    );
    expect(view.status).toBe("interrupted");
    expect(view.interrupt?.kind).toBe("tool-approval");
    expect(view.interrupts).toHaveLength(1);
  });

  it("cancels a queued task, a running task and a waiting task; a finished one is 409", async () => {
    const app = await makeApp({
      config: { maxRunning: 1 },
      steps: [
        planStep([subtask("s1", "research", "Slow")], { contains: "slow one" }),
        finalStep("s1", "never", { gate: "never" }),
        planStep([subtask("s1", "research", "Wait")], { contains: "waiting one" }),
      ],
    });
    const slow = envelope<{ task_id: string }>(await submit(app, { task: "the slow one" })).data.task_id;
    const queued = envelope<{ task_id: string }>(await submit(app, { task: "the queued one" })).data.task_id;
    await waitFor(() => (app.model?.calls.some((call) => call.subtask === "s1") ? true : undefined), "the slow subtask to start");
    const queuedView = TaskView.parse(envelope(await app.app.inject({ method: "GET", url: `/api/v1/tasks/${queued}` })).data);
    expect(queuedView.status).toBe("queued");
    const running = TaskView.parse(envelope(await app.app.inject({ method: "GET", url: `/api/v1/tasks/${slow}` })).data);
    expect(running.status).toBe("running");
    expect(running.progress.current_step).toBe("running s1");
    expect(running.plan[0]?.status).toBe("running");
    const cancelQueued = await app.app.inject({ method: "POST", url: `/api/v1/tasks/${queued}/cancel` });
    expect([cancelQueued.statusCode, envelope<{ status: string }>(cancelQueued).data.status]).toEqual([200, "cancelled"]);
    const cancelRunning = await app.app.inject({ method: "POST", url: `/api/v1/tasks/${slow}/cancel` });
    expect(envelope<{ status: string }>(cancelRunning).data.status).toBe("cancelled");
    const waiting = envelope<{ task_id: string }>(await submit(app, { task: "the waiting one", approve_plan: true })).data.task_id;
    await waitForStatus(app, waiting, ["interrupted"]);
    expect(envelope<{ status: string }>(await app.app.inject({ method: "POST", url: `/api/v1/tasks/${waiting}/cancel` })).data.status).toBe("cancelled");
    const again = await app.app.inject({ method: "POST", url: `/api/v1/tasks/${waiting}/cancel` });
    expect([again.statusCode, envelope(again).code]).toEqual([409, "task_finished"]);
    expect(app.model?.calls.filter((call) => call.role === "planner")).toHaveLength(2);
  });

  it("runs at most maxRunning tasks at once; the rest wait in the queue and run in order", async () => {
    const app = await makeApp({
      config: { maxRunning: 2 },
      steps: [planStep([subtask("s1", "research", "Step")], { times: 5 }), finalStep("s1", "ok", { delayMs: 150, times: 5 }), reviewStep(0.9, {}, { times: 5 }), answerStep("done", { times: 5 })],
    });
    const ids: string[] = [];
    for (let index = 0; index < 5; index += 1) ids.push(envelope<{ task_id: string }>(await submit(app, { task: `task ${index}` })).data.task_id);
    let most = 0;
    await waitFor(async () => {
      const stats = app.tasks.stats();
      most = Math.max(most, stats.running);
      expect(stats.running).toBeLessThanOrEqual(2);
      const completed = envelope<{ total: number }>(await app.app.inject({ method: "GET", url: "/api/v1/tasks?status=completed" })).data.total;
      return completed === 5 ? true : undefined;
    }, "every task to complete");
    expect(most).toBe(2);
    const started = await Promise.all(ids.map(async (id) => (await app.troupe.store.runs.get(id))?.startedAt ?? 0));
    expect([...started].sort((a, b) => a - b)).toEqual(started);
  });
});

describe("POST /plan and tools", () => {
  it("plans without running or storing anything", async () => {
    const app = await makeApp();
    const response = await app.app.inject({ method: "POST", url: "/api/v1/plan", payload: { task: TASK } });
    expect(response.statusCode).toBe(200);
    const plan = envelope<{ subtasks: Array<{ id: string; dependsOn: string[] }>; total_subtasks: number; depth: number; question: null; graph: { edges: unknown[] } }>(response).data;
    expect(plan.subtasks.map((item) => [item.id, item.dependsOn])).toEqual([
      ["s1", []],
      ["s2", ["s1"]],
    ]);
    expect(plan).toMatchObject({ total_subtasks: 2, depth: 2, question: null });
    // Issue 4's renderer: every node PENDING before a run, each edge labelled with the arguments it feeds.
    expect(plan.graph.edges).toEqual([{ from: "s1", to: "s2", label: "content" }]);
    expect(await app.troupe.store.runs.count()).toBe(0);
  });

  it("lists tools with schemas and calls one through the registry, refusing escapes and other agents' tools", async () => {
    const app = await makeApp();
    const list = envelope<{ tools: Array<{ name: string; parameters: { properties: Record<string, unknown> } }>; count: number }>(await app.app.inject({ method: "GET", url: "/api/v1/tools" })).data;
    expect(list.tools.map((tool) => tool.name)).toEqual([
      "board_post",
      "board_read",
      "calculator",
      "code_run",
      "file_append",
      "file_copy",
      "file_delete",
      "file_list",
      "file_move",
      "file_read",
      "file_write",
      "http_fetch",
      "json",
      "memory_forget",
      "memory_save",
      "memory_search",
      "propose_edit",
      "text_stats",
      "thread_result",
      "web_search",
    ]);
    expect(list.count).toBe(20);
    expect(list.tools.find((tool) => tool.name === "calculator")?.parameters.properties).toHaveProperty("expression");
    const call = await app.app.inject({ method: "POST", url: "/api/v1/tools/call", payload: { tool_name: "calculator", parameters: { expression: "17% of 2,340" } } });
    expect(call.statusCode).toBe(200);
    expect(envelope(call).data).toMatchObject({ tool_name: "calculator", success: true, result: 397.8 });
    const escape = await app.app.inject({ method: "POST", url: "/api/v1/tools/call", payload: { tool_name: "file_read", parameters: { path: "../../etc/passwd" } } });
    expect([escape.statusCode, envelope(escape).code]).toEqual([422, "path_outside_workspace"]);
    expect(envelope(escape).data).toMatchObject({ tool_name: "file_read", success: false });
    const denied = await app.app.inject({ method: "POST", url: "/api/v1/tools/call", payload: { tool_name: "file_write", agent: "research", parameters: { path: "a.txt", content: "x" } } });
    // Issue 6's policy decides (research holds READ, file_write needs WRITE), and says so in its own code.
    expect([denied.statusCode, envelope(denied).code]).toEqual([403, "permission_denied"]);
    const metrics = (await app.app.inject({ method: "GET", url: "/metrics" })).body;
    expect(metrics).toMatch(/agent_tool_calls_total\{tool="calculator",outcome="ok"\} 1/);
    expect(metrics).toMatch(/agent_tool_calls_total\{tool="file_read",outcome="path_outside_workspace"\} 1/);
  });

  it("goes through permissions and the audit trail: the API key's name as the principal, the operator by default, an agent's grants when named, and a high-risk call refused at once", async () => {
    // execute may delete files, but only with a person's approval (file_delete is high-risk).
    const app = await makeApp({ config: { apiKeys: "alice:key-alice-123" }, toolsConfig: { permissions: { grants: [{ agent: "execute", tool: "file_delete", level: "WRITE" }] } } });
    const alice = { authorization: "Bearer key-alice-123" };
    const listed = envelope<{ tools: Array<{ name: string; permission: string; risk_level: string; needs_approval: boolean; agents: string[] }> }>(
      await app.app.inject({ method: "GET", url: "/api/v1/tools", headers: alice }),
    ).data.tools;
    expect(listed.find((tool) => tool.name === "file_delete")).toMatchObject({ permission: "WRITE", risk_level: "high", needs_approval: true, agents: ["execute", "cleanup"] });
    expect(listed.find((tool) => tool.name === "file_read")?.agents).toEqual(["research", "code", "execute"]);
    const call = (payload: Record<string, unknown>) => app.app.inject({ method: "POST", url: "/api/v1/tools/call", payload, headers: alice });

    // As the operator (no agent): every level, no approval; audited with the key's name.
    expect((await call({ tool_name: "file_write", parameters: { path: "notes.txt", content: "one" } })).statusCode).toBe(200);
    // As an agent without the grant: denied by the policy.
    const denied = await call({ tool_name: "file_delete", agent: "code", parameters: { path: "notes.txt" } });
    expect([denied.statusCode, envelope(denied).code]).toEqual([403, "permission_denied"]);
    // As an agent that may delete only with a person's approval: refused at once, not left hanging, and nothing deleted.
    const started = Date.now();
    const waiting = await call({ tool_name: "file_delete", agent: "execute", parameters: { path: "notes.txt" } });
    expect([waiting.statusCode, envelope(waiting).code]).toEqual([403, "approval_required"]);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(readFileSync(path.join(app.directory, "workspace", "notes.txt"), "utf8")).toBe("one");
    // The operator deletes it.
    expect((await call({ tool_name: "file_delete", parameters: { path: "notes.txt" } })).statusCode).toBe(200);
    expect(existsSync(path.join(app.directory, "workspace", "notes.txt"))).toBe(false);
    const unknownAgent = await call({ tool_name: "calculator", agent: "nobody", parameters: { expression: "1+1" } });
    expect([unknownAgent.statusCode, envelope(unknownAgent).code]).toEqual([400, "unknown_agent"]);

    const rows = await app.troupe.store.audit.list({ principal: "alice" });
    expect(rows.map((row) => [row.agent, row.tool, row.decision, row.status])).toEqual([
      ["operator", "file_write", "allowed", "ok"],
      ["code", "file_delete", "denied", "not_run"],
      ["execute", "file_delete", "denied", "not_run"],
      ["operator", "file_delete", "allowed", "ok"],
    ]);
    expect(rows.every((row) => row.principal === "alice" && row.runId === null)).toBe(true);
  });
});
