import { Role, type Task, TaskState } from "@a2a-js/sdk";
import { Client as A2AClient } from "@a2a-js/sdk/client";
import { LegacyJsonRpcTransport, parseLegacyAgentCard } from "@a2a-js/sdk/compat/v0_3/client";
import { ContentTypeNotSupportedError, RequestMalformedError, TaskNotFoundError, UnsupportedOperationError } from "@a2a-js/sdk/errors";
import { describe, expect, it } from "vitest";
import { answerStep, planStep, questionStep, reviewStep, subtask } from "../../src/testing/script.js";
import { a2aClient, a2aMessage, listen, sendRequest } from "../protocol-helpers.js";
import { makeApp, type TestApp, waitFor } from "../server-helpers.js";

// What the A2A TCK checks of troupe's A2A agent, as troupe's own tests: the JSON-RPC envelope,
// the checks of a message and of the request parameters, idempotency by messageId, ListTasks'
// order, cursor and filters, and what a blocking send waits for. Driven by @a2a-js/sdk's own
// clients (v1.0, and v0.3 through its legacy transport), and by raw JSON-RPC where the SDK
// will not send malformed input.

/** A raw JSON-RPC call (the body as given, string or value); its HTTP status and parsed answer. */
async function rpc(base: string, body: unknown, headers: Record<string, string> = { "A2A-Version": "1.0" }) {
  const response = await fetch(`${base}/a2a/jsonrpc`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: typeof body === "string" ? body : JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as { id?: unknown; result?: Record<string, unknown>; error?: { code: number; message: string } } };
}

/** A legacy (A2A 0.3) client on the SDK's own v0.3 JSON-RPC transport. */
async function legacyClient(base: string): Promise<A2AClient> {
  const card = parseLegacyAgentCard(await (await fetch(`${base}/.well-known/agent-card.json`)).json());
  return new A2AClient(new LegacyJsonRpcTransport({ endpoint: `${base}/a2a/jsonrpc` }), card);
}

/** Submits a task through the REST API (approvals there are what A2A cannot ask for); its id. */
async function submit(app: TestApp, body: Record<string, unknown>): Promise<string> {
  const response = await app.app.inject({ method: "POST", url: "/api/v1/execute", payload: body });
  expect(response.statusCode).toBe(202);
  return (response.json() as { data: { task_id: string } }).data.task_id;
}

async function settled(app: TestApp, id: string, statuses: string[]): Promise<void> {
  await waitFor(async () => (statuses.includes((await app.troupe.store.runs.get(id))?.status ?? "") ? true : undefined), `${id} to be ${statuses.join(" or ")}`);
}

describe("troupe's A2A agent, as the A2A TCK checks it", () => {
  it("answers a request that is not a JSON-RPC request -32600 Invalid Request (with its id when that is valid), on A2A 1.0 and 0.3", async () => {
    const app = await makeApp();
    const base = await listen(app);
    for (const headers of [{ "A2A-Version": "1.0" }, {}] as Array<Record<string, string>>) {
      const invalid = [
        [{ jsonrpc: "1.0", id: 1, method: "GetTask", params: { id: "x" } }, 1],
        [{ id: 2, method: "GetTask", params: { id: "x" } }, 2],
        [{ jsonrpc: "2.0", id: 3, params: {} }, 3],
        [{ jsonrpc: "2.0", id: 4, method: 42 }, 4],
        [{ jsonrpc: "2.0", id: { no: 1 }, method: "GetTask", params: { id: "x" } }, null],
        [[{ jsonrpc: "2.0", id: 5, method: "GetTask", params: { id: "x" } }], null],
        [[], null],
        ["", null],
        ["1", null],
        ['"GetTask"', null],
      ] as const;
      for (const [sent, id] of invalid) {
        const answer = await rpc(base, sent, headers);
        expect({ sent, ...answer }).toMatchObject({ sent, status: 200, body: { jsonrpc: "2.0", id, error: { code: -32600, message: expect.stringMatching(/^Invalid Request: /) } } });
      }
      // Not JSON at all is a parse error; an unknown method, not found; params that are not an object, invalid params.
      expect((await rpc(base, "{nope", headers)).body.error?.code).toBe(-32700);
      expect((await rpc(base, { jsonrpc: "2.0", id: 6, method: "NoSuchMethod", params: {} }, headers)).body).toMatchObject({ id: 6, error: { code: -32601 } });
      expect((await rpc(base, { jsonrpc: "2.0", id: 7, method: "GetTask", params: ["x"] }, { "A2A-Version": "1.0" })).body).toMatchObject({ id: 7, error: { code: -32602 } });
    }
    expect(await app.troupe.store.runs.count({})).toBe(0);
  });

  it("refuses a message without a user's role, with a part that holds nothing or a file, and a negative historyLength anywhere; nothing is created", async () => {
    const app = await makeApp();
    const base = await listen(app);
    const client = await a2aClient(base);
    const message = a2aMessage("compute 2+3");
    await expect(client.sendMessage(sendRequest({ ...message, role: Role.ROLE_UNSPECIFIED }))).rejects.toThrow(/role is required/);
    await expect(client.sendMessage(sendRequest({ ...message, role: Role.ROLE_AGENT }))).rejects.toThrow(/role must be ROLE_USER/);
    await expect(client.sendMessage(sendRequest({ ...message, parts: [] }))).rejects.toThrow(/parts is empty/);
    const raw = { content: { $case: "raw" as const, value: Buffer.from([1, 2, 3]) }, mediaType: "application/octet-stream", filename: "x.bin", metadata: undefined };
    await expect(client.sendMessage(sendRequest({ ...message, parts: [...message.parts, raw] }))).rejects.toBeInstanceOf(ContentTypeNotSupportedError);
    const request = sendRequest(message);
    await expect(client.sendMessage({ ...request, configuration: { ...request.configuration!, historyLength: -1 } })).rejects.toThrow(/historyLength must be a whole number from 0/);
    // The wire forms the SDK will not send: no role, a part with nothing in it.
    expect((await rpc(base, { jsonrpc: "2.0", id: 1, method: "SendMessage", params: { message: { messageId: "m1", parts: [{ text: "compute 2+3" }] } } })).body.error).toMatchObject({ code: -32602, message: expect.stringMatching(/role is required/) });
    expect((await rpc(base, { jsonrpc: "2.0", id: 2, method: "SendMessage", params: { message: { messageId: "m2", role: "ROLE_USER", parts: [{ text: "compute 2+3" }, { nothing: 1 }] } } })).body.error).toMatchObject({ code: -32602, message: expect.stringMatching(/parts\[1\] holds nothing/) });
    expect((await rpc(base, { jsonrpc: "2.0", id: 3, method: "message/send", params: { message: { messageId: "m3", kind: "message", parts: [{ kind: "text", text: "compute 2+3" }] } } }, {})).body.error?.code).toBe(-32602);
    expect(await app.troupe.store.runs.count({})).toBe(0);

    const task = (await client.sendMessage(sendRequest(message))) as Task;
    await expect(client.getTask({ tenant: "", id: task.id, historyLength: -1 })).rejects.toBeInstanceOf(RequestMalformedError);
    await expect(client.listTasks({ tenant: "", contextId: "", status: TaskState.TASK_STATE_UNSPECIFIED, pageSize: 10, pageToken: "", historyLength: -2, statusTimestampAfter: undefined })).rejects.toThrow(/historyLength/);
    const legacy = await legacyClient(base);
    await expect(legacy.getTask({ tenant: "", id: task.id, historyLength: -1 })).rejects.toThrow(/historyLength must be a whole number from 0/);
    expect((await client.getTask({ tenant: "", id: task.id, historyLength: 0 })).history).toEqual([]);
    expect(await app.troupe.store.runs.count({})).toBe(1);
  });

  it("takes a message id as the sender's idempotency key: the same message again is the same task, another message under it is refused and creates nothing; another key's same id is its own", async () => {
    const app = await makeApp({ config: { apiKeys: "alice:alice-key,bob:bob-key" } });
    const base = await listen(app);
    const alice = await a2aClient(base, { key: "alice-key" });
    const first = (await alice.sendMessage(sendRequest(a2aMessage("compute 2+3", { messageId: "msg-1" })))) as Task;
    expect(first.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const again = (await alice.sendMessage(sendRequest(a2aMessage("compute 2+3", { messageId: "msg-1" })))) as Task;
    expect(again.id).toBe(first.id);
    const reused = alice.sendMessage(sendRequest(a2aMessage("compute 7*7", { messageId: "msg-1" })));
    await expect(reused).rejects.toBeInstanceOf(RequestMalformedError);
    await expect(reused).rejects.toThrow(new RegExp(`messageId msg-1 was already sent with another message \\(task ${first.id}\\)`));
    // The same refusal for an A2A 0.3 peer.
    const legacy = new A2AClient(
      new LegacyJsonRpcTransport({ endpoint: `${base}/a2a/jsonrpc`, fetchImpl: ((input: string | URL | Request, init: RequestInit = {}) => fetch(input, { ...init, headers: { ...Object.fromEntries(new Headers(init.headers).entries()), authorization: "Bearer alice-key" } })) as typeof fetch }),
      parseLegacyAgentCard(await (await fetch(`${base}/.well-known/agent-card.json`)).json()),
    );
    await expect(legacy.sendMessage(sendRequest(a2aMessage("compute 8*8", { messageId: "msg-1" })))).rejects.toThrow(/already sent with another message/);
    expect(await app.troupe.store.runs.count({ owner: "alice" })).toBe(1);
    // Bob's msg-1 is Bob's message.
    const bob = await a2aClient(base, { key: "bob-key" });
    const his = (await bob.sendMessage(sendRequest(a2aMessage("compute 7*7", { messageId: "msg-1" })))) as Task;
    expect(his.id).not.toBe(first.id);
    expect(his.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(await app.troupe.store.runs.count({})).toBe(2);
    await expect(bob.getTask({ tenant: "", id: first.id })).rejects.toBeInstanceOf(TaskNotFoundError);
    // At the same moment: the same message twice is one task; two messages under one id, one task and one refusal.
    const twins = await Promise.all([1, 2].map(() => alice.sendMessage(sendRequest(a2aMessage("compute 3+3", { messageId: "msg-2" })))));
    expect((twins[0] as Task).id).toBe((twins[1] as Task).id);
    const rivals = await Promise.allSettled(["compute 4+4", "compute 5+5"].map((text) => alice.sendMessage(sendRequest(a2aMessage(text, { messageId: "msg-3" })))));
    expect(rivals.map((outcome) => outcome.status).sort()).toEqual(["fulfilled", "rejected"]);
    expect(rivals.find((outcome) => outcome.status === "rejected")?.reason).toBeInstanceOf(RequestMalformedError);
    expect(await app.troupe.store.runs.count({ owner: "alice" })).toBe(3);
  });

  it("refuses a message to an ended task, or with another task's context, saying how to go on; nothing is answered or created", async () => {
    const app = await makeApp({
      steps: [questionStep("Which number should I double?"), planStep([subtask("s1", "execute", "Double it", { tool: "calculator", args: { expression: { value: "21*2" } } })]), reviewStep(1), answerStep("42")],
    });
    const client = await a2aClient(await listen(app));
    const waiting = (await client.sendMessage(sendRequest(a2aMessage("double the number I will give you")))) as Task;
    expect(waiting.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    await expect(client.sendMessage(sendRequest(a2aMessage("21", { taskId: waiting.id, contextId: "another-context" })))).rejects.toThrow(/is not task .* context/);
    expect((await app.troupe.store.runs.get(waiting.id))?.status).toBe("interrupted");
    const done = (await client.sendMessage(sendRequest(a2aMessage("21", { taskId: waiting.id, contextId: waiting.contextId })))) as Task;
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const late = client.sendMessage(sendRequest(a2aMessage("and 22?", { taskId: waiting.id })));
    await expect(late).rejects.toBeInstanceOf(UnsupportedOperationError);
    await expect(late).rejects.toThrow(`send a new message (no taskId) with contextId ${waiting.contextId}`);
    expect(await app.troupe.store.runs.count({})).toBe(1);
  });

  it("lists tasks last changed first, a page at a time by a cursor, filtered by state, context and time changed; a page token or timestamp it did not give is refused", async () => {
    const app = await makeApp();
    const base = await listen(app);
    const client = await a2aClient(base);
    const completed = await submit(app, { task: "compute 2+3", thread_id: "ctx-a" });
    await settled(app, completed, ["completed"]);
    const waiting = await submit(app, { task: "compute 4+4", approve_plan: true });
    await settled(app, waiting, ["interrupted"]);
    const rejected = await submit(app, { task: "compute 5+5", approve_plan: true });
    await settled(app, rejected, ["interrupted"]);
    expect((await app.app.inject({ method: "POST", url: `/api/v1/tasks/${rejected}/resume`, payload: { decision: "reject" } })).statusCode).toBe(202);
    await settled(app, rejected, ["failed"]);
    const cancelled = await submit(app, { task: "compute 6+6", approve_plan: true });
    await settled(app, cancelled, ["interrupted"]);
    expect((await app.app.inject({ method: "POST", url: `/api/v1/tasks/${cancelled}/cancel` })).statusCode).toBe(200);
    const second = await submit(app, { task: "compute 1+1", thread_id: "ctx-a" });
    await settled(app, second, ["completed"]);
    const all = [completed, waiting, rejected, cancelled, second];

    const records = await app.troupe.store.runs.getMany(all);
    const expected = records.sort((a, b) => b.updatedAt - a.updatedAt || (a.id < b.id ? 1 : -1)).map((record) => record.id);
    const list = (fields: Partial<Parameters<typeof client.listTasks>[0]> = {}) =>
      client.listTasks({ tenant: "", contextId: "", status: TaskState.TASK_STATE_UNSPECIFIED, pageSize: undefined, pageToken: "", historyLength: undefined, statusTimestampAfter: undefined, ...fields });
    const everything = await list();
    expect(everything).toMatchObject({ totalSize: 5, pageSize: 50, nextPageToken: "" });
    expect(everything.tasks.map((task) => task.id)).toEqual(expected);
    // Each task's status timestamp is the time the list is ordered by.
    const stamps = everything.tasks.map((task) => Date.parse(task.status?.timestamp ?? ""));
    expect([...stamps].sort((a, b) => b - a)).toEqual(stamps);

    const paged: string[] = [];
    let token = "";
    for (let page = 0; page < 5; page += 1) {
      const answer = await list({ pageSize: 2, pageToken: token });
      expect(answer).toMatchObject({ totalSize: 5, pageSize: 2 });
      paged.push(...answer.tasks.map((task) => task.id));
      token = answer.nextPageToken;
      if (token === "") break;
    }
    expect(paged).toEqual(expected);

    const ids = async (fields: Partial<Parameters<typeof client.listTasks>[0]>) => {
      const answer = await list(fields);
      expect(answer.totalSize).toBe(answer.tasks.length);
      return answer.tasks.map((task) => task.id).sort();
    };
    expect(await ids({ status: TaskState.TASK_STATE_INPUT_REQUIRED })).toEqual([waiting]);
    expect(await ids({ status: TaskState.TASK_STATE_REJECTED })).toEqual([rejected]);
    expect(await ids({ status: TaskState.TASK_STATE_CANCELED })).toEqual([cancelled]);
    expect(await ids({ status: TaskState.TASK_STATE_COMPLETED })).toEqual([completed, second].sort());
    expect(await ids({ status: TaskState.TASK_STATE_WORKING })).toEqual([]);
    expect(await ids({ contextId: "ctx-a" })).toEqual([completed, second].sort());
    const newest = records.find((record) => record.id === expected[1]);
    expect(await ids({ statusTimestampAfter: new Date(newest?.updatedAt ?? 0).toISOString() })).toEqual(records.filter((record) => record.updatedAt >= (newest?.updatedAt ?? 0)).map((record) => record.id).sort());

    await expect(list({ pageToken: "invalid-token-xyz" })).rejects.toThrow(/pageToken is not one this server gave/);
    await expect(list({ pageToken: Buffer.from('["x", 1]').toString("base64url") })).rejects.toBeInstanceOf(RequestMalformedError);
    for (const bad of ["-1", "2023-13-45T99:00:00Z", "yesterday", "1700000000"]) {
      await expect(list({ statusTimestampAfter: bad })).rejects.toThrow(/statusTimestampAfter must be an ISO 8601 timestamp/);
    }
    // The same over HTTP+JSON (GET /a2a/rest/v1/tasks).
    const rest = await a2aClient(base, { prefer: "HTTP+JSON" });
    const restPage = await rest.listTasks({ tenant: "", contextId: "", status: TaskState.TASK_STATE_UNSPECIFIED, pageSize: 2, pageToken: "", historyLength: undefined, statusTimestampAfter: undefined });
    expect(restPage.tasks.map((task) => task.id)).toEqual(expected.slice(0, 2));
    const restNext = await rest.listTasks({ tenant: "", contextId: "", status: TaskState.TASK_STATE_UNSPECIFIED, pageSize: 2, pageToken: restPage.nextPageToken, historyLength: undefined, statusTimestampAfter: undefined });
    expect(restNext.tasks.map((task) => task.id)).toEqual(expected.slice(2, 4));
    await expect(rest.listTasks({ tenant: "", contextId: "", status: TaskState.TASK_STATE_UNSPECIFIED, pageSize: 2, pageToken: "invalid-token-xyz", historyLength: undefined, statusTimestampAfter: undefined })).rejects.toBeInstanceOf(RequestMalformedError);
  });

  it("runs several tasks on one context in turn: one sent while another is going waits for it; one sent while another waits for a person is refused", async () => {
    const app = await makeApp({
      steps: [
        planStep([subtask("s1", "execute", "Multiply", { tool: "calculator", args: { expression: { value: "6*7" } } })], { delayMs: 1_500 }),
        planStep([subtask("s1", "execute", "Add", { tool: "calculator", args: { expression: { value: "6+7" } } })]),
        questionStep("Which one?"),
        reviewStep(1, {}, { times: 2 }),
        answerStep("done", { times: 2 }),
      ],
    });
    const client = await a2aClient(await listen(app));
    const first = (await client.sendMessage(sendRequest(a2aMessage("multiply 6 by 7", { contextId: "shared" }), true))) as Task;
    await settled(app, first.id, ["running"]);
    const second = (await client.sendMessage(sendRequest(a2aMessage("add 6 and 7", { contextId: "shared" }), true))) as Task;
    expect(second).toMatchObject({ contextId: "shared", status: { state: TaskState.TASK_STATE_SUBMITTED } });
    expect((await app.troupe.store.runs.get(second.id))?.waitsFor).toBe(first.id);
    await settled(app, second.id, ["completed"]);
    expect((await app.troupe.store.runs.get(first.id))?.status).toBe("completed");
    const waiting = (await client.sendMessage(sendRequest(a2aMessage("pick one", { contextId: "shared" })))) as Task;
    expect(waiting.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    await expect(client.sendMessage(sendRequest(a2aMessage("the first", { contextId: "shared" })))).rejects.toThrow(`has task ${waiting.id}, which waits for a person`);
    expect(await app.troupe.store.runs.count({})).toBe(3);
  });

  it("a blocking send answers when the run rests (ended, or waiting for a person); with returnImmediately the task comes back in flight, is listed as working and is cancelled there", async () => {
    const app = await makeApp({
      steps: [
        questionStep("Which number?"),
        planStep([subtask("s1", "execute", "Multiply", { tool: "calculator", args: { expression: { value: "6*7" } } })], { gate: "never" }),
      ],
    });
    const client = await a2aClient(await listen(app));
    const rests = (await client.sendMessage(sendRequest(a2aMessage("a number, please")))) as Task;
    expect(rests.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const inFlight = (await client.sendMessage(sendRequest(a2aMessage("multiply 6 by 7"), true))) as Task;
    expect([TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING]).toContain(inFlight.status?.state);
    await settled(app, inFlight.id, ["running"]);
    const working = await client.listTasks({ tenant: "", contextId: "", status: TaskState.TASK_STATE_WORKING, pageSize: 10, pageToken: "", historyLength: undefined, statusTimestampAfter: undefined });
    expect(working.tasks.map((task) => task.id)).toEqual([inFlight.id]);
    expect((await client.cancelTask({ tenant: "", id: inFlight.id, metadata: undefined })).status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect((await app.troupe.store.runs.get(inFlight.id))?.status).toBe("cancelled");
  });
});
