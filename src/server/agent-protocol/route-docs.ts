import type { z } from "zod";
import type { ApiDocs, RouteDoc } from "../openapi.js";
import { ProtocolError } from "./wire.js";

/** Where the Agent Protocol is mounted: a client's `apiUrl` ends with it (http://127.0.0.1:8003/langgraph). */
export const AGENT_PROTOCOL_PREFIX = "/langgraph";

const STATUS_MEANINGS: Record<number, string> = {
  400: "the request is not one the route takes (the code names the field)",
  401: "no API key, or one that is not valid (when the server requires keys)",
  404: "not found (another key's is not found either)",
  409: "it conflicts with the thread's or the run's state",
  413: "the body is larger than the server's limit",
  422: "troupe's Agent Protocol does not take this (the message names what)",
  429: "over the key's rate limit; retry after Retry-After seconds",
};

/** A route of the protocol, documented: its path under the prefix, its answer, and the 4xx answers it gives in the protocol's error shape. */
export function documentRoute(
  docs: ApiDocs,
  route: {
    method: RouteDoc["method"];
    path: string;
    operationId: string;
    summary: string;
    description?: string;
    params?: z.ZodType;
    query?: z.ZodType;
    body?: z.ZodType;
    headers?: RouteDoc["headers"];
    ok: { status: number; description: string; schema?: z.ZodType; contentType?: string };
    errors: number[];
  },
): void {
  const responses: RouteDoc["responses"] = { [route.ok.status]: { description: route.ok.description, ...(route.ok.schema ? { schema: route.ok.schema } : {}), ...(route.ok.contentType ? { contentType: route.ok.contentType } : {}) } };
  const statuses = Object.fromEntries([...new Set([400, 401, 429, ...route.errors])].sort().map((status) => [status, STATUS_MEANINGS[status] ?? "an error"]));
  docs.add({
    method: route.method,
    path: `${AGENT_PROTOCOL_PREFIX}${route.path}`,
    // Named apart from the REST API's operations (both have a deleteThread): generated clients see one document.
    operationId: `langgraph${route.operationId.charAt(0).toUpperCase()}${route.operationId.slice(1)}`,
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    tags: ["agent protocol"],
    ...(route.params ? { params: route.params } : {}),
    ...(route.query ? { query: route.query } : {}),
    ...(route.body ? { body: route.body } : {}),
    ...(route.headers ? { headers: route.headers } : {}),
    responses,
    protocolErrors: { name: "AgentProtocolError", description: "the protocol's ErrorResponse: a stable code, a message, metadata", schema: ProtocolError, statuses },
    security: [{ apiKeyHeader: [] }, { apiKey: [] }],
  });
}
