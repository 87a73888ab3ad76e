import { createServer, type IncomingMessage } from "node:http";
import type { SqliteStore } from "../../src/store/index.js";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { Health } from "../../src/server/schemas.js";
import { createTelemetry } from "../../src/server/telemetry.js";
import { parseEnv } from "../../src/config/env.js";
import { envFor, FAST_RETRIES, fakeAnthropic, fakeOpenAI, WORKER_TASK } from "../provider-helpers.js";
import { envelope, makeApp, waitFor, waitForStatus } from "../server-helpers.js";

const TASK = "compute 17% of 2,340 and save it to result.txt";

/** A metric's value from the Prometheus text format (labels in the order given), or undefined. */
function metric(text: string, name: string, labels = ""): number | undefined {
  const line = text.split("\n").find((candidate) => candidate.startsWith(`${name}${labels ? `{${labels}}` : ""} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

describe("GET /metrics", () => {
  it("exposes the agent_* metrics of seed 001 and HTTP request metrics", async () => {
    const app = await makeApp();
    // agent_reflection_pass_rate counts critic verdicts: the whole pipeline, or review auto would skip the critic here.
    const id = envelope<{ task_id: string }>(await app.app.inject({ method: "POST", url: "/api/v1/execute", payload: { task: TASK, review: "always" } })).data.task_id;
    await waitForStatus(app, id, ["completed"]);
    const response = await app.app.inject({ method: "GET", url: "/metrics" });
    expect(response.statusCode).toBe(200);
    expect(response.headers["content-type"]).toMatch(/^text\/plain/);
    const text = response.body;
    expect(metric(text, "agent_tasks_total", 'status="completed"')).toBe(1);
    expect(metric(text, "agent_tasks_submitted_total")).toBe(1);
    expect(metric(text, "agent_tasks_duration_seconds_count", 'status="completed"')).toBe(1);
    expect(metric(text, "agent_tool_calls_total", 'tool="calculator",outcome="ok"')).toBe(1);
    expect(metric(text, "agent_tool_calls_total", 'tool="file_write",outcome="ok"')).toBe(1);
    // Planner, critic and synthesizer: the offline planner runs the calculation and the write as direct steps.
    expect(metric(text, "agent_llm_calls_total", 'provider="offline",model="rules-v1",outcome="ok"')).toBe(3);
    expect(metric(text, "agent_llm_tokens_used", 'kind="prompt"')).toBeGreaterThan(0);
    expect(metric(text, "agent_llm_tokens_used", 'kind="completion"')).toBeGreaterThan(0);
    expect(metric(text, "agent_reflection_pass_rate")).toBe(1);
    expect(metric(text, "agent_tasks_running")).toBe(0);
    expect(metric(text, "agent_tasks_queued")).toBe(0);
    expect(metric(text, "http_requests_total", 'method="POST",route="/api/v1/execute",status_code="202"')).toBe(1);
    expect(metric(text, "http_request_duration_seconds_count", 'method="POST",route="/api/v1/execute",status_code="202"')).toBe(1);
    expect(metric(text, "process_resident_memory_bytes")).toBeGreaterThan(0);
  });

  it("counts each model call against the model it reached: a fallback's calls under the fallback, the failed ones as errors", async () => {
    const openai = await fakeOpenAI();
    const anthropic = await fakeAnthropic();
    openai.inject({ kind: "status", status: 500 }, { times: 100 });
    const app = await makeApp({
      troupe: {
        provider: "openai",
        env: parseEnv(envFor({ openai, anthropic }, { TROUPE_MAX_RETRIES: "1" })),
        config: { fallbacks: ["anthropic:claude-haiku-4-5"] },
        callPolicy: FAST_RETRIES,
      },
    });
    const id = envelope<{ task_id: string }>(await app.app.inject({ method: "POST", url: "/api/v1/execute", payload: { task: TASK } })).data.task_id;
    await waitForStatus(app, id, ["completed"]);
    const text = (await app.app.inject({ method: "GET", url: "/metrics" })).body;
    // The planner tried OpenAI twice (HTTP 500), then every call went to Anthropic.
    expect(metric(text, "agent_llm_calls_total", 'provider="openai",model="gpt-4.1-mini",outcome="error"')).toBe(openai.requests.length);
    expect(metric(text, "agent_llm_calls_total", 'provider="openai",model="gpt-4.1-mini",outcome="ok"')).toBeUndefined();
    expect(metric(text, "agent_llm_calls_total", 'provider="anthropic",model="claude-haiku-4-5",outcome="ok"')).toBe(anthropic.requests.length);
    expect(anthropic.requests.length).toBeGreaterThan(0);
  });
});

describe("GET /health", () => {
  it("is ready while the database answers and tasks are accepted; shutting down makes it 503 and the API answers 503 with Retry-After", async () => {
    const app = await makeApp({ config: { apiKeys: "ops:key-ops-1" } });
    const ready = await app.app.inject({ method: "GET", url: "/health" });
    expect(ready.statusCode).toBe(200);
    const body = Health.parse(ready.json());
    expect(body).toMatchObject({ status: "ok", live: true, ready: true, checks: { database: { ok: true }, accepting: true }, tasks: { running: 0, queued: 0, max_running: 100 } });
    expect((await app.app.inject({ method: "GET", url: "/health/live" })).statusCode).toBe(200);
    // The same answer in the API's envelope, without a key either.
    const enveloped = await app.app.inject({ method: "GET", url: "/api/v1/health" });
    expect([enveloped.statusCode, envelope(enveloped).code]).toEqual([200, "ok"]);
    expect(Health.parse(envelope(enveloped).data)).toMatchObject({ ready: true });
    await app.tasks.shutdown(0);
    const draining = await app.app.inject({ method: "GET", url: "/health" });
    expect(draining.statusCode).toBe(503);
    expect(Health.parse(draining.json())).toMatchObject({ ready: false, live: true, checks: { accepting: false } });
    const envelopedDraining = await app.app.inject({ method: "GET", url: "/api/v1/health" });
    expect([envelopedDraining.statusCode, envelope(envelopedDraining).code, envelope(envelopedDraining).message]).toEqual([503, "not_ready", "not ready: the server is shutting down"]);
    const refused = await app.app.inject({ method: "POST", url: "/api/v1/execute", payload: { task: TASK }, headers: { authorization: "Bearer key-ops-1" } });
    expect([refused.statusCode, envelope(refused).code]).toEqual([503, "shutting_down"]);
    expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
  });

  it("is not ready when the database cannot be read", async () => {
    const app = await makeApp();
    (app.troupe.store as SqliteStore).db.close();
    const response = await app.app.inject({ method: "GET", url: "/health" });
    expect(response.statusCode).toBe(503);
    expect(Health.parse(response.json()).checks.database.ok).toBe(false);
  });
});

describe("overload", () => {
  it("answers 503 with Retry-After while the event loop lags", async () => {
    const app = await makeApp({ config: { maxEventLoopDelayMs: 20 }, pressureSampleIntervalMs: 10 });
    expect((await app.app.inject({ method: "GET", url: "/api/v1/tools" })).statusCode).toBe(200);
    const status = await waitFor(
      async () => {
        const until = Date.now() + 300;
        while (Date.now() < until) {
          // Hold the event loop, as a burst of synchronous work would.
        }
        await new Promise((resolve) => setTimeout(resolve, 1));
        const response = await app.app.inject({ method: "GET", url: "/api/v1/tools" });
        return response.statusCode === 503 ? response : undefined;
      },
      "a 503 under pressure",
      20_000,
    );
    expect(envelope(status).code).toBe("overloaded");
    expect(Number(status.headers["retry-after"])).toBeGreaterThan(0);
    // /health is outside the protected scope: a lagging server still reports itself alive.
    expect((await app.app.inject({ method: "GET", url: "/health/live" })).statusCode).toBe(200);
  });
});

describe("GET /openapi.json", () => {
  it("documents every route with schemas generated from the zod schemas", async () => {
    const app = await makeApp();
    const document = (await app.app.inject({ method: "GET", url: "/openapi.json" })).json() as {
      openapi: string;
      paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: Record<string, unknown> }> }; parameters?: Array<{ name: string }> }>>;
    };
    expect(document.openapi).toBe("3.1.0");
    const routes = Object.entries(document.paths).flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`));
    expect(routes.sort()).toEqual(
      [
        "POST /api/v1/execute",
        "POST /api/v1/plan",
        "GET /api/v1/tasks",
        "GET /api/v1/tasks/{id}",
        "GET /api/v1/tasks/{id}/events",
        "GET /api/v1/tasks/{id}/graph",
        "POST /api/v1/tasks/{id}/resume",
        "POST /api/v1/tasks/{id}/cancel",
        "GET /api/v1/tools",
        "POST /api/v1/tools/call",
        "POST /api/v1/evals",
        "GET /api/v1/evals",
        "GET /api/v1/evals/{id}",
        "GET /api/v1/evals/{id}/events",
        "POST /api/v1/evals/{id}/cancel",
        "POST /api/v1/decide",
        "GET /api/v1/memory",
        "POST /api/v1/memory",
        "GET /api/v1/memory/{id}",
        "DELETE /api/v1/memory/{id}",
        "GET /api/v1/workers",
        "POST /api/v1/workers/{id}/drain",
        "POST /api/v1/tasks/{id}/fork",
        "GET /api/v1/threads/{id}/history",
        "DELETE /api/v1/tasks/{id}",
        "DELETE /api/v1/threads/{id}",
        "GET /api/v1/schedules",
        "POST /api/v1/schedules",
        "GET /api/v1/schedules/{id}",
        "DELETE /api/v1/schedules/{id}",
        "GET /api/v1/grants",
        "POST /api/v1/grants",
        "DELETE /api/v1/grants/{id}",
        "GET /health",
        "GET /api/v1/health",
        "GET /metrics",
        "GET /openapi.json",
        "POST /mcp",
        "GET /mcp",
        "DELETE /mcp",
        "GET /.well-known/agent-card.json",
        "POST /a2a/jsonrpc",
        "POST /a2a/rest/v1/message:send",
        "POST /a2a/rest/v1/message:stream",
        "GET /a2a/rest/v1/tasks",
        "GET /a2a/rest/v1/tasks/{id}",
        "POST /a2a/rest/v1/tasks/{id}:cancel",
        "GET /a2a/rest/v1/tasks/{id}:subscribe",
        // The Agent Protocol, for LangGraph's SDK clients (docs/agent-chat-ui.md).
        "GET /langgraph/info",
        "POST /langgraph/assistants/search",
        "POST /langgraph/assistants/count",
        "GET /langgraph/assistants/{assistant_id}",
        "GET /langgraph/assistants/{assistant_id}/graph",
        "GET /langgraph/assistants/{assistant_id}/schemas",
        "GET /langgraph/assistants/{assistant_id}/subgraphs",
        "GET /langgraph/assistants/{assistant_id}/subgraphs/{namespace}",
        "POST /langgraph/assistants/{assistant_id}/versions",
        "POST /langgraph/threads",
        "POST /langgraph/threads/search",
        "POST /langgraph/threads/count",
        "GET /langgraph/threads/{thread_id}",
        "PATCH /langgraph/threads/{thread_id}",
        "DELETE /langgraph/threads/{thread_id}",
        "GET /langgraph/threads/{thread_id}/state",
        "GET /langgraph/threads/{thread_id}/state/{checkpoint_id}",
        "POST /langgraph/threads/{thread_id}/state/checkpoint",
        "POST /langgraph/threads/{thread_id}/history",
        "GET /langgraph/threads/{thread_id}/history",
        "POST /langgraph/threads/{thread_id}/runs",
        "POST /langgraph/threads/{thread_id}/runs/stream",
        "POST /langgraph/threads/{thread_id}/runs/wait",
        "POST /langgraph/runs",
        "POST /langgraph/runs/stream",
        "POST /langgraph/runs/wait",
        "GET /langgraph/threads/{thread_id}/runs",
        "GET /langgraph/threads/{thread_id}/runs/{run_id}",
        "POST /langgraph/threads/{thread_id}/runs/{run_id}/cancel",
        "GET /langgraph/threads/{thread_id}/runs/{run_id}/join",
        "GET /langgraph/threads/{thread_id}/runs/{run_id}/stream",
        "GET /langgraph/runs/{run_id}/stream",
        "DELETE /langgraph/threads/{thread_id}/runs/{run_id}",
        "PUT /langgraph/store/items",
        "GET /langgraph/store/items",
        "DELETE /langgraph/store/items",
        "POST /langgraph/store/items/search",
        "POST /langgraph/store/namespaces",
      ].sort(),
    );
    const execute = document.paths["/api/v1/execute"]?.post?.requestBody?.content["application/json"]?.schema as {
      properties: Record<string, { maxLength?: number; minimum?: number; maximum?: number }>;
      required: string[];
      additionalProperties: boolean;
    };
    expect(execute.required).toEqual(["task"]);
    expect(execute.additionalProperties).toBe(false);
    expect(execute.properties.task?.maxLength).toBe(5000);
    expect([execute.properties.max_iterations?.minimum, execute.properties.max_iterations?.maximum]).toEqual([1, 50]);
    expect(document.paths["/api/v1/tasks"]?.get?.parameters?.map((parameter) => parameter.name)).toEqual(["status", "thread_id", "limit", "offset", "cursor"]);
  });
});

describe("logs and traces", () => {
  it("writes JSON logs with request id and trace id, and task lines with task, thread and trace ids", async () => {
    const app = await makeApp();
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const response = await app.app.inject({
      method: "POST",
      url: "/api/v1/execute",
      payload: { task: TASK },
      headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01`, "x-request-id": "req-123" },
    });
    expect(response.headers["x-request-id"]).toBe("req-123");
    const id = envelope<{ task_id: string; thread_id: string }>(response).data;
    await waitForStatus(app, id.task_id, ["completed"]);
    const request = app.logs.find((line) => line.msg === "request completed" && line.url === "/api/v1/execute");
    expect(request).toMatchObject({ requestId: "req-123", traceId, statusCode: 202, service: "troupe" });
    expect(app.logs.find((line) => line.msg === "task accepted")).toMatchObject({ taskId: id.task_id, threadId: id.thread_id, requestId: "req-123", traceId });
    const stopped = await waitFor(() => app.logs.find((line) => line.msg === "task stopped"), "the task's last log line");
    expect(stopped).toMatchObject({ taskId: id.task_id, threadId: id.thread_id, traceId, status: "completed" });
    const other = await app.app.inject({ method: "GET", url: "/api/v1/tools" });
    const line = app.logs.find((candidate) => candidate.url === "/api/v1/tools");
    expect(line?.requestId).toBe(other.headers["x-request-id"]);
    expect(line?.traceId).toMatch(/^[\da-f]{32}$/);
    expect(JSON.stringify(app.logs)).not.toContain("authorization");
  });

  it("exports spans run → node → model call / tool call over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set", async () => {
    const received: Array<{ name: string; traceId: string; spanId: string; parentSpanId?: string; attributes: Array<{ key: string }> }> = [];
    const collector = createServer((request: IncomingMessage, response) => {
      let body = "";
      request.on("data", (chunk: Buffer) => (body += chunk.toString()));
      request.on("end", () => {
        if (request.url === "/v1/traces") {
          const payload = JSON.parse(body) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: typeof received }> }> };
          for (const resource of payload.resourceSpans) for (const scope of resource.scopeSpans) received.push(...scope.spans);
        }
        response.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, "127.0.0.1", resolve));
    try {
      const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
      const telemetry = await createTelemetry({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint });
      expect(telemetry.tracer).toBeDefined();
      const app = await makeApp({ telemetry });
      const traceId = "0af7651916cd43dd8448eb211c80319c";
      const id = envelope<{ task_id: string }>(
        await app.app.inject({ method: "POST", url: "/api/v1/execute", payload: { task: WORKER_TASK }, headers: { traceparent: `00-${traceId}-b7ad6b7169203331-01` } }),
      ).data.task_id;
      await waitForStatus(app, id, ["completed"]);
      await telemetry.forceFlush();
      const byName = (name: string) => received.filter((span) => span.name === name);
      const run = byName("run");
      expect(run).toHaveLength(1);
      expect(run[0]?.traceId).toBe(traceId);
      expect(run[0]?.parentSpanId).toBe("b7ad6b7169203331");
      const nodes = received.filter((span) => span.name.startsWith("node "));
      expect(nodes.map((span) => span.name)).toEqual(expect.arrayContaining(["node planner", "node critic", "node synthesizer"]));
      expect(nodes.every((span) => span.parentSpanId === run[0]?.spanId && span.traceId === traceId)).toBe(true);
      const planner = byName("node planner")[0];
      const chats = byName("chat rules-v1");
      // Planner, the worker of s3 (its write, then its answer), critic, synthesizer.
      expect(chats.length).toBe(5);
      // The planner's model call is made in its own task (`plan`), under the planner node.
      const planSpan = byName("plan")[0];
      expect(planSpan?.parentSpanId).toBe(planner?.spanId);
      expect(chats.some((span) => span.parentSpanId === planSpan?.spanId)).toBe(true);
      const tools = received.filter((span) => span.name.startsWith("execute_tool "));
      expect(tools.map((span) => span.name).sort()).toEqual(["execute_tool calculator", "execute_tool calculator", "execute_tool file_write"]);
      // Each subtask is a span under the node that ran it (the planner, which runs a plan as it streams in), and its tool calls hang from it.
      const execute = byName("node planner")[0];
      const subtaskSpans = received.filter((span) => span.name.startsWith("subtask "));
      expect(subtaskSpans.map((span) => span.name).sort()).toEqual(["subtask s1", "subtask s2", "subtask s3"]);
      expect(subtaskSpans.every((span) => span.parentSpanId === execute?.spanId)).toBe(true);
      expect(tools.every((span) => subtaskSpans.some((subtask) => subtask.spanId === span.parentSpanId))).toBe(true);
      // Every model call names its role and the model it called, as the call itself said (not read from node names);
      // a worker's call hangs from its subtask's span.
      const text = (span: (typeof received)[number], key: string): string | undefined =>
        (span.attributes as Array<{ key: string; value?: { stringValue?: string } }>).find((attribute) => attribute.key === key)?.value?.stringValue;
      expect(chats.every((span) => text(span, "gen_ai.provider.name") === "offline" && text(span, "gen_ai.request.model") === "rules-v1")).toBe(true);
      expect(new Set(chats.map((span) => text(span, "troupe.role")))).toEqual(new Set(["planner", "worker", "critic", "synthesizer"]));
      const workerChats = chats.filter((span) => text(span, "troupe.role") === "worker");
      expect(workerChats.length).toBeGreaterThan(0);
      for (const span of workerChats) {
        const subtask = subtaskSpans.find((candidate) => candidate.spanId === span.parentSpanId);
        expect(subtask?.name).toBe(`subtask ${text(span, "troupe.subtask_id")}`);
      }
      expect(text(chats.find((span) => span.parentSpanId === planSpan?.spanId) as (typeof received)[number], "troupe.role")).toBe("planner");
      await telemetry.shutdown();
    } finally {
      collector.close();
    }
  });
});
