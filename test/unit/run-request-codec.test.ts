import type { Task } from "@a2a-js/sdk";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterEach, describe, expect, it } from "vitest";
import { RunRequest, type RunRequestInput } from "../../src/core/run.js";
import { OPERATOR_RUN_OPTIONS } from "../../src/core/run-options.js";
import { ScheduledRequest } from "../../src/core/schedule.js";
import { Background } from "../../src/server/background.js";
import { A2aRunOptions, AgentProtocolRunSettings, ExecuteBody, McpRunInput, RunRequestWire, runRequestOfWire, wireName, wireOfRunRequest } from "../../src/server/run-request-wire.js";
import type { RunRecord } from "../../src/store/index.js";
import { a2aClient, a2aMessage, listen, mcpClient, sendRequest, structured } from "../protocol-helpers.js";
import { envelope, makeApp, waitForStatus } from "../server-helpers.js";

// The one run-request codec (src/server/run-request-wire.ts): every door's fields come from core's
// RunRequest, less the omissions each door declares. Nothing here lists RunRequest's fields: a field
// added to it must show on every door for this to pass.

const CORE_KEYS = Object.keys(RunRequest.shape) as Array<keyof RunRequest>;
const OPERATOR = Object.keys(OPERATOR_RUN_OPTIONS);
/** The core keys a door takes: all of them but the operator's and the door's own omissions. */
const doorKeys = (omitted: readonly string[]): string[] => CORE_KEYS.filter((key) => !OPERATOR.includes(key) && !omitted.includes(key)).map((key) => wireName(key));

interface OpenApi {
  paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: { properties: Record<string, { description?: string }> } }> } }>>;
}
const bodyProperties = (document: OpenApi, path: string): Record<string, { description?: string }> =>
  document.paths[path]?.post?.requestBody?.content["application/json"]?.schema.properties ?? {};

const clients: Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => undefined);
});

describe("one run-request codec for every door", () => {
  it("derives each door's fields from core's RunRequest: the wire schema, REST's body, MCP's run_task, A2A's metadata, the Agent Protocol's settings, a schedule's spec and /openapi.json", async () => {
    expect(Object.keys(RunRequestWire.shape)).toEqual(CORE_KEYS.map((key) => wireName(key)));
    expect(Object.keys(ExecuteBody.shape)).toEqual(doorKeys([]));
    expect(Object.keys(McpRunInput.shape)).toEqual(doorKeys(["webhook"]));
    expect(Object.keys(A2aRunOptions.shape)).toEqual(doorKeys(["task", "threadId", "context", "webhook"]));
    expect(Object.keys(AgentProtocolRunSettings.shape)).toEqual(doorKeys(["task", "threadId", "onBusy", "webhook"]));
    // A schedule stores core's names: every option but the task and the operator's.
    expect(Object.keys(ScheduledRequest.shape)).toEqual(CORE_KEYS.filter((key) => key !== "task" && !OPERATOR.includes(key)));

    const app = await makeApp();
    const document = (await app.app.inject({ method: "GET", url: "/openapi.json" })).json() as OpenApi;
    const execute = bodyProperties(document, "/api/v1/execute");
    expect(Object.keys(execute)).toEqual(doorKeys([]));
    // Every field keeps a description for the generated docs (docs/http-api.md).
    expect(Object.entries(execute).filter(([, property]) => !property.description).map(([name]) => name)).toEqual([]);
    expect(Object.keys(bodyProperties(document, "/api/v1/schedules"))).toEqual(expect.arrayContaining(doorKeys(["task"])));

    // MCP's listing, as the SDK's client reads it: the same fields, with their rules.
    const client = await mcpClient(await listen(app));
    clients.push(client);
    const runTask = (await client.listTools()).tools.find((tool) => tool.name === "run_task");
    const properties = (runTask?.inputSchema.properties ?? {}) as Record<string, Record<string, unknown>>;
    expect(Object.keys(properties)).toEqual([...doorKeys(["webhook"]), "wait_seconds"]);
    expect(runTask?.inputSchema.required).toEqual(["task"]);
    expect(properties.max_iterations).toMatchObject({ type: "integer", minimum: 1, maximum: 50 });
    expect(properties.task).toMatchObject({ type: "string", maxLength: 5000 });
  });

  it("goes wire → core → wire and core → wire → core without losing or changing a field", () => {
    const full: RunRequestInput = {
      task: "compute 6*7",
      tools: ["calculator"],
      context: "the numbers are small",
      maxIterations: 4,
      approvePlan: true,
      approveAnswer: true,
      reviewers: 3,
      review: "always",
      threadId: "daily",
      historyBudget: 500,
      onBusy: "reject",
      webhook: { url: "https://hooks.example.com/troupe", events: ["completed"] },
      outputSchema: { type: "object", properties: { product: { type: "number" } } },
      budget: { maxModelCalls: 9, maxTokens: 1_000, maxCostUsd: 0.5, maxWallTimeMs: 1_234 },
      concurrency: 2,
      mapConcurrency: 3,
      promptBudget: 4_000,
    };
    // The sample is full: a field added to RunRequest needs a value here (and nowhere else).
    expect(Object.keys(full).sort()).toEqual([...CORE_KEYS].sort());
    const core = RunRequest.parse(full);
    const wire = RunRequestWire.parse(wireOfRunRequest(core));
    expect(Object.keys(wire)).toEqual(CORE_KEYS.map((key) => wireName(key)));
    expect(RunRequest.parse(runRequestOfWire(wire))).toEqual(core);
    expect(wireOfRunRequest(runRequestOfWire(wire))).toEqual(wire);
    expect(wire).toMatchObject({ max_iterations: 4, thread_id: "daily", budget: { max_model_calls: 9, max_time_seconds: 1.234 }, map_concurrency: 3 });
    // A JSON object as context is the wire's shorthand: core keeps it as its JSON text.
    expect(runRequestOfWire({ task: "t", context: { city: "Paris" } }).context).toBe('{"city":"Paris"}');
  });

  it("takes REST's budget, MCP's review options and A2A's metadata.troupe into the run's request, and refuses a bad one by its snake_case name", async () => {
    const app = await makeApp();
    const request = async (taskId: string) => ((await app.troupe.store.runs.get(taskId)) as RunRecord).request;

    // REST: a budget (MCP's only, before), in seconds on the wire and milliseconds in core.
    const posted = await app.app.inject({ method: "POST", url: "/api/v1/execute", payload: { task: "compute 2+3", budget: { max_model_calls: 40, max_time_seconds: 90 } } });
    expect(posted.statusCode).toBe(202);
    const restId = envelope<{ task_id: string }>(posted).data.task_id;
    expect((await request(restId)).budget).toEqual({ maxModelCalls: 40, maxWallTimeMs: 90_000 });
    const operator = await app.app.inject({ method: "POST", url: "/api/v1/execute", payload: { task: "compute 2+3", concurrency: 64 } });
    expect([operator.statusCode, envelope(operator).code]).toEqual([400, "unknown_field"]);
    await waitForStatus(app, restId, ["completed", "failed"]);

    // MCP: options REST had and run_task did not (reviewers, review, history_budget).
    const base = await listen(app);
    const client = await mcpClient(base);
    clients.push(client);
    const ran = structured<{ run_id: string }>(await client.callTool({ name: "run_task", arguments: { task: "compute 3+4", reviewers: 2, review: "always", history_budget: 0 } }));
    expect(await request(ran.run_id)).toMatchObject({ reviewers: 2, review: "always", historyBudget: 0 });
    const refused = (await client.callTool({ name: "run_task", arguments: { task: "compute 3+4", max_iterations: 0 } })) as { isError: boolean; content: Array<{ text: string }> };
    expect(refused.isError).toBe(true);
    expect(refused.content[0]?.text).toMatch(/^max_iterations_out_of_range: max_iterations: max_iterations must be between 1 and 50/);
    // Not MCP's (declared in run-request-wire.ts): a webhook is not listed, and an argument not listed is dropped by the SDK, as before.
    const hooked = structured<{ run_id: string }>(await client.callTool({ name: "run_task", arguments: { task: "compute 3+4", webhook: { url: "https://hooks.example.com/x" } } }));
    expect((await request(hooked.run_id)).webhook).toBeUndefined();

    // A2A: a new message's options in metadata.troupe.
    const a2a = await a2aClient(base);
    const message = { ...a2aMessage("compute 5+6"), metadata: { troupe: { max_iterations: 2, approve_plan: true } } };
    const task = (await a2a.sendMessage(sendRequest(message))) as Task;
    expect(await request(task.id)).toMatchObject({ maxIterations: 2, approvePlan: true });
    await expect(a2a.sendMessage(sendRequest({ ...a2aMessage("compute 5+6"), metadata: { troupe: { task: "something else" } } }))).rejects.toThrow(/unknown_field: metadata\.troupe: unknown field: task/);
    await expect(a2a.sendMessage(sendRequest({ ...a2aMessage("compute 5+6"), metadata: { troupe: { reviewers: 99 } } }))).rejects.toThrow(/reviewers_out_of_range/);
  });

  it("stores a schedule's run options as core's and runs its tick with them, with no hand copy between", async () => {
    const app = await makeApp();
    const made = await app.app.inject({
      method: "POST",
      url: "/api/v1/schedules",
      payload: { name: "nightly", cron: "0 2 * * *", task: "compute 2+2", reviewers: 2, budget: { max_tokens: 5_000 }, context: { team: "ops" }, max_iterations: 2 },
    });
    expect(made.statusCode).toBe(201);
    const stored = await app.troupe.schedules.get("nightly");
    expect(stored.request).toEqual({ reviewers: 2, budget: { maxTokens: 5_000 }, context: '{"team":"ops"}', maxIterations: 2 });
    const background = new Background({ troupe: app.troupe, hub: app.hub, logger: app.app.log as never, tasks: app.tasks, serve: true });
    expect(await background.schedules?.fire(stored, Date.now())).toBe(true);
    const runId = (await app.troupe.schedules.get("nightly")).lastRunId as string;
    expect(await app.troupe.store.runs.get(runId)).toMatchObject({ request: { reviewers: 2, budget: { maxTokens: 5_000 }, context: '{"team":"ops"}', maxIterations: 2 } });
    await waitForStatus(app, runId, ["completed", "failed", "interrupted"]);

    // An option a run would refuse is refused when the schedule is made, not at each tick.
    for (const [payload, code] of [
      [{ tools: ["no_such_tool"] }, "unknown_tool"],
      [{ webhook: { url: "https://hooks.example.com/hook" } }, "webhook_secret_missing"],
      [{ output_schema: { type: "object", properties: { a: { type: "string", pattern: "^(?=a)a$" } } } }, "invalid_output_schema"],
      [{ concurrency: 64 }, "unknown_field"],
    ] as const) {
      const refused = await app.app.inject({ method: "POST", url: "/api/v1/schedules", payload: { cron: "0 3 * * *", task: "compute 1+1", ...payload } });
      expect([refused.statusCode, envelope(refused).code]).toEqual([400, code]);
    }
    expect((await app.troupe.schedules.list()).map((item) => item.name)).toEqual(["nightly"]);
  });
});
