import { z } from "zod";
import type { FastifyInstance } from "fastify";
import type { ApiDocs } from "../openapi.js";
import { parseRequestPart } from "../validation.js";
import { documentRoute } from "./route-docs.js";
import type { AgentStore } from "./store-items.js";
import { ItemView, Namespace, StoreDelete, StoreGet, StoreNamespaces, StorePut, StoreSearch } from "./wire.js";

/** The protocol's store: a key's own items, on troupe's long-term memory store (store-items.ts). */
export function registerStoreRoutes(scope: FastifyInstance, { store, docs }: { store: AgentStore; docs: ApiDocs }): void {
  documentRoute(docs, {
    method: "put",
    path: "/store/items",
    operationId: "putStoreItem",
    summary: "Agent Protocol: keep an item (a JSON object) at a namespace and key, replacing what was there; ttl in minutes",
    body: StorePut,
    ok: { status: 204, description: "kept" },
    errors: [409, 413],
  });
  scope.put("/store/items", async (request, reply) => {
    await store.put(request.principal, parseRequestPart(StorePut, request.body));
    return reply.code(204).send();
  });

  documentRoute(docs, {
    method: "get",
    path: "/store/items",
    operationId: "getStoreItem",
    summary: "Agent Protocol: the item at a namespace (labels joined by '.') and key; null when there is none",
    query: StoreGet,
    ok: { status: 200, description: "the item, or null", schema: ItemView.nullable() },
    errors: [],
  });
  scope.get("/store/items", async (request) => {
    const query = parseRequestPart(StoreGet, request.query);
    const namespace = parseRequestPart(z.object({ namespace: Namespace }), { namespace: query.namespace.split(".") }).namespace;
    return store.get(request.principal, namespace, query.key);
  });

  documentRoute(docs, { method: "delete", path: "/store/items", operationId: "deleteStoreItem", summary: "Agent Protocol: delete the item at a namespace and key", body: StoreDelete, ok: { status: 204, description: "deleted (or there was none)" }, errors: [] });
  scope.delete("/store/items", async (request, reply) => {
    const body = parseRequestPart(StoreDelete, request.body);
    await store.remove(request.principal, body.namespace, body.key);
    return reply.code(204).send();
  });

  documentRoute(docs, {
    method: "post",
    path: "/store/items/search",
    operationId: "searchStoreItems",
    summary: "Agent Protocol: items under a namespace prefix — the most relevant to a query (the store's lexical or hybrid search), else the latest — filtered on their fields",
    body: StoreSearch,
    ok: { status: 200, description: "the items", schema: z.object({ items: z.array(ItemView) }) },
    errors: [],
  });
  scope.post("/store/items/search", async (request) => ({ items: await store.search(request.principal, parseRequestPart(StoreSearch, request.body ?? {})) }));

  documentRoute(docs, {
    method: "post",
    path: "/store/namespaces",
    operationId: "listStoreNamespaces",
    summary: "Agent Protocol: the caller's namespaces, by prefix and suffix, cut at a depth",
    body: StoreNamespaces,
    ok: { status: 200, description: "the namespaces", schema: z.object({ namespaces: z.array(z.array(z.string())) }) },
    errors: [],
  });
  scope.post("/store/namespaces", async (request) => ({ namespaces: await store.namespaces(request.principal, parseRequestPart(StoreNamespaces, request.body ?? {})) }));
}
