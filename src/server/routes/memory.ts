import type { FastifyInstance, FastifyRequest } from "fastify";
import { NotFoundError } from "../../core/errors.js";
import type { MemoryHit, MemoryItem } from "../../core/memory.js";
import { memoryNamespaceFor } from "../../runtime/memory-owner.js";
import { envelopeOf, ok } from "../envelope.js";
import type { RouteContext } from "../route-context.js";
import { MemoryBody, MemoryForgotten, MemoryList, MemoryParams, MemoryQuery, MemorySaved, MemoryView } from "../schemas.js";
import { parseRequestPart } from "../validation.js";

const iso = (ms: number): string => new Date(ms).toISOString();

function memoryView(item: MemoryItem | MemoryHit): MemoryView {
  return {
    id: item.id,
    text: item.text,
    subject: item.subject,
    source_run: item.sourceRun,
    created_at: iso(item.createdAt),
    updated_at: iso(item.updatedAt),
    expires_at: item.expiresAt === null ? null : iso(item.expiresAt),
    ...("score" in item ? { score: item.score } : {}),
    label: item.label,
  };
}

/** The caller's namespace: its API key's, never another's (the open local API has its own, "local"). */
function namespaceOf(request: FastifyRequest): string[] {
  return memoryNamespaceFor(request.principal.id);
}

/**
 * GET /memory (list or search), GET /memory/:id, POST /memory, DELETE /memory/:id: the caller's
 * long-term memory, the facts its tasks saved (and those it saved here). A fact of another key
 * is as good as missing (404), like another key's task.
 */
export function registerMemoryRoutes(api: FastifyInstance, { troupe, docs }: RouteContext): void {
  const memories = troupe.store.memories;

  docs.add({
    method: "get",
    path: "/api/v1/memory", operationId: "listMemories", errors: ["empty_query", "query_too_long"],
    summary: "The caller's remembered facts: the most recently updated first, or with ?query= the most relevant (lexical, or hybrid with an embeddings model)",
    tags: ["memory"],
    query: MemoryQuery,
    responses: { 200: { description: "a page of facts, or the search's results", schema: envelopeOf(MemoryList) } },
  });
  api.get("/memory", async (request) => {
    const query = parseRequestPart(MemoryQuery, request.query);
    const namespace = namespaceOf(request);
    if (query.query !== undefined) {
      const found = await memories.search(namespace, query.query, { limit: Math.min(query.limit, 50) });
      return ok({
        items: found.items.map(memoryView),
        total: found.items.length,
        limit: query.limit,
        offset: 0,
        next_offset: null,
        query: query.query,
        retrieval: found.retrieval,
        ...(found.note ? { note: found.note } : {}),
      });
    }
    const { items, total } = await memories.list(namespace, { limit: query.limit, offset: query.offset });
    const next = query.offset + items.length;
    return ok({ items: items.map(memoryView), total, limit: query.limit, offset: query.offset, next_offset: next < total ? next : null, query: null, retrieval: null });
  });

  docs.add({
    method: "get",
    path: "/api/v1/memory/{id}", operationId: "getMemory", errors: ["memory_not_found", "invalid_memory_id"],
    summary: "One of the caller's facts",
    tags: ["memory"],
    params: MemoryParams,
    responses: { 200: { description: "the fact", schema: envelopeOf(MemoryView) } },
  });
  api.get("/memory/:id", async (request) => {
    const { id } = parseRequestPart(MemoryParams, request.params);
    const item = await memories.get(namespaceOf(request), id);
    if (!item) throw new NotFoundError("memory_not_found", `no remembered fact with id ${id}`, { id });
    return ok(memoryView(item));
  });

  docs.add({
    method: "post",
    path: "/api/v1/memory", operationId: "saveMemory", errors: ["invalid_memory", "memory_item_too_large", "memory_expired", "memory_full"],
    summary: "Remember a fact (a fact with the same subject is updated)",
    description: "413 beyond the body limit; 400 memory_item_too_large beyond the fact size limit; 409 memory_full when the caller's memory holds as many facts as it may.",
    tags: ["memory"],
    body: MemoryBody,
    responses: { 201: { description: "remembered", schema: envelopeOf(MemorySaved) } },
  });
  api.post("/memory", async (request, reply) => {
    const body = parseRequestPart(MemoryBody, request.body);
    const { item, created } = await memories.save(namespaceOf(request), {
      text: body.text,
      ...(body.subject !== undefined ? { subject: body.subject } : {}),
      ...(body.ttl_seconds !== undefined ? { ttlSeconds: body.ttl_seconds } : {}),
      sourceRun: null,
    });
    reply.code(created ? 201 : 200).header("location", `/api/v1/memory/${item.id}`);
    return ok({ memory: memoryView(item), created }, created ? "remembered" : "updated");
  });

  docs.add({
    method: "delete",
    path: "/api/v1/memory/{id}", operationId: "forgetMemory", errors: ["memory_not_found", "invalid_memory_id"],
    summary: "Forget one of the caller's facts",
    tags: ["memory"],
    params: MemoryParams,
    responses: { 200: { description: "forgotten", schema: envelopeOf(MemoryForgotten) } },
  });
  api.delete("/memory/:id", async (request) => {
    const { id } = parseRequestPart(MemoryParams, request.params);
    if (!(await memories.forget(namespaceOf(request), id))) throw new NotFoundError("memory_not_found", `no remembered fact with id ${id}`, { id });
    return ok({ id, forgotten: true as const }, "forgotten");
  });
}
