import { type Task, TaskState } from "@a2a-js/sdk";
import { describe, expect, it } from "vitest";
import { deliveryFor } from "../../src/store/webhooks/contract.js";
import { Background } from "../../src/server/background.js";
import type { RunRecord } from "../../src/store/index.js";
import { a2aClient, a2aMessage, listen, mcpClient, sendRequest, structured } from "../protocol-helpers.js";
import { envelope, makeApp, type TestApp, waitForStatus } from "../server-helpers.js";

// A thread's name is its key's own (core/thread-key.ts). On main the first key to post on a
// name took it: bob posting on "daily" first made alice's "daily" answer 404 thread_not_found,
// on REST, MCP, A2A and schedules alike.

const KEYS = { apiKeys: "alice:a-key,bob:b-key" };
const ALICE = { authorization: "Bearer a-key" };
const BOB = { authorization: "Bearer b-key" };
/** Two subtasks with the offline model (s1 computes, s2 saves): a run to fork from s2. */
const TASK = "compute 17% of 2,340 and save it to result.txt";

type Body = Record<string, unknown>;
const submit = (app: TestApp, headers: Body, payload: Body) => app.app.inject({ method: "POST", url: "/api/v1/execute", headers: headers as Record<string, string>, payload });
const get = (app: TestApp, headers: Record<string, string>, url: string) => app.app.inject({ method: "GET", url, headers });

async function run(app: TestApp, headers: Record<string, string>, payload: Body, statuses = ["completed", "failed"]): Promise<Record<string, unknown>> {
  const accepted = await submit(app, headers, payload);
  expect(accepted.statusCode, accepted.body).toBe(202);
  return waitForStatus(app, envelope<{ task_id: string }>(accepted).data.task_id, statuses, headers);
}

describe("two keys may both have a thread named daily", () => {
  it("REST: both start daily at once, each continues, lists, reads the history of, forks and deletes its own, and neither sees the other's", async () => {
    const app = await makeApp({ config: KEYS });
    const [a, b] = await Promise.all([submit(app, ALICE, { task: TASK, thread_id: "daily" }), submit(app, BOB, { task: TASK, thread_id: "daily" })]);
    expect([a.statusCode, b.statusCode]).toEqual([202, 202]);
    const aliceFirst = envelope<{ task_id: string; thread_id: string }>(a).data;
    const bobFirst = envelope<{ task_id: string; thread_id: string }>(b).data;
    expect([aliceFirst.thread_id, bobFirst.thread_id]).toEqual(["daily", "daily"]);
    await waitForStatus(app, aliceFirst.task_id, ["completed"], ALICE);
    await waitForStatus(app, bobFirst.task_id, ["completed"], BOB);
    // Kept under each key's own thread.
    expect((await app.troupe.store.runs.get(aliceFirst.task_id))?.threadId).toBe("alice/daily");
    expect((await app.troupe.store.runs.get(bobFirst.task_id))?.threadId).toBe("bob/daily");

    // Each continues its own conversation: the earlier turn is its own, not the other key's.
    const aliceSecond = await run(app, ALICE, { task: "compute 2+3", thread_id: "daily" });
    expect(aliceSecond.thread_id).toBe("daily");
    expect((aliceSecond.conversation as Array<{ task_id: string }>).map((turn) => turn.task_id)).toEqual([aliceFirst.task_id]);
    const listed = async (headers: Record<string, string>) => envelope<{ items: Array<{ task_id: string; thread_id: string }> }>(await get(app, headers, "/api/v1/tasks?thread_id=daily")).data.items;
    expect((await listed(ALICE)).map((item) => item.task_id)).toEqual([aliceSecond.task_id, aliceFirst.task_id]);
    expect(await listed(BOB)).toEqual([expect.objectContaining({ task_id: bobFirst.task_id, thread_id: "daily" })]);

    // The history of "daily" is the caller's own thread's.
    const history = async (headers: Record<string, string>) => envelope<{ thread_id: string; checkpoints: Array<{ task_id: string }> }>(await get(app, headers, "/api/v1/threads/daily/history")).data;
    const aliceHistory = await history(ALICE);
    expect(aliceHistory.thread_id).toBe("daily");
    expect(new Set(aliceHistory.checkpoints.map((entry) => entry.task_id))).toEqual(new Set([aliceFirst.task_id, aliceSecond.task_id]));
    expect(new Set((await history(BOB)).checkpoints.map((entry) => entry.task_id))).toEqual(new Set([bobFirst.task_id]));

    // Forks: both into a thread named "forked"; a second fork of alice's into her "forked" is refused (it is hers, and holds runs).
    const fork = (headers: Record<string, string>, taskId: string) => app.app.inject({ method: "POST", url: `/api/v1/tasks/${taskId}/fork`, headers, payload: { from: "s2", thread_id: "forked" } });
    const [aliceFork, bobFork] = [await fork(ALICE, aliceFirst.task_id), await fork(BOB, bobFirst.task_id)];
    expect([aliceFork.statusCode, bobFork.statusCode]).toEqual([202, 202]);
    const aliceForked = envelope<{ task_id: string; thread_id: string; forked_from: { thread_id: string } }>(aliceFork).data;
    expect(aliceForked).toMatchObject({ thread_id: "forked", forked_from: { thread_id: "daily" } });
    await waitForStatus(app, aliceForked.task_id, ["completed"], ALICE);
    await waitForStatus(app, envelope<{ task_id: string }>(bobFork).data.task_id, ["completed"], BOB);
    const again = await fork(ALICE, aliceFirst.task_id);
    expect([again.statusCode, envelope(again).code, envelope(again).message]).toEqual([409, "thread_in_use", "thread forked already holds runs; a fork starts a thread of its own"]);
    // Neither may fork, read or delete the other's task.
    expect((await app.app.inject({ method: "POST", url: `/api/v1/tasks/${aliceFirst.task_id}/fork`, headers: BOB, payload: { from: "s2" } })).statusCode).toBe(404);
    expect((await get(app, BOB, `/api/v1/tasks/${aliceFirst.task_id}`)).statusCode).toBe(404);
    expect((await get(app, BOB, `/api/v1/tasks/${aliceFirst.task_id}/events`)).statusCode).toBe(404);
    expect((await app.app.inject({ method: "DELETE", url: `/api/v1/tasks/${aliceFirst.task_id}`, headers: BOB })).statusCode).toBe(404);

    // Bob deletes his "daily": alice's is untouched.
    const deleted = await app.app.inject({ method: "DELETE", url: "/api/v1/threads/daily", headers: BOB });
    expect([deleted.statusCode, envelope<{ runs: number }>(deleted).data.runs]).toEqual([200, 1]);
    const gone = await get(app, BOB, "/api/v1/threads/daily/history");
    expect([gone.statusCode, envelope(gone).code, envelope(gone).message]).toEqual([404, "thread_not_found", "there is no thread daily of yours"]);
    expect((await history(ALICE)).checkpoints.length).toBe(aliceHistory.checkpoints.length);
    expect((await listed(ALICE)).length).toBe(2);
  });

  it("a waiting run on alice's daily does not make bob's busy; each answers only its own", async () => {
    const app = await makeApp({ config: KEYS });
    const alice = await run(app, ALICE, { task: TASK, thread_id: "daily", approve_plan: true }, ["interrupted"]);
    // On main: 404 thread_not_found. Bob's daily is free, even refusing a busy thread.
    const bob = await run(app, BOB, { task: TASK, thread_id: "daily", approve_plan: true, on_busy: "reject" }, ["interrupted"]);
    expect((await app.app.inject({ method: "POST", url: `/api/v1/tasks/${alice.task_id}/resume`, headers: BOB, payload: { decision: "approve" } })).statusCode).toBe(404);
    expect((await app.app.inject({ method: "POST", url: `/api/v1/tasks/${alice.task_id}/cancel`, headers: BOB })).statusCode).toBe(404);
    expect((await app.app.inject({ method: "POST", url: `/api/v1/tasks/${bob.task_id as string}/resume`, headers: BOB, payload: { decision: "approve" } })).statusCode).toBe(202);
    expect((await waitForStatus(app, bob.task_id as string, ["completed"], BOB)).status).toBe("completed");
    // Alice's still waits, on her own thread's checkpoint.
    const waiting = envelope<{ status: string; interrupts: unknown[] }>(await get(app, ALICE, `/api/v1/tasks/${alice.task_id as string}`)).data;
    expect(waiting.status).toBe("interrupted");
    expect(waiting.interrupts).toHaveLength(1);
    // Her own thread is busy for her: a second run refusing a busy thread is refused, naming it as she does.
    const busy = await submit(app, ALICE, { task: "compute 2+3", thread_id: "daily", on_busy: "reject" });
    expect([busy.statusCode, envelope(busy).code]).toEqual([409, "thread_busy"]);
    expect(envelope(busy).message).toMatch(/^thread daily has a run that is interrupted/);
    expect((await app.app.inject({ method: "POST", url: `/api/v1/tasks/${alice.task_id as string}/resume`, headers: ALICE, payload: { decision: "approve" } })).statusCode).toBe(202);
    expect((await waitForStatus(app, alice.task_id as string, ["completed"], ALICE)).status).toBe("completed");
  });

  it("a name cannot reach another key's thread: '/' is refused, and a name that spells one is the caller's own", async () => {
    const app = await makeApp({ config: KEYS });
    await run(app, BOB, { task: "compute 2+3", thread_id: "daily" });
    const slash = await submit(app, ALICE, { task: "compute 2+3", thread_id: "bob/daily" });
    expect([slash.statusCode, envelope(slash).code]).toEqual([400, "thread_id_invalid"]);
    for (const url of ["/api/v1/threads/bob%2Fdaily/history", "/api/v1/tasks?thread_id=bob%2Fdaily"]) expect((await get(app, ALICE, url)).statusCode).toBe(400);
    expect((await app.app.inject({ method: "DELETE", url: "/api/v1/threads/bob%2Fdaily", headers: ALICE })).statusCode).toBe(400);
    const spelled = await run(app, ALICE, { task: "compute 2+3", thread_id: "bob:daily" });
    expect(spelled.conversation).toEqual([]);
    expect((await app.troupe.store.runs.get(spelled.task_id as string))?.threadId).toBe("alice/bob:daily");
  });

  it("without keys a thread keeps its name (the local caller's), as its rows did before", async () => {
    const app = await makeApp();
    const done = await run(app, {}, { task: "compute 2+3", thread_id: "daily" });
    expect(done.thread_id).toBe("daily");
    expect((await app.troupe.store.runs.get(done.task_id as string))?.threadId).toBe("daily");
  });

  it("MCP: run_task and list_runs with the same thread_id from two keys stay on each key's own thread", async () => {
    const app = await makeApp({ config: KEYS });
    const base = await listen(app);
    const [alice, bob] = [await mcpClient(base, { key: "a-key" }), await mcpClient(base, { key: "b-key" })];
    const first = structured<{ run_id: string; thread_id: string; status: string }>(await alice.callTool({ name: "run_task", arguments: { task: "compute 2+3", thread_id: "daily" } }));
    const other = structured<{ run_id: string; thread_id: string; status: string }>(await bob.callTool({ name: "run_task", arguments: { task: "compute 4+4", thread_id: "daily" } }));
    expect([first.status, first.thread_id, other.status, other.thread_id]).toEqual(["completed", "daily", "completed", "daily"]);
    const second = structured<{ run_id: string }>(await alice.callTool({ name: "run_task", arguments: { task: "compute 1+1", thread_id: "daily" } }));
    const list = async (client: typeof alice) => structured<{ items: Array<{ task_id: string; thread_id: string }> }>(await client.callTool({ name: "list_runs", arguments: { thread_id: "daily" } })).items;
    expect((await list(alice)).map((item) => [item.task_id, item.thread_id])).toEqual([
      [second.run_id, "daily"],
      [first.run_id, "daily"],
    ]);
    expect((await list(bob)).map((item) => item.task_id)).toEqual([other.run_id]);
    expect((await app.troupe.store.runs.get(other.run_id))?.threadId).toBe("bob/daily");
  });

  it("A2A: a contextId is the key's own thread name", async () => {
    const app = await makeApp({ config: KEYS });
    const base = await listen(app);
    const [alice, bob] = [await a2aClient(base, { key: "a-key" }), await a2aClient(base, { key: "b-key" })];
    const first = (await alice.sendMessage(sendRequest(a2aMessage("compute 2+3", { contextId: "daily" })))) as Task;
    const other = (await bob.sendMessage(sendRequest(a2aMessage("compute 4+4", { contextId: "daily" })))) as Task;
    expect([first.contextId, other.contextId, first.status?.state, other.status?.state]).toEqual(["daily", "daily", TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_COMPLETED]);
    const listed = async (client: typeof alice) => (await client.listTasks({ tenant: "", contextId: "daily", status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: "", statusTimestampAfter: undefined })).tasks.map((task) => task.id);
    expect(await listed(alice)).toEqual([first.id]);
    expect(await listed(bob)).toEqual([other.id]);
    await expect(bob.getTask({ tenant: "", id: first.id })).rejects.toThrow(/not found/i);
  });

  it("schedules: each key's schedule daily, on thread daily, is its own and fires onto that key's own thread", async () => {
    const app = await makeApp({ config: KEYS });
    const ids: string[] = [];
    for (const [headers, owner] of [[ALICE, "alice"], [BOB, "bob"]] as const) {
      // The same schedule name for two keys: neither is told the other has one (main answered bob 409 schedule_exists).
      const made = await app.app.inject({ method: "POST", url: "/api/v1/schedules", headers, payload: { name: "daily", cron: "0 9 * * *", task: "compute 2+3", thread_id: "daily" } });
      expect(made.statusCode).toBe(201);
      const data = envelope<{ id: string; name: string; thread_id: string }>(made).data;
      expect([data.name, data.thread_id]).toEqual(["daily", "daily"]);
      ids.push(data.id);
      const again = await app.app.inject({ method: "POST", url: "/api/v1/schedules", headers, payload: { name: "daily", cron: "0 9 * * *", task: "compute 2+3" } });
      expect([again.statusCode, envelope(again).code]).toEqual([409, "schedule_exists"]);
      const byName = await app.app.inject({ method: "GET", url: "/api/v1/schedules/daily", headers });
      expect(envelope<{ id: string; name: string }>(byName).data).toMatchObject({ id: data.id, name: "daily" });
      const listed = await app.app.inject({ method: "GET", url: "/api/v1/schedules", headers });
      expect(envelope<{ items: Array<{ name: string }> }>(listed).data.items.map((item) => item.name)).toEqual(["daily"]);
      // Another key's schedule is not found by its kept name either.
      const other = owner === "alice" ? "bob/daily" : "alice/daily";
      expect((await app.app.inject({ method: "GET", url: `/api/v1/schedules/${encodeURIComponent(other)}`, headers })).statusCode).toBe(404);
    }
    const background = new Background({ troupe: app.troupe, hub: app.hub, logger: app.app.log as never, tasks: app.tasks, serve: true });
    const fired: Array<string | null> = [];
    for (const id of ids) {
      const schedule = await app.troupe.schedules.get(id);
      expect(await background.schedules?.fire(schedule, Date.now())).toBe(true);
      fired.push((await app.troupe.schedules.get(id)).lastRunId);
    }
    // On main bob's tick failed: thread_not_found.
    expect(fired.every((id) => id !== null)).toBe(true);
    const records = (await Promise.all(fired.map((id) => app.troupe.store.runs.get(id as string)))) as RunRecord[];
    expect(records.map((record) => [record.owner, record.threadId])).toEqual([
      ["alice", "alice/daily"],
      ["bob", "bob/daily"],
    ]);
    await waitForStatus(app, records[0]?.id as string, ["completed", "failed"], ALICE);
    await waitForStatus(app, records[1]?.id as string, ["completed", "failed"], BOB);
  });

  it("a webhook's payload names the thread as its owner does", () => {
    const record = { id: "run-1", threadId: "alice/daily", owner: "alice", task: "t", status: "completed", stopReason: "completed", answer: "ok", error: null, interrupt: null, metrics: null, suspended: null, request: { webhook: { url: "https://hooks.example.com/x" } } } as unknown as RunRecord;
    const delivery = deliveryFor("running", record);
    expect(JSON.parse(delivery?.payload ?? "{}").run.threadId).toBe("daily");
  });
});
