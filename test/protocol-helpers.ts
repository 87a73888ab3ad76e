import { randomUUID } from "node:crypto";
import { type Message, Role, type SendMessageRequest, type Task } from "@a2a-js/sdk";
import { type Client as A2AClient, ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, RestTransportFactory } from "@a2a-js/sdk/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, type ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import type { TestApp } from "./server-helpers.js";

/** Listens on a free loopback port (closed with the app) and returns the base URL. */
export async function listen(app: TestApp): Promise<string> {
  await app.app.listen({ port: 0, host: "127.0.0.1" });
  const address = app.app.server.address() as { port: number };
  return `http://127.0.0.1:${address.port}`;
}

export interface McpClientOptions {
  key?: string;
  /** Answers the server's elicitation requests (the client then declares the capability). */
  elicit?: (request: { message: string; requestedSchema: unknown }) => ElicitResult | Promise<ElicitResult>;
}

/** The MCP SDK's own client over Streamable HTTP, connected to the app's /mcp. */
export async function mcpClient(base: string, options: McpClientOptions = {}): Promise<Client> {
  const client = new Client({ name: "troupe-test", version: "1.0.0" }, options.elicit ? { capabilities: { elicitation: { form: {} } } } : {});
  if (options.elicit) {
    const answer = options.elicit;
    client.setRequestHandler(ElicitRequestSchema, async (request) => answer({ message: request.params.message, requestedSchema: (request.params as { requestedSchema?: unknown }).requestedSchema }));
  }
  const headers: Record<string, string> = options.key ? { authorization: `Bearer ${options.key}` } : {};
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers } }));
  return client;
}

/** A tool result's structured content. */
export function structured<T = Record<string, unknown>>(result: unknown): T {
  return (result as { structuredContent: T }).structuredContent;
}

/** A user's A2A message (the SDK's v1.0 type): text, and optionally data, a task and a context. */
export function a2aMessage(text: string, fields: { taskId?: string; contextId?: string; data?: unknown; messageId?: string } = {}): Message {
  return {
    messageId: fields.messageId ?? randomUUID(),
    contextId: fields.contextId ?? "",
    taskId: fields.taskId ?? "",
    role: Role.ROLE_USER,
    parts: [
      { content: { $case: "text", value: text }, mediaType: "text/plain", filename: "", metadata: undefined },
      ...(fields.data !== undefined ? [{ content: { $case: "data" as const, value: fields.data }, mediaType: "application/json", filename: "", metadata: undefined }] : []),
    ],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

/** The send request for a message; `returnImmediately` answers with the task as soon as it exists. */
export function sendRequest(message: Message, returnImmediately = false): SendMessageRequest {
  return { tenant: "", message, configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately }, metadata: undefined };
}

/** The official A2A client for an agent's card (JSON-RPC unless another transport is preferred), with a key when given. */
export async function a2aClient(base: string, options: { key?: string; prefer?: "JSONRPC" | "HTTP+JSON" } = {}): Promise<A2AClient> {
  const headers = options.key ? { authorization: `Bearer ${options.key}` } : {};
  const fetchImpl = ((input: string | URL | Request, init: RequestInit = {}) => fetch(input, { ...init, headers: { ...Object.fromEntries(new Headers(init.headers).entries()), ...headers } })) as typeof fetch;
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
      ...(options.prefer ? { preferredTransports: [options.prefer] } : {}),
    }),
  );
  return factory.createFromUrl(base);
}

/** The text of a task's status message. */
export function statusText(task: Task): string {
  return (task.status?.message?.parts ?? []).flatMap((part) => (part.content?.$case === "text" ? [part.content.value] : [])).join("\n");
}
