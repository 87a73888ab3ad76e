import { describe, expect, it } from "vitest";
import { listen } from "../protocol-helpers.js";
import { makeApp, type TestApp } from "../server-helpers.js";

// /openapi.json as a client generator reads it: every operation named (a unique operationId) and
// its error answers documented — and what the server really answers a bad request with is among
// them, for every operation: no key, an id that does not exist, a body or query it does not take,
// a body that is not JSON, one over the limit, and a request over the rate limit.

type Response = { description: string; content?: Record<string, { schema: Record<string, unknown> }>; "x-error-codes"?: string[] };
type Operation = { operationId: string; security?: unknown[]; parameters?: Array<{ name: string; in: string }>; requestBody?: unknown; responses: Record<string, Response> };
type Document = { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, unknown> } };

const KEYS = { apiKeys: "alice:alice-key" };
const ALICE = { authorization: "Bearer alice-key" };

async function documentOf(app: TestApp): Promise<Document> {
  return (await app.app.inject({ method: "GET", url: "/openapi.json", headers: ALICE })).json() as Document;
}

function operations(document: Document): Array<{ method: string; path: string; operation: Operation }> {
  return Object.entries(document.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, operation]) => ({ method: method.toUpperCase(), path, operation })));
}

/** The operation's path with an id that does not exist in each path parameter. */
function urlOf(path: string): string {
  return path.replace(/\{[^}]+\}/g, "no-such-id-0");
}

/** What a client sees from the server: the status of a real HTTP request. */
async function statusOf(base: string, method: string, url: string, init: { headers?: Record<string, string>; body?: string } = {}): Promise<number> {
  const response = await fetch(`${base}${url}`, { method, headers: init.headers ?? {}, ...(init.body !== undefined ? { body: init.body } : {}) });
  await response.body?.cancel();
  return response.status;
}

/** Whether the status is one the operation documents (2xx: a success, which a bad input may still be for a route that ignores it). */
function documents(operation: Operation, status: number): boolean {
  return (status >= 200 && status < 300) || status === 304 || String(status) in operation.responses;
}

describe("the OpenAPI document's operations and their errors", () => {
  it("names every operation uniquely and documents its 4xx/5xx answers in the error envelope or the protocol's own error shape", async () => {
    const app = await makeApp({ config: KEYS });
    const document = await documentOf(app);
    const all = operations(document);
    expect(all.length).toBeGreaterThanOrEqual(47);
    const ids = all.map(({ operation }) => operation.operationId);
    expect(ids.every((id) => /^[a-z][A-Za-z0-9]+$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(Object.keys(document.components.schemas).sort()).toEqual(["A2AError", "AgentProtocolError", "Error", "JsonRpcError"]);
    const open = new Set(["GET /health", "GET /api/v1/health", "GET /.well-known/agent-card.json"]);
    for (const { method, path, operation } of all) {
      const errors = Object.entries(operation.responses).filter(([status]) => status === "default" || Number(status) >= 400);
      if (!open.has(`${method} ${path}`)) expect({ route: `${method} ${path}`, has4xx: errors.some(([status]) => status.startsWith("4")) }).toEqual({ route: `${method} ${path}`, has4xx: true });
      for (const [status, response] of errors) {
        // GET /health answers 503 with its own body (alive, not ready): an answer of its own, not an error.
        if (path === "/health" && status === "503") continue;
        const schema = response.content?.["application/json"]?.schema;
        expect({ route: `${method} ${path}`, status, ref: schema?.$ref }).toMatchObject({ ref: expect.stringMatching(/^#\/components\/schemas\/(Error|JsonRpcError|A2AError|AgentProtocolError)$/) });
        if (schema?.$ref === "#/components/schemas/Error" && status !== "default") expect(response["x-error-codes"]?.length).toBeGreaterThan(0);
      }
      // A route behind the key documents 401; every route documents 500.
      if (!(Array.isArray(operation.security) && operation.security.length === 0)) expect(Object.keys(operation.responses)).toContain("401");
      expect(Object.keys(operation.responses)).toContain("500");
    }
    expect(document.paths["/api/v1/tasks/{id}"]?.get?.responses["404"]?.["x-error-codes"]).toEqual(["task_not_found"]);
    expect(document.paths["/api/v1/execute"]?.post?.responses["422"]?.["x-error-codes"]).toEqual(["idempotency_key_reused"]);
  });

  it("answers every operation's bad requests with statuses it documents", async () => {
    const app = await makeApp({ config: KEYS });
    const base = await listen(app);
    const document = await documentOf(app);
    const seen: string[] = [];
    for (const { method, path, operation } of operations(document)) {
      const url = urlOf(path);
      const route = `${method} ${path}`;
      const probes: Array<[string, Promise<number>]> = [];
      const json = { ...ALICE, "content-type": "application/json", accept: "application/json, text/event-stream", "A2A-Version": "1.0" };
      if (!(Array.isArray(operation.security) && operation.security.length === 0)) probes.push(["no key", statusOf(base, method, url, { headers: { "content-type": "application/json" }, ...(method === "POST" ? { body: "{}" } : {}) })]);
      probes.push(["an id that does not exist", statusOf(base, method, url, { headers: json, ...(method === "POST" ? { body: "{}" } : {}) })]);
      if (method === "POST") {
        probes.push(["a field it does not take", statusOf(base, method, url, { headers: json, body: JSON.stringify({ no_such_field: 1 }) })]);
        probes.push(["a body that is not JSON", statusOf(base, method, url, { headers: json, body: "{not json" })]);
        probes.push(["a body that is not an object", statusOf(base, method, url, { headers: json, body: "[1, 2]" })]);
        probes.push(["a body of another type", statusOf(base, method, url, { headers: { ...json, "content-type": "text/plain" }, body: "hello" })]);
      }
      if (operation.parameters?.some((parameter) => parameter.in === "query")) {
        probes.push(["query values out of range", statusOf(base, method, `${url}?limit=-1&offset=-5&status=nope&after=x&all=maybe&query=`, { headers: json })]);
      }
      for (const [probe, pending] of probes) {
        const status = await pending;
        seen.push(`${route} ${status}`);
        expect({ route, probe, status, documented: documents(operation, status) }).toEqual({ route, probe, status, documented: true });
      }
    }
    // The probes did reach the errors they are for.
    for (const expected of ["GET /api/v1/tasks/{id} 404", "POST /api/v1/execute 400", "POST /api/v1/execute 415", "GET /api/v1/grants 403", "POST /mcp 400", "GET /a2a/rest/v1/tasks/{id} 404", "GET /api/v1/workers 409", "GET /metrics 401"]) {
      expect(seen).toContain(expected);
    }
  });

  it("answers a body over the limit and a request over the rate limit with statuses each operation documents", async () => {
    const headers = { ...ALICE, "content-type": "application/json", accept: "application/json, text/event-stream", "A2A-Version": "1.0" };
    const seen: string[] = [];
    const check = async (base: string, document: Document, method: string, path: string, body?: string): Promise<void> => {
      const operation = document.paths[path]?.[method.toLowerCase()] as Operation;
      const status = await statusOf(base, method, urlOf(path), { headers, ...(body !== undefined ? { body } : {}) });
      seen.push(`${method} ${path} ${status}`);
      expect({ route: `${method} ${path}`, status, documented: documents(operation, status) }).toEqual({ route: `${method} ${path}`, status, documented: true });
    };
    const small = await makeApp({ config: { ...KEYS, bodyLimitBytes: 1024 } });
    const smallBase = await listen(small);
    const smallDocument = await documentOf(small);
    const large = JSON.stringify({ task: "x".repeat(200_000) });
    for (const { method, path } of operations(smallDocument)) if (method === "POST") await check(smallBase, smallDocument, method, path, large);
    // The first request of each protected scope goes through; every one after it is over the limit.
    const limited = await makeApp({ config: { ...KEYS, rateLimitPerMinute: 1 } });
    const limitedBase = await listen(limited);
    const limitedDocument = await documentOf(limited);
    for (const { method, path } of operations(limitedDocument)) await check(limitedBase, limitedDocument, method, path);
    for (const expected of ["POST /api/v1/execute 413", "POST /a2a/jsonrpc 413", "POST /mcp 413", "POST /a2a/rest/v1/message:send 413", "GET /api/v1/tasks 429", "GET /a2a/rest/v1/tasks/{id} 429"]) expect(seen).toContain(expected);
  });
});
