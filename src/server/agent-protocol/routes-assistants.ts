import { z } from "zod";
import type { FastifyInstance } from "fastify";
import type { Troupe } from "../../runtime/engine.js";
import type { ApiDocs } from "../openapi.js";
import { parseRequestPart } from "../validation.js";
import { assistantSchemas, assistantView, drawnGraph, requireAssistant } from "./assistant.js";
import { documentRoute } from "./route-docs.js";
import { GRAPH_ID } from "./views.js";
import { AssistantCount, AssistantParams, AssistantSearch, AssistantVersions, AssistantView } from "./wire.js";

const GraphQuery = z.object({ xray: z.enum(["true", "false", "1", "0"]).optional() });
const SubgraphParams = AssistantParams.extend({ namespace: z.string().min(1).max(200) });
const Json = z.record(z.string(), z.unknown());

/** Whether troupe's assistant matches a search's filters. */
function matches(filters: { graph_id?: string | null; name?: string | null; metadata?: Record<string, unknown> | null }): boolean {
  const assistant = assistantView();
  if (filters.graph_id && filters.graph_id !== GRAPH_ID) return false;
  if (filters.name && !GRAPH_ID.includes(filters.name.toLowerCase())) return false;
  const metadata = assistant.metadata as Record<string, unknown>;
  return Object.entries(filters.metadata ?? {}).every(([key, value]) => JSON.stringify(metadata[key]) === JSON.stringify(value));
}

/** GET /info, and the assistants: troupe's one, its graph and its schemas. */
export function registerAssistantRoutes(scope: FastifyInstance, { troupe, docs }: { troupe: Troupe; docs: ApiDocs }): void {
  documentRoute(docs, {
    method: "get",
    path: "/info",
    operationId: "agentProtocolInfo",
    summary: "Agent Protocol: what this server offers (Agent Chat UI checks it answers)",
    ok: { status: 200, description: "the server's flags", schema: Json },
    errors: [],
  });
  scope.get("/info", async () => ({ flags: { assistants: true, crons: false, langsmith: false, langsmith_tracing_replicas: false }, server: "troupe" }));

  documentRoute(docs, {
    method: "post",
    path: "/assistants/search",
    operationId: "searchAssistants",
    summary: "Agent Protocol: the assistants, filtered (troupe serves one: troupe)",
    body: AssistantSearch,
    ok: { status: 200, description: "the matching assistants", schema: z.array(AssistantView) },
    errors: [],
  });
  scope.post("/assistants/search", async (request) => {
    const body = parseRequestPart(AssistantSearch, request.body ?? {});
    const offset = body.offset ?? 0;
    const found = matches(body) ? [assistantView()] : [];
    return found.slice(offset, offset + (body.limit ?? 10)).map((assistant) => (body.select?.length ? Object.fromEntries(Object.entries(assistant).filter(([key]) => body.select?.includes(key))) : assistant));
  });

  documentRoute(docs, { method: "post", path: "/assistants/count", operationId: "countAssistants", summary: "Agent Protocol: how many assistants match", body: AssistantCount, ok: { status: 200, description: "a count", schema: z.number() }, errors: [] });
  scope.post("/assistants/count", async (request) => (matches(parseRequestPart(AssistantCount, request.body ?? {})) ? 1 : 0));

  documentRoute(docs, {
    method: "get",
    path: "/assistants/{assistant_id}",
    operationId: "getAssistant",
    summary: "Agent Protocol: an assistant, by id or graph id (troupe)",
    params: AssistantParams,
    ok: { status: 200, description: "the assistant", schema: AssistantView },
    errors: [404],
  });
  scope.get("/assistants/:assistant_id", async (request) => requireAssistant(parseRequestPart(AssistantParams, request.params).assistant_id));

  documentRoute(docs, {
    method: "get",
    path: "/assistants/{assistant_id}/graph",
    operationId: "getAssistantGraph",
    summary: "Agent Protocol: troupe's LangGraph as LangGraph draws it (nodes, edges)",
    params: AssistantParams,
    query: GraphQuery,
    ok: { status: 200, description: "the drawable graph", schema: Json },
    errors: [404],
  });
  scope.get("/assistants/:assistant_id/graph", async (request) => {
    requireAssistant(parseRequestPart(AssistantParams, request.params).assistant_id);
    const { xray } = parseRequestPart(GraphQuery, request.query);
    return drawnGraph(troupe, xray === "true" || xray === "1");
  });

  documentRoute(docs, {
    method: "get",
    path: "/assistants/{assistant_id}/schemas",
    operationId: "getAssistantSchemas",
    summary: "Agent Protocol: what a run takes (input, context) and what a thread's values hold, as JSON Schema",
    params: AssistantParams,
    ok: { status: 200, description: "the schemas", schema: Json },
    errors: [404],
  });
  scope.get("/assistants/:assistant_id/schemas", async (request) => {
    requireAssistant(parseRequestPart(AssistantParams, request.params).assistant_id);
    return assistantSchemas();
  });

  documentRoute(docs, {
    method: "get",
    path: "/assistants/{assistant_id}/subgraphs",
    operationId: "getAssistantSubgraphs",
    summary: "Agent Protocol: the graph's subgraphs (troupe's graph has none)",
    params: AssistantParams,
    ok: { status: 200, description: "no subgraphs", schema: Json },
    errors: [404],
  });
  scope.get("/assistants/:assistant_id/subgraphs", async (request) => {
    requireAssistant(parseRequestPart(AssistantParams, request.params).assistant_id);
    return {};
  });
  documentRoute(docs, {
    method: "get",
    path: "/assistants/{assistant_id}/subgraphs/{namespace}",
    operationId: "getAssistantSubgraphsIn",
    summary: "Agent Protocol: a namespace's subgraphs (troupe's graph has none)",
    params: SubgraphParams,
    ok: { status: 200, description: "no subgraphs", schema: Json },
    errors: [404],
  });
  scope.get("/assistants/:assistant_id/subgraphs/:namespace", async (request) => {
    requireAssistant(parseRequestPart(SubgraphParams, request.params).assistant_id);
    return {};
  });

  documentRoute(docs, {
    method: "post",
    path: "/assistants/{assistant_id}/versions",
    operationId: "getAssistantVersions",
    summary: "Agent Protocol: an assistant's versions (troupe's has one)",
    params: AssistantParams,
    body: AssistantVersions,
    ok: { status: 200, description: "its versions", schema: z.array(AssistantView) },
    errors: [404],
  });
  scope.post("/assistants/:assistant_id/versions", async (request) => {
    const assistant = requireAssistant(parseRequestPart(AssistantParams, request.params).assistant_id);
    const body = parseRequestPart(AssistantVersions, request.body ?? {});
    return (body.offset ?? 0) > 0 ? [] : [assistant];
  });
}
