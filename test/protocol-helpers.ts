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
