import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { makeApp } from "../server-helpers.js";

// /mcp and the A2A endpoints in /openapi.json: documented as operations, and each documented
// operation is one the server really answers (through the SDKs' handlers), with the error shape
// the document gives.

type Operation = {
  summary: string;
  description?: string;
  tags: string[];
  security?: unknown[];
  parameters?: Array<{ name: string; in: string }>;
  requestBody?: { content: Record<string, { schema: { anyOf?: unknown[]; properties?: Record<string, unknown> } }> };
  responses: Record<string, { description: string; content?: Record<string, { schema: Record<string, unknown> }> }>;
};

const KEYS = { apiKeys: "alice:key-alice-123" };
const ALICE = { authorization: "Bearer key-alice-123" };

describe("the protocol endpoints in /openapi.json", () => {
  it("documents MCP and A2A with their methods, headers, bodies and protocol error shapes, and the server answers each documented operation", async () => {
    const app = await makeApp({ config: KEYS });
    const document = (await app.app.inject({ method: "GET", url: "/openapi.json", headers: ALICE })).json() as { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, unknown> } };
    // An error schema is a shared component, by reference.
    const resolved = (schema: Record<string, unknown> | undefined) => (typeof schema?.$ref === "string" ? document.components.schemas[schema.$ref.replace("#/components/schemas/", "")] : schema);
    const mcp = document.paths["/mcp"] as Record<string, Operation>;
    expect(Object.keys(mcp).sort()).toEqual(["delete", "get", "post"]);
    expect(mcp.post?.tags).toEqual(["mcp"]);
    expect(mcp.post?.parameters?.map((parameter) => `${parameter.in} ${parameter.name}`)).toEqual(["header Mcp-Session-Id", "header MCP-Protocol-Version"]);
    expect(mcp.post?.description).toContain("run_task");
    expect(mcp.post?.requestBody?.content["application/json"]?.schema.anyOf).toHaveLength(2);
    expect(Object.keys(mcp.post?.responses["200"]?.content ?? {})).toEqual(["application/json", "text/event-stream"]);
    // Errors are JSON-RPC's, not troupe's envelope.
    expect(resolved(mcp.post?.responses.default?.content?.["application/json"]?.schema)).toMatchObject({ properties: { jsonrpc: {}, id: {}, error: {} } });
    expect(Object.keys(mcp.post?.responses ?? {})).toEqual(["200", "202", "400", "401", "403", "404", "406", "413", "415", "429", "500", "503", "default"]);

    const card = document.paths["/.well-known/agent-card.json"]?.get as Operation;
    expect(card.security).toEqual([]);
    const rpc = document.paths["/a2a/jsonrpc"]?.post as Operation;
    expect(rpc.description).toMatch(/`SendMessage`.*`GetTask`.*`message\/send`/);
    const task = document.paths["/a2a/rest/v1/tasks/{id}"]?.get as Operation;
    expect(task.parameters?.map((parameter) => `${parameter.in} ${parameter.name}`)).toEqual(["path id", "header A2A-Version"]);
    expect(resolved(task.responses.default?.content?.["application/json"]?.schema)).toMatchObject({ properties: { error: { properties: { code: {}, status: {}, message: {} } } } });
    // The key, the rate limit and overload answer in troupe's envelope; the A2A SDK's errors in A2A's shape.
    expect(task.responses["401"]?.content?.["application/json"]?.schema).toEqual({ $ref: "#/components/schemas/Error" });
    expect(task.responses["404"]?.content?.["application/json"]?.schema).toEqual({ $ref: "#/components/schemas/A2AError" });

    // Each documented operation is served: its answer is the protocol's, never Fastify's "route not found".
    const answer = async (method: "GET" | "POST" | "DELETE", url: string, payload?: unknown, headers: Record<string, string> = {}) => {
      const response = await app.app.inject({ method, url, headers: { ...ALICE, ...headers }, ...(payload !== undefined ? { payload: payload as object } : {}) });
      return { status: response.statusCode, body: response.body, headers: response.headers };
    };
    const mcpHeaders = { accept: "application/json, text/event-stream", "content-type": "application/json" };
    const initialize = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "openapi-test", version: "1" } } };
    const opened = await answer("POST", "/mcp", initialize, mcpHeaders);
    expect(opened.status).toBe(200);
    const session = String(opened.headers["mcp-session-id"]);
    expect(session).toMatch(/\S/);
    expect(opened.body).toContain('"serverInfo"');
    const ended = await answer("DELETE", "/mcp", undefined, { "mcp-session-id": session, "mcp-protocol-version": "2025-06-18" });
    expect(ended.status).toBe(200);
    const noSession = await answer("GET", "/mcp", undefined, { accept: "text/event-stream" });
    expect([noSession.status, JSON.parse(noSession.body)]).toMatchObject([400, { jsonrpc: "2.0", error: { code: -32600 } }]);

    // The A2A handlers are the SDK's Express ones, which write to the socket themselves (inject sees their status, not their body): over a port.
    await app.app.listen({ port: 0, host: "127.0.0.1" });
    const { port } = app.app.server.address() as AddressInfo;
    const a2a = async (method: "GET" | "POST", url: string, body?: unknown) => {
      const response = await fetch(`http://127.0.0.1:${port}${url}`, {
        method,
        headers: { ...ALICE, "a2a-version": "1.0", ...(body !== undefined ? { "content-type": "application/json" } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    expect(await a2a("GET", "/.well-known/agent-card.json")).toMatchObject({ status: 200, body: { name: expect.any(String), skills: expect.any(Array) } });
    expect(await a2a("POST", "/a2a/jsonrpc", { jsonrpc: "2.0", id: 7, method: "GetTask", params: { id: "no-such-task" } })).toMatchObject({ body: { jsonrpc: "2.0", id: 7, error: { code: expect.any(Number) } } });
    for (const [method, url] of [
      ["GET", "/a2a/rest/v1/tasks/no-such-task"],
      ["POST", "/a2a/rest/v1/tasks/no-such-task:cancel"],
      ["GET", "/a2a/rest/v1/tasks/no-such-task:subscribe"],
    ] as const) {
      expect({ method, url, ...(await a2a(method, url)) }).toMatchObject({ method, url, status: 404, body: { error: { code: expect.any(Number), message: expect.any(String) } } });
    }
    for (const url of ["/a2a/rest/v1/message:send", "/a2a/rest/v1/message:stream"]) {
      expect({ url, ...(await a2a("POST", url, { nothing: true })) }).toMatchObject({ url, status: 400, body: { error: { message: expect.any(String) } } });
    }
    // Without a key, the protocols answer 401 as the API does.
    expect((await app.app.inject({ method: "POST", url: "/a2a/jsonrpc", payload: {} })).statusCode).toBe(401);
  });
});
