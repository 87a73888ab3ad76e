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
  .describe("a JSON-RPC 2.0 error: code -32700 (not JSON), -32600 (not a valid request), -32601 (no such method), -32602 (bad parameters), -32603 (the server failed), or a protocol's own code");

const A2AObject = z.record(z.string(), z.unknown());

const A2AError = z
  .object({
    error: z.object({
      code: z.number().int().describe("the HTTP status"),
      status: z.string().describe("e.g. INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION"),
      message: z.string(),
      details: z.array(z.record(z.string(), z.unknown())).optional().describe("a google.rpc.ErrorInfo whose reason names the A2A error (TASK_NOT_FOUND, UNSUPPORTED_OPERATION, …)"),
    }),
  })
  .describe("an A2A HTTP+JSON error (google.rpc.Status)");

const MCP_HEADERS = [
  { name: "Mcp-Session-Id", description: "the session the initialize response gave; required on every request after it" },
  { name: "MCP-Protocol-Version", description: "the protocol version the session agreed on, e.g. 2025-06-18" },
];
const A2A_HEADERS = [{ name: "A2A-Version", description: "the A2A protocol version the client speaks: 1.0 (the default) or 0.3" }];
const TaskId = z.object({ id: z.string().describe("the A2A task id (troupe's task id)") });
const A2AListQuery = z.object({
  contextId: z.string().optional().describe("only the tasks of this context (troupe thread)"),
  status: z.string().optional().describe("only the tasks in this state, e.g. TASK_STATE_WORKING, TASK_STATE_INPUT_REQUIRED"),
  pageSize: z.number().int().min(1).max(100).optional().describe("tasks a page (default 50)"),
  pageToken: z.string().optional().describe("the nextPageToken of the previous page"),
  historyLength: z.number().int().min(0).optional().describe("messages of each task's history (0: none)"),
  statusTimestampAfter: z.string().optional().describe("only the tasks changed at or after this time (ISO 8601)"),
  includeArtifacts: z.boolean().optional().describe("the tasks' artifacts too (default false)"),
});

/** Adds the MCP and A2A endpoints to the API's OpenAPI document. */
export function documentProtocols(docs: ApiDocs): void {
  // Every error of /mcp is JSON-RPC's, the key's and the rate limit's too (its scope answers them so).
  const mcpErrors = {
    name: "JsonRpcError",
    description: "a JSON-RPC error",
    schema: JsonRpcError,
    statuses: {
      400: "-32700: the body is not JSON; -32600: a request without a session that is not initialize, or one the SDK refuses",
      401: "no API key, or one that is not valid (when the server requires keys; WWW-Authenticate says so)",
      403: "a request from a browser page of another site (its Origin is not this server)",
      404: "no such session (or another key's)",
      406: "the Accept header does not take application/json and text/event-stream",
      413: "the body is larger than the server's limit",
      415: "the body is not application/json",
      429: "over the key's rate limit; retry after Retry-After seconds",
      500: "the server failed; its log says why",
      503: "overloaded; retry after Retry-After seconds",
    },
  };
  const mcp = { tags: ["mcp"], headers: MCP_HEADERS, protocolErrors: mcpErrors };
  docs.add({
    ...mcp,
    method: "post",
    path: "/mcp",
    operationId: "mcpPost",
    summary: "MCP over Streamable HTTP: one JSON-RPC message (or a batch) from the client",
    description:
      "An `initialize` request without `Mcp-Session-Id` opens a session owned by the key's principal; later requests carry the session id. Tools: `run_task`, `get_run`, `list_runs`, `resume_run`, `decide`, `memory_search`, `memory_save`; a run's progress as notifications; its questions and approvals as elicitation where the client offers it.",
    body: z.union([JsonRpcMessage, z.array(JsonRpcMessage)]),
    responses: {
      200: { description: "the responses, as JSON or as an event stream of JSON-RPC messages", schema: z.union([JsonRpcMessage, z.array(JsonRpcMessage)]), contentType: ["application/json", "text/event-stream"] },
      202: { description: "accepted (the body held only notifications or responses)" },
    },
  });
  docs.add({ ...mcp, method: "get", path: "/mcp", operationId: "mcpOpenStream", summary: "MCP: the session's stream of server-initiated messages (notifications, elicitation requests)", responses: { 200: { description: "an event stream of JSON-RPC messages", contentType: "text/event-stream" } } });
  docs.add({ ...mcp, method: "delete", path: "/mcp", operationId: "mcpCloseSession", summary: "MCP: ends the session", responses: { 200: { description: "the session is closed" } } });

  docs.add({
    method: "get",
    path: A2A_PATHS.card,
    operationId: "getAgentCard",
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
    operationId: "a2aJsonRpc",
    summary: "A2A over JSON-RPC 2.0",
    description:
      "Methods: `SendMessage` (a message starts a task, or answers one waiting for input), `SendStreamingMessage` (the same, answered as an event stream), `GetTask`, `ListTasks`, `CancelTask`, `SubscribeToTask`; with A2A 0.3, `message/send`, `message/stream`, `tasks/get`, `tasks/cancel`, `tasks/resubscribe`. Push notifications are not offered.",
    body: JsonRpcMessage,
    responses: { 200: { description: "the JSON-RPC response (errors too), or an event stream for the streaming methods", schema: JsonRpcMessage, contentType: ["application/json", "text/event-stream"] } },
    protocolErrors: {
      name: "JsonRpcError",
      description: "a JSON-RPC error",
      schema: JsonRpcError,
      statuses: { 400: "-32700: the body is not JSON", 413: "-32600: the body is larger than the limit (100 KB)", 500: "-32603: the server failed; its log says why" },
    },
  });
  const rest = {
    ...a2a,
    protocolErrors: {
      name: "A2AError",
      description: "an A2A HTTP+JSON error",
      schema: A2AError,
      statuses: {
        400: "INVALID_ARGUMENT (a malformed request: a message troupe cannot take, a bad parameter) or FAILED_PRECONDITION (an operation the task's state refuses, an unsupported version)",
        404: "NOT_FOUND: no such task (or another key's), or no such A2A route",
        413: "INVALID_ARGUMENT: the body is larger than the limit (100 KB)",
        500: "INTERNAL: the server failed; its log says why",
      },
    },
  };
  const base = A2A_PATHS.rest;
  docs.add({ ...rest, method: "post", path: `${base}/v1/message:send`, operationId: "a2aSendMessage", summary: "A2A HTTP+JSON: sends a message (a new task, or the answer a waiting one asked for)", body: A2AObject, responses: { 200: { description: "the Task or Message", schema: A2AObject } } });
  docs.add({ ...rest, method: "post", path: `${base}/v1/message:stream`, operationId: "a2aSendStreamingMessage", summary: "A2A HTTP+JSON: sends a message and streams the task's updates", body: A2AObject, responses: { 200: { description: "an event stream of task, status and artifact updates", contentType: "text/event-stream" } } });
  docs.add({ ...rest, method: "get", path: `${base}/v1/tasks`, operationId: "a2aListTasks", summary: "A2A HTTP+JSON: the caller's tasks, last changed first, a page at a time", query: A2AListQuery, responses: { 200: { description: "a ListTasksResponse", schema: A2AObject } } });
  docs.add({ ...rest, method: "get", path: `${base}/v1/tasks/{id}`, operationId: "a2aGetTask", summary: "A2A HTTP+JSON: a task, with its status, artifacts and history", params: TaskId, responses: { 200: { description: "the Task", schema: A2AObject } } });
  docs.add({ ...rest, method: "post", path: `${base}/v1/tasks/{id}:cancel`, operationId: "a2aCancelTask", summary: "A2A HTTP+JSON: cancels a task", params: TaskId, responses: { 200: { description: "the Task, canceled", schema: A2AObject } } });
  docs.add({ ...rest, method: "get", path: `${base}/v1/tasks/{id}:subscribe`, operationId: "a2aSubscribeToTask", summary: "A2A HTTP+JSON: the updates of a task still running, as an event stream", params: TaskId, responses: { 200: { description: "an event stream of task updates", contentType: "text/event-stream" } } });
}
