import { readFileSync } from "node:fs";
import path from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterEach, describe, expect, it } from "vitest";
import { answerStep, planStep, reviewStep, subtask } from "../../src/testing/script.js";
import { type McpClientOptions, listen, mcpClient, structured } from "../protocol-helpers.js";
import { makeApp, waitFor } from "../server-helpers.js";

const README_TASK = "compute 17% of 2,340 and save it to result.txt";

const clients: Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => undefined);
});

async function connect(base: string, options: McpClientOptions = {}): Promise<Client> {
  const client = await mcpClient(base, options);
  clients.push(client);
  return client;
}

interface Outcome {
  run_id: string;
  thread_id: string;
  status: string;
  answer: string | null;
  interrupt: { id: string | null; kind: string; question: string } | null;
  structured_answer?: unknown;
  structured_error?: string;
}

describe("troupe as an MCP server over Streamable HTTP (the SDK's Client)", () => {
  it("lists seven tools whose annotations say which are read-only, runs a task with progress per subtask, and serves its resources", async () => {
    const app = await makeApp();
    const client = await connect(await listen(app));
    const { tools } = await client.listTools();
    const hints = Object.fromEntries(tools.map((tool) => [tool.name, tool.annotations?.readOnlyHint]));
    expect(hints).toEqual({ run_task: false, get_run: true, list_runs: true, resume_run: false, decide: true, memory_search: true, memory_save: false });
    expect(tools.find((tool) => tool.name === "run_task")?.annotations).toMatchObject({ destructiveHint: false, openWorldHint: true });
    expect(tools.find((tool) => tool.name === "memory_save")?.annotations).toMatchObject({ destructiveHint: true });

    const progress: Array<{ progress: number; message?: string }> = [];
    const result = await client.callTool({ name: "run_task", arguments: { task: README_TASK } }, undefined, { onprogress: (step) => progress.push(step) });
    const outcome = structured<Outcome>(result);
    expect(outcome).toMatchObject({ status: "completed", interrupt: null });
    expect(outcome.answer).toContain("397.8");
    expect(readFileSync(path.join(app.directory, "workspace", "result.txt"), "utf8")).toBe("397.8");
    // One notification as each subtask starts and as it ends, numbered upwards.
    const messages = progress.map((step) => step.message ?? "");
    expect(messages.filter((message) => /^s\d+ started/.test(message))).toHaveLength(2);
    expect(messages.filter((message) => /^s\d+ done/.test(message))).toHaveLength(2);
    expect(progress.map((step) => step.progress)).toEqual(progress.map((_, index) => index + 1));

    const { resources } = await client.listResources();
    expect(resources.map((resource) => resource.uri)).toEqual(expect.arrayContaining([`troupe://runs/${outcome.run_id}`, `troupe://runs/${outcome.run_id}/graph`]));
    const run = await client.readResource({ uri: `troupe://runs/${outcome.run_id}` });
    const body = JSON.parse((run.contents[0] as { text: string }).text) as { answer: string; trace: { plan: unknown[] }; plan: Array<{ id: string; status: string }> };
    expect(body.answer).toContain("397.8");
    expect(body.plan.map((step) => step.status)).toEqual(["done", "done"]);
    expect(body.trace.plan).toHaveLength(2);
    const graph = await client.readResource({ uri: `troupe://runs/${outcome.run_id}/graph` });
    expect(graph.contents[0]).toMatchObject({ mimeType: "text/vnd.mermaid" });
    expect((graph.contents[0] as { text: string }).text).toMatch(/^flowchart TD\n[\s\S]*SUCCESS/);

    const listed = structured<{ items: Array<{ task_id: string }>; total: number }>(await client.callTool({ name: "list_runs", arguments: {} }));
    expect(listed).toMatchObject({ total: 1, items: [{ task_id: outcome.run_id }] });
    const got = structured<Outcome>(await client.callTool({ name: "get_run", arguments: { run_id: outcome.run_id } }));
    expect(got).toMatchObject({ run_id: outcome.run_id, status: "completed" });

    const saved = structured<{ id: string; created: boolean }>(await client.callTool({ name: "memory_save", arguments: { text: "The capital of Atlantis is Poseidonia.", subject: "capital of Atlantis" } }));
    expect(saved.created).toBe(true);
    const found = structured<{ items: Array<{ id: string; text: string }> }>(await client.callTool({ name: "memory_search", arguments: { query: "Atlantis capital" } }));
    expect(found.items.map((item) => item.id)).toEqual([saved.id]);
    const decided = structured<{ outcome: string }>(await client.callTool({ name: "decide", arguments: { question: "Ship on Friday?", options: ["yes", "no"] } }));
    expect(decided.outcome).toBe("no_votes"); // the offline model abstains: it cannot judge
  });

  it("asks for a plan's approval through the client's elicitation, and continues with the answer", async () => {
    const app = await makeApp();
    const asked: string[] = [];
    const client = await connect(await listen(app), {
      elicit: ({ message }) => {
        asked.push(message);
        return { action: "accept", content: { decision: "approve" } };
      },
    });
    const outcome = structured<Outcome>(await client.callTool({ name: "run_task", arguments: { task: README_TASK, approve_plan: true } }));
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatch(/^Approve this plan of 2 subtasks\?/);
    expect(outcome).toMatchObject({ status: "completed", interrupt: null });
  });

  it("a rejection through elicitation re-plans with the person's words; a dismissed form leaves the run waiting for resume_run", async () => {
    const app = await makeApp();
    let turn = 0;
    const client = await connect(await listen(app), {
      elicit: () => {
        turn += 1;
        return turn === 1 ? { action: "accept", content: { decision: "reject", feedback: "only the arithmetic, please" } } : { action: "cancel" };
      },
    });
    const outcome = structured<Outcome>(await client.callTool({ name: "run_task", arguments: { task: README_TASK, approve_plan: true } }));
    expect(turn).toBe(2);
    expect(outcome).toMatchObject({ status: "interrupted", interrupt: { kind: "plan-approval" } });
    const events = await app.troupe.store.events.list(outcome.run_id);
    expect(events.filter((event) => event.type === "plan-ready")).toHaveLength(2);
  });

  it("without elicitation, answers with the run's question, and resume_run approves it", async () => {
    const app = await makeApp();
    const client = await connect(await listen(app));
    const waiting = structured<Outcome>(await client.callTool({ name: "run_task", arguments: { task: README_TASK, approve_plan: true } }));
    expect(waiting).toMatchObject({ status: "interrupted", interrupt: { kind: "plan-approval" } });
    expect(waiting.interrupt?.question).toMatch(/s1 \(execute\): Compute 17% of 2,340/);
    const done = structured<Outcome>(await client.callTool({ name: "resume_run", arguments: { run_id: waiting.run_id, decision: "approve" } }));
    expect(done).toMatchObject({ run_id: waiting.run_id, status: "completed" });
    // Answering again is refused: the run no longer waits.
    const again = await client.callTool({ name: "resume_run", arguments: { run_id: waiting.run_id, decision: "approve" } });
    expect(again.isError).toBe(true);
    expect((again.content as Array<{ text: string }>)[0]?.text).toMatch(/^task_not_waiting: /);
  });

  it("structures the answer by an output schema, and refuses a schema that is not one or has a pattern RE2 cannot run", async () => {
    const app = await makeApp({
      steps: [planStep([subtask("s1", "execute", "Multiply", { tool: "calculator", args: { expression: { value: "6*7" } } })]), reviewStep(1), answerStep('{"product": 42}')],
    });
    const client = await connect(await listen(app));
    const schema = { type: "object", properties: { product: { type: "number" } }, required: ["product"] };
    const outcome = structured<Outcome>(await client.callTool({ name: "run_task", arguments: { task: "multiply 6 by 7", output_schema: schema } }));
    expect(outcome).toMatchObject({ status: "completed", structured_answer: { product: 42 } });
    // The schema went into the run: its answer is the typed output REST shows too.
    const view = await app.app.inject({ method: "GET", url: `/api/v1/tasks/${outcome.run_id}` });
    expect(view.json().data.result.output).toEqual({ product: 42 });
    for (const [bad, why] of [
      [{ type: "object", properties: { a: { type: "string", pattern: "^(?=a)a+$" } } }, /the pattern "\^\(\?=a\)a\+\$" cannot be used: .*lookahead/],
      [{ type: "no-such-type" }, /not a valid JSON Schema/],
      [{ $ref: "https://example.com/schema.json" }, /not a valid JSON Schema: can't resolve reference/],
    ] as const) {
      const refused = await client.callTool({ name: "run_task", arguments: { task: "multiply 6 by 7", output_schema: bad } });
      expect(refused.isError).toBe(true);
      expect((refused.content as Array<{ text: string }>)[0]?.text).toMatch(/^invalid_output_schema: /);
      expect((refused.content as Array<{ text: string }>)[0]?.text).toMatch(why);
    }
    // Nothing was run for the refused ones.
    expect(await app.troupe.store.runs.count({})).toBe(1);
  });

  it("a run outlives the client that started it: another client picks it up by id", async () => {
    const app = await makeApp({
      steps: [planStep([subtask("s1", "execute", "Multiply", { tool: "calculator", args: { expression: { value: "6*7" } } })], { delayMs: 1_500 }), reviewStep(1), answerStep("42")],
    });
    const base = await listen(app);
    const first = await connect(base);
    const call = first.callTool({ name: "run_task", arguments: { task: "multiply 6 by 7" } }).catch((error: unknown) => error);
    const runId = await waitFor(async () => (await app.troupe.store.runs.list({ limit: 1 }))[0]?.id, "the run to be accepted");
    await first.close();
    await call;
    const second = await connect(base);
    const picked = structured<Outcome>(await second.callTool({ name: "get_run", arguments: { run_id: runId, wait_seconds: 30 } }));
    expect(picked).toMatchObject({ run_id: runId, status: "completed", answer: "42" });
  });

  it("refuses a caller without a key, and a key sees only its own runs and sessions", async () => {
    const app = await makeApp({ config: { apiKeys: "alice:alice-key,bob:bob-key" } });
    const base = await listen(app);
    await expect(mcpClient(base)).rejects.toMatchObject({ code: 401, message: expect.stringMatching(/unauthorized: an API key is required/) });
    await expect(mcpClient(base, { key: "wrong-key" })).rejects.toMatchObject({ code: 401, message: expect.stringMatching(/invalid_api_key/) });
    const alice = await connect(base, { key: "alice-key" });
    const outcome = structured<Outcome>(await alice.callTool({ name: "run_task", arguments: { task: "compute 2+3" } }));
    expect(outcome.status).toBe("completed");
    const bob = await connect(base, { key: "bob-key" });
    const denied = await bob.callTool({ name: "get_run", arguments: { run_id: outcome.run_id } });
    expect(denied.isError).toBe(true);
    expect((denied.content as Array<{ text: string }>)[0]?.text).toMatch(/^task_not_found: /);
    // Another key's run is "resource not found" (-32002), as one that does not exist.
    await expect(bob.readResource({ uri: `troupe://runs/${outcome.run_id}` })).rejects.toMatchObject({ code: -32002, message: expect.stringMatching(/Resource not found: .*no run with id/) });
    expect(structured<{ total: number }>(await bob.callTool({ name: "list_runs", arguments: {} })).total).toBe(0);
    // Alice's session id, presented with Bob's key, is not found.
    const sessionId = (alice.transport as { sessionId?: string }).sessionId as string;
    const response = await fetch(`${base}/mcp`, {
      method: "POST",
      headers: { authorization: "Bearer bob-key", "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-session-id": sessionId },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
    });
    expect(response.status).toBe(404);
  });

  it("answers bad input with JSON-RPC errors and loses nothing", async () => {
    const app = await makeApp();
    const base = await listen(app);
    const post = (body: string, headers: Record<string, string> = {}) =>
      fetch(`${base}/mcp`, { method: "POST", headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers }, body });
    const parse = await post("{not json");
    expect(parse.status).toBe(400);
    expect(await parse.json()).toMatchObject({ jsonrpc: "2.0", error: { code: -32700 }, id: null });
    const noSession = await post(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }));
    expect(noSession.status).toBe(400);
    expect(await noSession.json()).toMatchObject({ error: { code: -32600, message: expect.stringMatching(/no valid session id/) } });
    const unknownSession = await post(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }), { "mcp-session-id": "no-such-session" });
    expect(unknownSession.status).toBe(404);
    const huge = await post(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { padding: "x".repeat(400 * 1024) } }));
    expect(huge.status).toBe(413);
    expect(await huge.json()).toMatchObject({ jsonrpc: "2.0", error: { message: expect.stringMatching(/^body_too_large: /) } });
    const crossSite = await post(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: {} }), { origin: "https://evil.example" });
    expect(crossSite.status).toBe(403);

    const client = await connect(base);
    await expect(client.request({ method: "troupe/no-such-method", params: {} }, (await import("@modelcontextprotocol/sdk/types.js")).ResultSchema)).rejects.toThrow(/Method not found/);
    const tooLong = await client.callTool({ name: "run_task", arguments: { task: "x".repeat(6_000) } });
    expect(tooLong.isError).toBe(true);
    expect((tooLong.content as Array<{ text: string }>)[0]?.text).toMatch(/^task_too_long: /);
    const wrongType = await client.callTool({ name: "run_task", arguments: { task: 42 } });
    expect(wrongType.isError).toBe(true);
    const badDecision = await client.callTool({ name: "resume_run", arguments: { run_id: "run-missing", decision: "answer" } });
    expect(badDecision.isError).toBe(true);
    // The server still works, and nothing was created by the refused calls.
    expect(await app.troupe.store.runs.count({})).toBe(0);
    expect(structured<Outcome>(await client.callTool({ name: "run_task", arguments: { task: "compute 2+3" } })).status).toBe("completed");
  });
});
