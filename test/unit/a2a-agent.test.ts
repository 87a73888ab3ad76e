import { readFileSync } from "node:fs";
import path from "node:path";
import { type Task, TaskState } from "@a2a-js/sdk";
import { Client as A2AClient } from "@a2a-js/sdk/client";
import { LegacyJsonRpcTransport, parseLegacyAgentCard } from "@a2a-js/sdk/compat/v0_3/client";
import { describe, expect, it } from "vitest";
import { answerStep, planStep, questionStep, reviewStep, subtask } from "../../src/testing/script.js";
import { a2aClient, a2aMessage, listen, sendRequest, statusText } from "../protocol-helpers.js";
import { makeApp, waitFor } from "../server-helpers.js";

const README_TASK = "compute 17% of 2,340 and save it to result.txt";

function fileArtifact(task: Task, name: string): Buffer | undefined {
  const part = task.artifacts.find((artifact) => artifact.name === name)?.parts[0];
  return part?.content?.$case === "raw" ? Buffer.from(part.content.value) : undefined;
}

const slowPlan = (delayMs: number) => [
  planStep([subtask("s1", "execute", "Multiply", { tool: "calculator", args: { expression: { value: "6*7" } } })], { delayMs }),
  reviewStep(1),
  answerStep("42"),
];

describe("troupe as an A2A agent (the @a2a-js/sdk client)", () => {
  it("publishes an agent card: v1.0 with its interfaces, skills and streaming; v0.3 for a peer that asks for it; a bearer scheme when keys are required", async () => {
    const open = await listen(await makeApp());
    const card = (await (await fetch(`${open}/.well-known/agent-card.json`, { headers: { "A2A-Version": "1.0" } })).json()) as Record<string, unknown> & {
      supportedInterfaces: Array<{ url: string; protocolBinding: string; protocolVersion: string }>;
      skills: Array<{ id: string; tags?: string[] }>;
      capabilities: { streaming: boolean };
    };
    expect(card.supportedInterfaces).toEqual(
      expect.arrayContaining([
        { url: `${open}/a2a/jsonrpc`, protocolBinding: "JSONRPC", protocolVersion: "1.0" },
        { url: `${open}/a2a/rest`, protocolBinding: "HTTP+JSON", protocolVersion: "1.0" },
        { url: `${open}/a2a/jsonrpc`, protocolBinding: "JSONRPC", protocolVersion: "0.3" },
      ]),
    );
    expect(card.capabilities.streaming).toBe(true);
    expect(card.skills.map((skill) => skill.id)).toEqual(["solve", "agent:research", "agent:code", "agent:execute", "agent:memory", "agent:cleanup"]);
    expect(card.skills.find((skill) => skill.id === "agent:execute")?.tags).toEqual(expect.arrayContaining(["compute", "files"]));
    expect(card.securitySchemes).toBeUndefined();
    const legacy = (await (await fetch(`${open}/.well-known/agent-card.json`)).json()) as { protocolVersion: string; url: string; preferredTransport: string };
    expect(legacy).toMatchObject({ protocolVersion: "0.3", url: `${open}/a2a/jsonrpc`, preferredTransport: "JSONRPC" });

    const keyed = await listen(await makeApp({ config: { apiKeys: "alice:alice-key" } }));
    const secured = (await (await fetch(`${keyed}/.well-known/agent-card.json`, { headers: { "A2A-Version": "1.0" } })).json()) as Record<string, unknown>;
    expect(secured.securitySchemes).toEqual({ bearer: { httpAuthSecurityScheme: expect.objectContaining({ scheme: "Bearer" }) } });
    expect(secured.securityRequirements).toEqual([{ schemes: { bearer: {} } }]);
  });

  it("runs a message as a task on a thread: the answer and the file it wrote come back as artifacts, and the next message on the context continues it", async () => {
    const app = await makeApp();
    const client = await a2aClient(await listen(app));
    const task = (await client.sendMessage(sendRequest(a2aMessage(README_TASK)))) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const record = await app.troupe.store.runs.get(task.id);
    expect(record).toMatchObject({ status: "completed", threadId: task.contextId });
    expect(fileArtifact(task, "result.txt")?.toString()).toBe("397.8");
    expect(task.artifacts.find((artifact) => artifact.artifactId === "answer")?.parts[0]?.content).toMatchObject({ $case: "text", value: expect.stringContaining("397.8") });
    expect(task.metadata?.troupe).toMatchObject({ runId: task.id, usage: { llmCalls: expect.any(Number) } });
    const again = await client.getTask({ tenant: "", id: task.id, historyLength: undefined });
    expect(again.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(fileArtifact(again, "result.txt")?.toString()).toBe("397.8");
    // The same context is the same troupe thread: "it" is the earlier result.
    const next = (await client.sendMessage(sendRequest(a2aMessage("save it to mem.txt", { contextId: task.contextId })))) as Task;
    expect(next.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(next.contextId).toBe(task.contextId);
    expect(readFileSync(path.join(app.directory, "workspace", "mem.txt"), "utf8")).toBe("397.8");
  });

  it("streams over HTTP+JSON: working updates and an artifact as each subtask finishes, then the final state", async () => {
    const app = await makeApp();
    const client = await a2aClient(await listen(app), { prefer: "HTTP+JSON" });
    expect(client.transport.protocolName).toBe("HTTP+JSON");
    const events = [];
    for await (const event of client.sendMessageStream(sendRequest(a2aMessage(README_TASK)))) events.push(event.payload);
    expect(events[0]?.$case).toBe("task");
    const artifacts = events.flatMap((payload) => (payload?.$case === "artifactUpdate" ? [payload.value.artifact?.artifactId] : []));
    expect(artifacts).toEqual(["subtask:s1", "subtask:s2", "answer", "file:result.txt"]);
    const states = events.flatMap((payload) => (payload?.$case === "statusUpdate" ? [payload.value.status?.state] : []));
    expect(states.slice(0, -1).every((state) => state === TaskState.TASK_STATE_WORKING)).toBe(true);
    expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it("a run that waits for a person is input-required, and the next message on the task answers it", async () => {
    const app = await makeApp({
      steps: [questionStep("Which number should I double?"), planStep([subtask("s1", "execute", "Double it", { tool: "calculator", args: { expression: { value: "21*2" } } })]), reviewStep(1), answerStep("42")],
    });
    const client = await a2aClient(await listen(app));
    const waiting = (await client.sendMessage(sendRequest(a2aMessage("double the number I will give you")))) as Task;
    expect(waiting.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(statusText(waiting)).toBe("Which number should I double?");
    // Resubscribing to a task that waits: its snapshot, and the stream ends (nothing happens until someone answers).
    const snapshot = [];
    for await (const event of client.resubscribeTask({ tenant: "", id: waiting.id })) snapshot.push(event.payload);
    expect(snapshot.map((payload) => payload?.$case)).toEqual(["task"]);
    expect(snapshot[0]?.$case === "task" && snapshot[0].value.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    // A reply that does not answer is a protocol error, and the run still waits.
    await expect(client.sendMessage(sendRequest(a2aMessage("   ", { taskId: waiting.id, contextId: waiting.contextId })))).rejects.toThrow(/answer/);
    expect((await app.troupe.store.runs.get(waiting.id))?.status).toBe("interrupted");
    const done = (await client.sendMessage(sendRequest(a2aMessage("21", { taskId: waiting.id, contextId: waiting.contextId })))) as Task;
    expect(done).toMatchObject({ id: waiting.id, status: { state: TaskState.TASK_STATE_COMPLETED } });
    const planner = app.model?.calls.filter((call) => call.role === "planner") ?? [];
    expect(planner.at(-1)?.lastMessage).toContain("21");
  });

  it("cancels a task: its run stops and is recorded cancelled", async () => {
    const app = await makeApp({ steps: slowPlan(5_000) });
    const client = await a2aClient(await listen(app));
    const started = (await client.sendMessage(sendRequest(a2aMessage("multiply 6 by 7"), true))) as Task;
    await waitFor(async () => ((await app.troupe.store.runs.get(started.id))?.status === "running" ? true : undefined), "the run to start");
    const cancelled = await client.cancelTask({ tenant: "", id: started.id, metadata: undefined });
    expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect((await app.troupe.store.runs.get(started.id))?.status).toBe("cancelled");
    await expect(client.cancelTask({ tenant: "", id: started.id, metadata: undefined })).resolves.toMatchObject({ status: { state: TaskState.TASK_STATE_CANCELED } });
  });

  it("resubscribes after a dropped stream and gets the rest of the task's updates", async () => {
    const app = await makeApp({ steps: [planStep([subtask("s1", "execute", "Multiply", { tool: "calculator", args: { expression: { value: "6*7" } } })]), reviewStep(1, {}, { delayMs: 1_500 }), answerStep("42")] });
    const client = await a2aClient(await listen(app));
    const dropped = new AbortController();
    let taskId = "";
    for await (const event of client.sendMessageStream(sendRequest(a2aMessage("multiply 6 by 7")), { signal: dropped.signal })) {
      if (event.payload?.$case === "task") {
        taskId = event.payload.value.id;
        dropped.abort();
        break;
      }
    }
    expect(taskId).not.toBe("");
    const rest = [];
    for await (const event of client.resubscribeTask({ tenant: "", id: taskId })) rest.push(event.payload);
    expect(rest[0]?.$case).toBe("task");
    const last = rest.at(-1);
    expect(last?.$case === "statusUpdate" && last.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(rest.some((payload) => payload?.$case === "artifactUpdate" && payload.value.artifact?.artifactId === "answer")).toBe(true);
  });

  it("speaks A2A 0.3 to a peer on the SDK's legacy transport", async () => {
    const base = await listen(await makeApp());
    const card = parseLegacyAgentCard(await (await fetch(`${base}/.well-known/agent-card.json`)).json());
    const legacy = new LegacyJsonRpcTransport({ endpoint: `${base}/a2a/jsonrpc` });
    expect(legacy.protocolVersion).toBe("0.3");
    const client = new A2AClient(legacy, card);
    const task = (await client.sendMessage(sendRequest(a2aMessage("compute 2+3")))) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(statusText(task)).toContain("5");
  });

  it("answers bad input with protocol errors and loses nothing; a task belongs to its key", async () => {
    const app = await makeApp({ config: { apiKeys: "alice:alice-key,bob:bob-key" } });
    const base = await listen(app);
    const rpc = (body: string, key = "alice-key") => fetch(`${base}/a2a/jsonrpc`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${key}`, "A2A-Version": "1.0" }, body });
    const notJson = await rpc("{nope");
    expect(await notJson.json()).toMatchObject({ jsonrpc: "2.0", error: { code: -32700 } });
    const unknown = await rpc(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "NoSuchMethod", params: {} }));
    expect(await unknown.json()).toMatchObject({ id: 1, error: { code: -32601 } });
    const huge = await rpc(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "SendMessage", params: { message: { messageId: "m", role: "ROLE_USER", parts: [{ text: "x".repeat(200_000) }] } } }));
    expect(huge.status).toBe(413);
    expect(await huge.json()).toMatchObject({ jsonrpc: "2.0", error: { message: expect.stringMatching(/larger than the limit/) } });
    const unauthorized = await fetch(`${base}/a2a/jsonrpc`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(unauthorized.status).toBe(401);

    const alice = await a2aClient(base, { key: "alice-key" });
    await expect(alice.sendMessage(sendRequest(a2aMessage("   ")))).rejects.toThrow(/no text/);
    await expect(alice.sendMessage(sendRequest(a2aMessage("x".repeat(6_000))))).rejects.toThrow(/task_too_long/);
    await expect(alice.sendMessage(sendRequest(a2aMessage("compute 2+3", { contextId: "not a valid id!" })))).rejects.toThrow(/contextId/);
    expect(await app.troupe.store.runs.count({})).toBe(0);
    const task = (await alice.sendMessage(sendRequest(a2aMessage("compute 2+3")))) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const bob = await a2aClient(base, { key: "bob-key" });
    await expect(bob.getTask({ tenant: "", id: task.id })).rejects.toThrow(/not found/i);
    // The context id is alice's name for her thread: bob's message on the same id starts his own thread.
    const bobs = (await bob.sendMessage(sendRequest(a2aMessage("compute 3+4", { contextId: task.contextId })))) as Task;
    expect(bobs.contextId).toBe(task.contextId);
    expect((await app.troupe.store.runs.get(bobs.id))?.threadId).toBe(`bob/${task.contextId}`);
    expect((await app.troupe.store.runs.get(task.id))?.threadId).toBe(`alice/${task.contextId}`);
    expect(await app.troupe.store.runs.count({})).toBe(2);
  });
});
