import { Client } from "@langchain/langgraph-sdk";
import { describe, expect, it } from "vitest";
import { listen } from "../protocol-helpers.js";
import { envelope, makeApp, type TestApp, waitFor, waitForStatus } from "../server-helpers.js";

// The Agent Protocol on troupe serve, driven by LangGraph's own SDK (`@langchain/langgraph-sdk`'s
// Client) against the app listening on loopback. On main none of it exists: every call is 404.

const TASK = "compute 17% of 2,340 and save it to result.txt";
const KEYS = { apiKeys: "alice:a-key,bob:b-key" };

type Values = Record<string, unknown> & { messages?: Array<{ type: string; content: string; id: string }>; __interrupt__?: Array<{ id: string; value: Record<string, unknown> }> };
type Part = { event: string; data: unknown; id?: string };

/** The SDK's Client on the app's /langgraph, with a key when given; no retries, so a refusal is seen as it is. */
function clientOf(base: string, apiKey?: string): Client {
  return new Client({ apiUrl: `${base}/langgraph`, apiKey: apiKey ?? null, callerOptions: { maxRetries: 0 } });
}

async function collect(stream: AsyncIterable<unknown>): Promise<Part[]> {
  const parts: Part[] = [];
  for await (const part of stream) parts.push(part as Part);
  return parts;
}

/** An HTTP error the SDK threw: its status and the protocol's error body. */
async function refusal(call: Promise<unknown>): Promise<{ status: number; body: { code: string; message: string; metadata: unknown } }> {
  const error = (await call.then(
    () => undefined,
    (thrown: unknown) => thrown,
  )) as { status?: number; text?: string } | undefined;
  expect(error, "the call should have been refused").toBeDefined();
  return { status: error?.status ?? 0, body: JSON.parse(error?.text ?? "{}") as { code: string; message: string; metadata: unknown } };
}

async function setup(config: Record<string, unknown> = {}): Promise<{ app: TestApp; base: string }> {
  const app = await makeApp({ config });
  return { app, base: await listen(app) };
}

describe("the Agent Protocol through LangGraph's SDK Client", () => {
  it("assistants, threads, runs (create, join, wait, get, list), state, history and search drive troupe's real runs", async () => {
    const { app, base } = await setup();
    const client = clientOf(base);

    const [assistant] = await client.assistants.search({ graphId: "troupe" });
    expect(assistant).toMatchObject({ graph_id: "troupe", name: "troupe" });
    expect(await client.assistants.get("troupe")).toEqual(assistant);
    expect(await client.assistants.get(assistant?.assistant_id as string)).toEqual(assistant);
    const graph = await client.assistants.getGraph("troupe");
    expect(graph.nodes.map((node) => node.id)).toEqual(expect.arrayContaining(["planner", "execute", "critic", "synthesizer", "approve_plan"]));
    const schemas = await client.assistants.getSchemas("troupe");
    expect(Object.keys((schemas.input_schema as { properties: object }).properties)).toEqual(expect.arrayContaining(["task", "messages"]));

    const thread = await client.threads.create({ metadata: { owner_tag: "tour" } });
    expect(thread).toMatchObject({ status: "idle", metadata: { owner_tag: "tour" }, values: {} });

    // A run with input is a troupe task through the task service: queued, checkpointed, recorded.
    const run = await client.runs.create(thread.thread_id, "troupe", { input: { messages: [{ type: "human", content: TASK }] } });
    expect(run).toMatchObject({ thread_id: thread.thread_id, assistant_id: assistant?.assistant_id, multitask_strategy: "reject" });
    expect((await app.troupe.store.runs.get(run.run_id))?.task).toBe(TASK);
    const joined = (await client.runs.join(thread.thread_id, run.run_id)) as Values;
    expect(joined.answer).toContain("397.8");
    expect(joined.messages?.map((message) => message.type)).toEqual(["human", "ai"]);
    expect(await client.runs.get(thread.thread_id, run.run_id)).toMatchObject({ run_id: run.run_id, status: "success" });

    // A second turn continues the thread's conversation.
    const second = (await client.runs.wait(thread.thread_id, "troupe", { input: { task: "compute 2+3" } })) as Values;
    expect(second.messages?.map((message) => [message.type, message.content.slice(0, 11)])).toEqual([
      ["human", TASK.slice(0, 11)],
      ["ai", (joined.messages?.[1]?.content ?? "").slice(0, 11)],
      ["human", "compute 2+3"],
      ["ai", "Answered of"],
    ]);
    expect(second.plan).toEqual([expect.objectContaining({ id: "s1", status: "done" })]);
    expect(second.results).toMatchObject({ s1: { status: "done", summary: "2+3 = 5" } });
    const runs = await client.runs.list(thread.thread_id);
    expect(runs.map((listed) => listed.run_id)).toEqual([expect.any(String), run.run_id]);
    expect(runs.every((listed) => listed.status === "success")).toBe(true);

    // The state is the thread's latest LangGraph checkpoint; the history its checkpoints, newest first.
    const state = await client.threads.getState(thread.thread_id);
    expect(state.next).toEqual([]);
    expect(state.tasks).toEqual([]);
    expect(state.checkpoint).toMatchObject({ thread_id: thread.thread_id, checkpoint_ns: "" });
    expect((state.values as Values).answer).toBe(second.answer);
    const history = await client.threads.getHistory(thread.thread_id, { limit: 3 });
    expect(history).toHaveLength(3);
    expect(history[0]?.checkpoint.checkpoint_id).toBe(state.checkpoint.checkpoint_id);
    expect(history[0]?.parent_checkpoint?.checkpoint_id).toBe(history[1]?.checkpoint.checkpoint_id);
    const older = await client.threads.getHistory(thread.thread_id, { limit: 2, before: { configurable: { checkpoint_id: history[2]?.checkpoint.checkpoint_id } } });
    expect(older[0]?.checkpoint.checkpoint_id).toBe(history[2]?.parent_checkpoint?.checkpoint_id);
    const earlier = await client.threads.getState(thread.thread_id, history[2]?.checkpoint.checkpoint_id as string);
    expect(earlier.checkpoint.checkpoint_id).toBe(history[2]?.checkpoint.checkpoint_id);

    // A thread the REST API made is the key's thread too, listed with the graph's metadata.
    const rest = await app.app.inject({ method: "POST", url: "/api/v1/execute", payload: { task: "compute 2^10", thread_id: "from-rest" } });
    await waitForStatus(app, envelope<{ task_id: string }>(rest).data.task_id, ["completed"]);
    expect((await client.threads.search({ metadata: { owner_tag: "tour" } })).map((found) => found.thread_id)).toEqual([thread.thread_id]);
    const byGraph = await client.threads.search({ metadata: { graph_id: "troupe" }, limit: 100 });
    expect(byGraph.map((found) => found.thread_id).sort()).toEqual(["from-rest", thread.thread_id].sort());
    expect(byGraph.find((found) => found.thread_id === "from-rest")?.values).toMatchObject({ task: "compute 2^10", messages: [{ type: "human" }, { type: "ai" }] });
    expect(await client.threads.count({ metadata: { graph_id: "troupe" } })).toBe(2);
    expect(await client.threads.count({ status: "busy" })).toBe(0);
    expect((await client.threads.getState("from-rest")).values).toMatchObject({ task: "compute 2^10" });

    // A run without a thread gets one of its own.
    const stateless = (await client.runs.wait(null, "troupe", { input: { task: "compute 3*7" } })) as Values;
    expect(stateless.answer).toContain("21");

    const updated = await client.threads.update(thread.thread_id, { metadata: { stage: "done" } });
    expect(updated.metadata).toMatchObject({ owner_tag: "tour", stage: "done", graph_id: "troupe" });
    await client.threads.delete(thread.thread_id);
    expect((await refusal(client.threads.get(thread.thread_id))).status).toBe(404);
    expect(await app.troupe.store.runs.get(run.run_id)).toBeUndefined();
  });

  it("streams a run in every mode it answers, with ids a join resumes from", async () => {
    const { base } = await setup();
    const client = clientOf(base);
    const thread = await client.threads.create();
    let created: { run_id: string; thread_id?: string } | undefined;
    const parts = await collect(
      client.runs.stream(thread.thread_id, "troupe", {
        input: { task: TASK },
        streamMode: ["values", "updates", "messages-tuple", "custom", "events", "debug"],
        onRunCreated: (meta) => (created = meta),
      }),
    );
    expect(created?.thread_id).toBe(thread.thread_id);
    expect(parts[0]).toMatchObject({ event: "metadata", data: { run_id: created?.run_id, attempt: 1 } });
    const events = new Set(parts.map((part) => part.event));
    expect([...events].sort()).toEqual(["custom", "events", "messages", "metadata", "updates", "values"]);
    const updates = parts.filter((part) => part.event === "updates").map((part) => Object.keys(part.data as object)[0]);
    expect(updates).toEqual(expect.arrayContaining(["planner", "execute", "synthesizer"]));
    const last = parts.filter((part) => part.event === "values").at(-1)?.data as Values;
    expect(last).toMatchObject({ status: "completed", stop_reason: "completed", plan: [{ id: "s1", status: "done" }, { id: "s2", status: "done" }] });
    expect(last.messages?.at(-1)).toMatchObject({ type: "ai", content: expect.stringContaining("397.8") });
    const chunk = parts.find((part) => part.event === "messages")?.data as [Record<string, unknown>, Record<string, unknown>];
    expect(chunk[0]).toMatchObject({ type: "AIMessageChunk", id: last.messages?.at(-1)?.id });
    expect(chunk[1]).toMatchObject({ langgraph_node: "synthesizer", run_id: created?.run_id });
    expect(parts.filter((part) => part.event === "custom").map((part) => (part.data as { type: string }).type)).toEqual(expect.arrayContaining(["run-start", "plan-ready", "subtask-end", "answer", "run-end"]));

    // Ids are the run's event seq and an index: a join with -1 replays the same stream, one with an id goes on after it.
    const ids = parts.filter((part) => part.id).map((part) => part.id as string);
    expect(new Set(ids).size).toBe(ids.length);
    const modes = { streamMode: ["values", "updates", "messages-tuple", "custom", "events"] as never };
    const replay = await collect(client.runs.joinStream(thread.thread_id, created?.run_id as string, { lastEventId: "-1", ...modes }));
    expect(replay.filter((part) => part.id).map((part) => part.id)).toEqual(ids);
    const middle = ids[Math.floor(ids.length / 2)] as string;
    const rest = await collect(client.runs.joinStream(thread.thread_id, created?.run_id as string, { lastEventId: middle, ...modes }));
    expect(rest.filter((part) => part.id).map((part) => part.id)).toEqual(ids.slice(ids.indexOf(middle) + 1));
    // A join without Last-Event-ID gets what comes from now on: of a finished run, nothing.
    expect((await collect(client.runs.joinStream(thread.thread_id, created?.run_id as string))).filter((part) => part.event !== "metadata")).toEqual([]);
    // LangGraph's legacy messages mode: the answer's metadata, then the message whole.
    const legacy = await collect(client.runs.stream(thread.thread_id, "troupe", { input: { task: "compute 2+3" }, streamMode: ["messages"] }));
    expect(legacy.map((part) => part.event)).toEqual(["metadata", "messages/metadata", "messages/complete"]);
    expect((legacy[2]?.data as Array<{ type: string; content: string }>)[0]).toMatchObject({ type: "ai", content: expect.stringContaining("2+3 = 5") });
  });

  it("a run waiting for a person is an interrupt; a Command resume answers it as troupe resume does", async () => {
    const { app, base } = await setup();
    const client = clientOf(base);
    const thread = await client.threads.create();
    const first = await collect(client.runs.stream(thread.thread_id, "troupe", { input: { task: "list the files and compute 2^10" }, context: { approve_plan: true }, streamMode: ["values", "updates"] }));
    const interruptUpdate = first.find((part) => part.event === "updates" && "__interrupt__" in (part.data as object))?.data as Values;
    const [interrupt] = interruptUpdate.__interrupt__ ?? [];
    expect(interrupt?.value).toMatchObject({
      kind: "plan-approval",
      question: expect.stringContaining("Approve this plan of 2 subtasks"),
      action_requests: [{ name: "approve_plan", args: { plan: [{ id: "s1" }, { id: "s2" }] } }],
      review_configs: [{ action_name: "approve_plan", allowed_decisions: ["approve", "edit", "reject"] }],
    });
    expect(first.at(-1)).toMatchObject({ event: "values", data: { __interrupt__: [{ id: interrupt?.id }] } });
    const waiting = await client.threads.get(thread.thread_id);
    expect(waiting.status).toBe("interrupted");
    expect(Object.values(waiting.interrupts).flat()).toEqual([expect.objectContaining({ id: interrupt?.id })]);
    const state = await client.threads.getState(thread.thread_id);
    expect(state.next).toEqual(["approve_plan"]);
    expect(state.tasks[0]?.interrupts).toEqual([expect.objectContaining({ id: interrupt?.id, value: expect.objectContaining({ kind: "plan-approval" }) })]);

    // Reject with feedback (LangChain's HITL decision): troupe plans again and waits again, on the same run.
    const rejected = (await client.runs.wait(thread.thread_id, "troupe", { command: { resume: { decisions: [{ type: "reject", message: "only the arithmetic, please" }] } } })) as Values;
    expect(rejected.__interrupt__?.[0]?.value).toMatchObject({ kind: "plan-approval", action_requests: [{ name: "approve_plan" }] });
    expect(rejected.__interrupt__?.[0]?.id).not.toBe(interrupt?.id);
    const runId = (await client.runs.list(thread.thread_id))[0]?.run_id as string;
    expect(runId).toBeDefined();
    // Approve in words, streaming the rest: the same run goes on and answers.
    const approved = await collect(client.runs.stream(thread.thread_id, "troupe", { command: { resume: "approve" }, streamMode: ["values"] }));
    expect(approved[0]).toMatchObject({ event: "metadata", data: { run_id: runId } });
    expect((approved.at(-1)?.data as Values).answer).toContain("1024");
    expect(await client.runs.list(thread.thread_id)).toHaveLength(1);
    expect((await app.troupe.store.runs.get(runId))?.status).toBe("completed");

    // An answer to approve, edited: the person's words are the answer.
    const answerThread = await client.threads.create();
    const draft = (await client.runs.wait(answerThread.thread_id, "troupe", { input: { task: "compute 2+3" }, context: { approve_answer: true } })) as Values;
    expect(draft.__interrupt__?.[0]?.value).toMatchObject({ kind: "answer-approval", action_requests: [{ name: "approve_answer", args: { answer: expect.stringContaining("5") } }] });
    const edited = (await client.runs.wait(answerThread.thread_id, "troupe", { command: { resume: { decisions: [{ type: "edit", edited_action: { name: "approve_answer", args: { answer: "Five." } } }] } } })) as Values;
    expect(edited.answer).toBe("Five.");
    expect(edited.messages?.at(-1)).toMatchObject({ type: "ai", content: "Five." });
  });

  it("cancels: a waiting run, a queued one, and a Command goto __end__; a finished run is not cancelled again", async () => {
    const { base } = await setup();
    const client = clientOf(base);
    const thread = await client.threads.create();
    const waiting = await client.runs.create(thread.thread_id, "troupe", { input: { task: "compute 2+3" }, context: { approve_plan: true } });
    await client.runs.join(thread.thread_id, waiting.run_id);
    // The default strategy refuses a task while the thread's run waits.
    const busy = await refusal(client.runs.create(thread.thread_id, "troupe", { input: { task: "compute 5+6" } }));
    expect(busy).toMatchObject({ status: 409, body: { code: "thread_busy", message: expect.stringContaining("multitask_strategy") } });
    // A second task behind the waiting one, queued (multitask_strategy enqueue), then cancelled.
    const queued = await client.runs.create(thread.thread_id, "troupe", { input: { task: "compute 3+4" }, multitaskStrategy: "enqueue" });
    expect(queued.status).toBe("pending");
    await client.runs.cancel(thread.thread_id, queued.run_id, true);
    expect((await client.runs.get(thread.thread_id, queued.run_id)).status).toBe("interrupted");
    await client.runs.cancel(thread.thread_id, waiting.run_id);
    expect((await client.runs.get(thread.thread_id, waiting.run_id)).status).toBe("interrupted");
    expect((await client.threads.get(thread.thread_id)).status).toBe("idle");
    expect((await client.threads.getState(thread.thread_id)).tasks.flatMap((task) => task.interrupts)).toEqual([]);
    expect(await refusal(client.runs.cancel(thread.thread_id, waiting.run_id))).toMatchObject({ status: 409, body: { code: "task_finished" } });

    const other = await client.threads.create();
    const paused = await client.runs.create(other.thread_id, "troupe", { input: { task: "compute 2+3" }, context: { approve_plan: true } });
    await client.runs.join(other.thread_id, paused.run_id);
    await client.runs.wait(other.thread_id, "troupe", { command: { goto: "__end__" } });
    expect((await client.runs.get(other.thread_id, paused.run_id)).status).toBe("interrupted");
  });

  it("keeps each key's threads, runs and store items its own: another key sees, streams, resumes and cancels none of them", async () => {
    const { base } = await setup(KEYS);
    const alice = clientOf(base, "a-key");
    const bob = clientOf(base, "b-key");
    // Both may name a thread "daily".
    const [aliceDaily, bobDaily] = await Promise.all([alice.threads.create({ threadId: "daily" }), bob.threads.create({ threadId: "daily" })]);
    expect([aliceDaily.thread_id, bobDaily.thread_id]).toEqual(["daily", "daily"]);
    const aliceRun = await alice.runs.create("daily", "troupe", { input: { task: "compute 2+3" }, context: { approve_plan: true } });
    await alice.runs.join("daily", aliceRun.run_id);
    const aliceOnly = await alice.threads.create({ threadId: "alice-only" });

    expect((await bob.threads.getState("daily")).values).toEqual({});
    expect(await bob.runs.list("daily")).toEqual([]);
    for (const call of [
      () => bob.runs.get("daily", aliceRun.run_id),
      () => bob.runs.cancel("daily", aliceRun.run_id),
      () => bob.runs.join("daily", aliceRun.run_id),
      () => collect(bob.runs.joinStream("daily", aliceRun.run_id, { lastEventId: "-1" })),
      () => collect(bob.runs.joinStream(null, aliceRun.run_id)),
      () => bob.threads.get(aliceOnly.thread_id),
      () => bob.threads.getState(aliceOnly.thread_id),
      () => bob.threads.getHistory(aliceOnly.thread_id),
      () => bob.threads.delete(aliceOnly.thread_id),
      () => bob.runs.create(aliceOnly.thread_id, "troupe", { input: { task: "compute 1+1" } }),
    ]) {
      expect((await refusal(call())).status).toBe(404);
    }
    // Bob's daily is not waiting: his resume is refused and alice's run still waits.
    expect(await refusal(bob.runs.create("daily", "troupe", { command: { resume: "approve" } }))).toMatchObject({ status: 409, body: { code: "task_not_waiting" } });
    expect((await alice.threads.get("daily")).status).toBe("interrupted");
    expect((await bob.threads.search({ limit: 100 })).map((thread) => thread.thread_id)).toEqual(["daily"]);
    expect((await alice.threads.search({ limit: 100 })).map((thread) => thread.thread_id).sort()).toEqual(["alice-only", "daily"]);

    await alice.store.putItem(["prefs"], "theme", { color: "green" });
    await bob.store.putItem(["prefs"], "theme", { color: "red" });
    expect((await alice.store.getItem(["prefs"], "theme"))?.value).toEqual({ color: "green" });
    expect((await bob.store.getItem(["prefs"], "theme"))?.value).toEqual({ color: "red" });
    await alice.store.putItem(["alice", "notes"], "n1", { text: "the launch is on friday" });
    expect((await bob.store.listNamespaces()).namespaces).toEqual([["prefs"]]);
    expect((await bob.store.searchItems([], { query: "launch friday" })).items).toEqual([]);
    expect((await alice.store.searchItems([], { query: "launch friday" })).items.map((item) => item.key)).toEqual(["n1"]);

    // Without a key, or with a wrong one: 401 in the protocol's shape.
    const anonymous = await refusal(clientOf(base).threads.search());
    expect(anonymous).toMatchObject({ status: 401, body: { code: "unauthorized", metadata: null } });
    expect((await refusal(clientOf(base, "nope").threads.search())).body.code).toBe("invalid_api_key");
    // A bearer token works too.
    const bearer = await fetch(`${base}/langgraph/threads/daily`, { headers: { authorization: "Bearer b-key" } });
    expect(((await bearer.json()) as { thread_id: string }).thread_id).toBe("daily");
  });

  it("the store: put, get, search by words and by field, namespaces, delete; ttl and size bounded", async () => {
    const { base } = await setup();
    const client = clientOf(base);
    await client.store.putItem(["users", "ada"], "profile", { name: "Ada", role: "engineer", level: 3 });
    await client.store.putItem(["users", "bob"], "profile", { name: "Bob", role: "designer", level: 2 });
    await client.store.putItem(["users", "ada"], "note", { text: "prefers concise answers" }, { ttl: 60 });
    const got = await client.store.getItem(["users", "ada"], "profile");
    expect(got).toMatchObject({ namespace: ["users", "ada"], key: "profile", value: { name: "Ada", role: "engineer", level: 3 } });
    expect(Date.parse(String(got?.createdAt))).not.toBeNaN();
    expect(await client.store.getItem(["users", "ada"], "missing")).toBeNull();
    expect((await client.store.searchItems(["users"], { filter: { role: "designer" } })).items.map((item) => item.namespace)).toEqual([["users", "bob"]]);
    expect((await client.store.searchItems(["users"], { filter: { level: { $gt: 2 } } })).items.map((item) => item.key)).toEqual(["profile"]);
    const byWords = await client.store.searchItems(["users"], { query: "concise answers" });
    expect(byWords.items.map((item) => item.key)).toEqual(["note"]);
    expect(typeof byWords.items[0]?.score).toBe("number");
    expect((await client.store.listNamespaces({ prefix: ["users"] })).namespaces).toEqual([
      ["users", "ada"],
      ["users", "bob"],
    ]);
    expect((await client.store.listNamespaces({ maxDepth: 1 })).namespaces).toEqual([["users"]]);
    await client.store.deleteItem(["users", "bob"], "profile");
    expect(await client.store.getItem(["users", "bob"], "profile")).toBeNull();
    const big = await refusal(client.store.putItem(["users"], "big", { text: "x".repeat(20_000) }));
    expect(big).toMatchObject({ status: 400, body: { code: "memory_item_too_large" } });
    const colon = await fetch(`${base}/langgraph/store/items`, { method: "PUT", headers: { "content-type": "application/json" }, body: JSON.stringify({ namespace: ["a:b"], key: "k", value: {} }) });
    expect(colon.status).toBe(400);
    expect(((await colon.json()) as { code: string }).code).toBe("namespace_invalid");
    const filter = await fetch(`${base}/langgraph/store/items/search`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ filter: { "a;drop": 1 } }) });
    expect(((await filter.json()) as { code: string }).code).toBe("invalid_filter");
  });

  it("refuses bad input clearly, in the protocol's error shape, and creates nothing", async () => {
    const { app, base } = await setup();
    const client = clientOf(base);
    const thread = await client.threads.create({ threadId: "t1" });
    const post = (path: string, body: string, headers: Record<string, string> = { "content-type": "application/json" }) => fetch(`${base}/langgraph${path}`, { method: "POST", headers, body });
    const shape = async (response: Response) => ({ status: response.status, body: (await response.json()) as Record<string, unknown> });

    expect(await shape(await post("/threads/t1/runs", "{not json"))).toMatchObject({ status: 400, body: { code: "invalid_json", message: expect.any(String) } });
    expect((await shape(await post("/threads/t1/runs", JSON.stringify({ assistant_id: "troupe", input: { task: "x".repeat(300_000) } })))).status).toBe(413);
    expect(await shape(await post("/threads/t1/runs/stream", JSON.stringify({ assistant_id: "troupe", input: { task: "compute 1+1" }, stream_mode: ["values", "telepathy"] })))).toMatchObject({
      status: 400,
      body: { code: "stream_mode_invalid" },
    });
    expect(await refusal(client.runs.create("t1", "someone-else", { input: { task: "compute 1+1" } }))).toMatchObject({ status: 404, body: { code: "assistant_not_found" } });
    expect(await refusal(client.runs.create("t1", "troupe", { input: { messages: [{ type: "ai", content: "hi" }] } }))).toMatchObject({ status: 422, body: { code: "agent_protocol_unsupported" } });
    expect(await refusal(client.runs.create("t1", "troupe", { input: { task: "" } }))).toMatchObject({ status: 400, body: { code: "task_empty" } });
    expect(await refusal(client.runs.create("t1", "troupe", { input: { task: "compute 1+1" }, interruptBefore: ["execute"] }))).toMatchObject({ status: 422, body: { metadata: { field: "interrupt_before" } } });
    expect(await refusal(client.runs.create("t1", "troupe", { input: { task: "compute 1+1" }, context: { approve_plan: true, temperature: 2 } }))).toMatchObject({ status: 400, body: { code: "unknown_field" } });
    expect(await refusal(client.runs.create("t1", "troupe", { input: { task: "compute 1+1" }, checkpointId: "1f0000000000" }))).toMatchObject({ status: 422 });
    // A resume for a thread whose run is not waiting, and for a thread with no run.
    expect(await refusal(client.runs.create("t1", "troupe", { command: { resume: "approve" } }))).toMatchObject({ status: 409, body: { code: "task_not_waiting" } });
    expect(await refusal(client.runs.create("missing", "troupe", { input: { task: "compute 1+1" } }))).toMatchObject({ status: 404, body: { code: "thread_not_found" } });
    // A refused run makes no thread, even when asked to make one; a good one does.
    expect(await refusal(client.runs.create("missing", "troupe", { input: { task: "" }, ifNotExists: "create" }))).toMatchObject({ status: 400 });
    expect((await refusal(client.threads.get("missing"))).status).toBe(404);
    const made = await client.runs.create("made-on-run", "troupe", { input: { task: "compute 1+1" }, ifNotExists: "create" });
    expect((await client.threads.get("made-on-run")).metadata).toMatchObject({ graph_id: "troupe" });
    await client.runs.join("made-on-run", made.run_id);
    expect(await refusal(client.threads.create({ threadId: "t1" }))).toMatchObject({ status: 409, body: { code: "thread_exists" } });
    expect((await client.threads.create({ threadId: "t1", ifExists: "do_nothing" })).thread_id).toBe("t1");
    expect((await refusal(client.threads.create({ threadId: "bad/name" }))).status).toBe(400);
    expect(await app.troupe.store.runs.list({ threadId: thread.thread_id })).toEqual([]);

    // A resume that does not answer what the run waits for.
    const paused = await client.runs.create("t1", "troupe", { input: { task: "compute 2+3" }, context: { approve_plan: true } });
    await client.runs.join("t1", paused.run_id);
    expect(await refusal(client.runs.create("t1", "troupe", { command: { resume: { decisions: [{ type: "approve" }, { type: "approve" }] } } }))).toMatchObject({ status: 400, body: { code: "decision_invalid" } });
    expect(await refusal(client.runs.create("t1", "troupe", { command: { resume: 42 } }))).toMatchObject({ status: 400, body: { code: "decision_invalid" } });
    expect(await refusal(client.runs.create("t1", "troupe", { command: { update: { x: 1 } } }))).toMatchObject({ status: 422 });
    expect(await refusal(client.runs.create("t1", "troupe", { input: { task: "compute 1+1" }, command: { resume: "approve" } }))).toMatchObject({ status: 422, body: { code: "command_invalid" } });
    expect((await app.troupe.store.runs.get(paused.run_id))?.status).toBe("interrupted");

    // Last-Event-ID past the run's events, or not an id.
    const join = (id: string) => fetch(`${base}/langgraph/threads/t1/runs/${paused.run_id}/stream`, { headers: { "last-event-id": id } });
    expect(await shape(await join("999999-0"))).toMatchObject({ status: 400, body: { code: "last_event_id_invalid" } });
    expect(await shape(await join("abc"))).toMatchObject({ status: 400, body: { code: "last_event_id_invalid" } });
    // An unknown route under the prefix answers in the protocol's shape too.
    expect(await shape(await fetch(`${base}/langgraph/crons/search`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }))).toMatchObject({ status: 404, body: { code: "route_not_found" } });
  });

  it("pages 1,000 threads without a gap or a repeat, sorted, and counts them", async () => {
    const { app, base } = await setup();
    const client = clientOf(base);
    const now = Date.now();
    for (let index = 0; index < 1_000; index += 1) {
      await app.troupe.store.agentProtocol.addThread({ threadId: `t-${String(index).padStart(4, "0")}`, owner: "local", metadata: { batch: index % 2 === 0 ? "even" : "odd" }, now: now + index });
    }
    const seen: string[] = [];
    for (let offset = 0; offset < 1_000; offset += 100) {
      const page = await client.threads.search({ limit: 100, offset, sortBy: "thread_id", sortOrder: "asc", select: ["thread_id"] });
      expect(page).toHaveLength(100);
      seen.push(...page.map((thread) => thread.thread_id));
    }
    expect(seen).toEqual(Array.from({ length: 1_000 }, (_, index) => `t-${String(index).padStart(4, "0")}`));
    expect((await client.threads.search({ limit: 10, offset: 1_000 })).length).toBe(0);
    expect(await client.threads.count()).toBe(1_000);
    expect(await client.threads.count({ metadata: { batch: "odd" } })).toBe(500);
    const newest = await client.threads.search({ limit: 1 });
    expect(newest[0]?.thread_id).toBe("t-0999");
    expect((await refusal(client.threads.search({ limit: 5_000 }))).status).toBe(400);
  });

  it("keeps a thread listing bounded: a long message is cut there and marked, whole in the thread's state", async () => {
    const { app, base } = await setup();
    const client = clientOf(base);
    const long = `${"a long answer ".repeat(400)}end`;
    const record = await app.troupe.store.runs.create({ id: "run-long", threadId: "long", task: "write a lot", status: "queued", request: { task: "write a lot" }, pid: null, host: null, owner: "local" });
    await app.troupe.store.runs.update(record.id, { status: "completed", answer: long });
    const [listed] = await client.threads.search({ ids: ["long"] });
    const answer = (listed?.values as Values).messages?.[1] as unknown as { content: string; additional_kwargs: Record<string, unknown> };
    expect(answer.content).toHaveLength(2_000);
    expect(answer.additional_kwargs).toMatchObject({ troupe_truncated: true });
    const output = (await client.runs.join("long", "run-long")) as Values;
    expect([output.answer, output.messages?.[1]?.content]).toEqual([long, long]);
  });

  it("answers CORS for the origins troupe lets change things, and only them", async () => {
    const { base } = await setup();
    const preflight = (origin: string) =>
      fetch(`${base}/langgraph/threads`, { method: "OPTIONS", headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "content-type,x-api-key" } });
    const own = await preflight(base);
    expect(own.status).toBe(204);
    expect(own.headers.get("access-control-allow-origin")).toBe(base);
    expect(own.headers.get("access-control-allow-headers")).toContain("x-api-key");
    const foreign = await preflight("http://evil.example");
    expect(foreign.headers.get("access-control-allow-origin")).toBeNull();
    // A change from another site's page is refused before anything runs.
    const refused = await fetch(`${base}/langgraph/threads`, { method: "POST", headers: { origin: "http://evil.example", "content-type": "application/json" }, body: "{}" });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { code: string }).code).toBe("origin_not_allowed");
    const read = await fetch(`${base}/langgraph/info`, { headers: { origin: base } });
    expect(read.headers.get("access-control-expose-headers")).toContain("content-location");
  });

  it("a join with -1 replays a finished run's last stretch, once the run has rested", async () => {
    const { app, base } = await setup();
    const client = clientOf(base);
    const thread = await client.threads.create();
    const run = await client.runs.create(thread.thread_id, "troupe", { input: { task: TASK } });
    await waitFor(async () => ((await app.troupe.store.runs.get(run.run_id))?.status === "completed" ? true : undefined), "the run to complete");
    const replay = await collect(client.runs.joinStream(thread.thread_id, run.run_id, { lastEventId: "-1" }));
    expect((replay.filter((part) => part.event === "values").at(-1)?.data as Values).answer).toContain("397.8");
  });
});
