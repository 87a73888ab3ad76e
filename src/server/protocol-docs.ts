import { z } from "zod";
import { A2A_PATHS } from "./a2a/agent-card.js";
import type { ApiDocs } from "./openapi.js";

/**
 * The protocol endpoints in /openapi.json: MCP over Streamable HTTP and A2A (the agent card,
 * JSON-RPC, HTTP+JSON). Their messages are the protocols' own, served by the official SDKs, so
 * bodies are described loosely (a JSON-RPC envelope, an A2A object) with the methods named; the
 * protocols' specifications are the reference (see docs/protocols.md).
 */

const RpcId = z.union([z.string(), z.number(), z.null()]);

const JsonRpcMessage = z
  .object({
    jsonrpc: z.literal("2.0"),
    id: RpcId.optional().describe("absent on a notification"),
    method: z.string().optional().describe("on a request or a notification"),
    params: z.record(z.string(), z.unknown()).optional(),
    result: z.unknown().optional().describe("on a response"),
    error: z.object({ code: z.number().int(), message: z.string(), data: z.unknown().optional() }).optional().describe("on an error response"),
  })
  .describe("a JSON-RPC 2.0 request, notification or response");

const JsonRpcError = z
  .object({ jsonrpc: z.literal("2.0"), id: RpcId, error: z.object({ code: z.number().int(), message: z.string(), data: z.unknown().optional() }) })
  .describe("a JSON-RPC 2.0 error (-32700 not JSON, -32600 a bad request or no session, -32603 an internal error); HTTP 401 without a valid key, 403 from another site's page, 404 an unknown session, 429 over the rate limit");

const A2AObject = z.record(z.string(), z.unknown());

const A2AError = z
  .object({ error: z.object({ code: z.number().int(), status: z.string().describe("e.g. INVALID_ARGUMENT, NOT_FOUND, UNAUTHENTICATED"), message: z.string() }) })
  .describe("an A2A HTTP+JSON error");

const MCP_HEADERS = [
  { name: "Mcp-Session-Id", description: "the session the initialize response gave; required on every request after it" },
  { name: "MCP-Protocol-Version", description: "the protocol version the session agreed on, e.g. 2025-06-18" },
];
const A2A_HEADERS = [{ name: "A2A-Version", description: "the A2A protocol version the client speaks: 1.0 (the default) or 0.3" }];
const TaskId = z.object({ id: z.string().describe("the A2A task id (troupe's task id)") });

/** Adds the MCP and A2A endpoints to the API's OpenAPI document. */
export function documentProtocols(docs: ApiDocs): void {
  const mcp = { tags: ["mcp"], headers: MCP_HEADERS, errors: { description: "a JSON-RPC error", schema: JsonRpcError } };
  docs.add({
    ...mcp,
    method: "post",
    path: "/mcp",
    summary: "MCP over Streamable HTTP: one JSON-RPC message (or a batch) from the client",
    description:
      "An `initialize` request without `Mcp-Session-Id` opens a session owned by the key's principal; later requests carry the session id. Tools: `run_task`, `get_run`, `list_runs`, `resume_run`, `decide`, `memory_search`, `memory_save`; a run's progress as notifications; its questions and approvals as elicitation where the client offers it.",
    body: z.union([JsonRpcMessage, z.array(JsonRpcMessage)]),
    responses: {
      200: { description: "the responses, as JSON or as an event stream of JSON-RPC messages", schema: z.union([JsonRpcMessage, z.array(JsonRpcMessage)]), contentType: ["application/json", "text/event-stream"] },
      202: { description: "accepted (the body held only notifications or responses)" },
    },
  });
  docs.add({ ...mcp, method: "get", path: "/mcp", summary: "MCP: the session's stream of server-initiated messages (notifications, elicitation requests)", responses: { 200: { description: "an event stream of JSON-RPC messages", contentType: "text/event-stream" } } });
  docs.add({ ...mcp, method: "delete", path: "/mcp", summary: "MCP: ends the session", responses: { 200: { description: "the session is closed" } } });

  docs.add({
    method: "get",
    path: A2A_PATHS.card,
    summary: "The A2A agent card: troupe's skills (a whole task, and one per agent), its JSON-RPC and HTTP+JSON interfaces, streaming, and the bearer key it needs",
    tags: ["a2a"],
    auth: false,
    headers: A2A_HEADERS,
    responses: { 200: { description: "the AgentCard (A2A 1.0; 0.3 when A2A-Version asks for it)", schema: A2AObject } },
  });
  const a2a = { tags: ["a2a"], headers: A2A_HEADERS };
  docs.add({
    ...a2a,
    method: "post",
    path: A2A_PATHS.jsonRpc,
    summary: "A2A over JSON-RPC 2.0",
    description:
      "Methods: `SendMessage` (a message starts a task, or answers one waiting for input), `SendStreamingMessage` (the same, answered as an event stream), `GetTask`, `ListTasks`, `CancelTask`, `SubscribeToTask`; with A2A 0.3, `message/send`, `message/stream`, `tasks/get`, `tasks/cancel`, `tasks/resubscribe`. Push notifications are not offered.",
    body: JsonRpcMessage,
    responses: { 200: { description: "the JSON-RPC response (errors too), or an event stream for the streaming methods", schema: JsonRpcMessage, contentType: ["application/json", "text/event-stream"] } },
    errors: { description: "a JSON-RPC error", schema: JsonRpcError },
  });
  const rest = { ...a2a, errors: { description: "an A2A HTTP+JSON error", schema: A2AError } };
  const base = A2A_PATHS.rest;
  docs.add({ ...rest, method: "post", path: `${base}/v1/message:send`, summary: "A2A HTTP+JSON: sends a message (a new task, or the answer a waiting one asked for)", body: A2AObject, responses: { 200: { description: "the Task or Message", schema: A2AObject } } });
  docs.add({ ...rest, method: "post", path: `${base}/v1/message:stream`, summary: "A2A HTTP+JSON: sends a message and streams the task's updates", body: A2AObject, responses: { 200: { description: "an event stream of task, status and artifact updates", contentType: "text/event-stream" } } });
  docs.add({ ...rest, method: "get", path: `${base}/v1/tasks/{id}`, summary: "A2A HTTP+JSON: a task, with its status, artifacts and history", params: TaskId, responses: { 200: { description: "the Task", schema: A2AObject } } });
  docs.add({ ...rest, method: "post", path: `${base}/v1/tasks/{id}:cancel`, summary: "A2A HTTP+JSON: cancels a task", params: TaskId, responses: { 200: { description: "the Task, canceled", schema: A2AObject } } });
  docs.add({ ...rest, method: "get", path: `${base}/v1/tasks/{id}:subscribe`, summary: "A2A HTTP+JSON: the updates of a task still running, as an event stream", params: TaskId, responses: { 200: { description: "an event stream of task updates", contentType: "text/event-stream" } } });
}
