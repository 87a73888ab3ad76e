import type { Item } from "@langchain/langgraph-checkpoint";
import { namespaceLabel } from "../../core/memory.js";
import type { TroupeMemoryStore } from "../../store/index.js";
import type { Principal } from "../config.js";
import { iso } from "./views.js";

/**
 * The protocol's store (`/store/items`, `/store/namespaces`) on troupe's long-term memory store —
 * the LangGraph `BaseStore` on troupe's database (SQLite, or Postgres), with its lexical (or
 * hybrid) search, filters and namespace listing — in a tree of the key's own:
 * `["agent-store", <key>, ...the client's namespace]`. A key reaches only its tree; its facts
 * (`["memories", …]`, which the planner reads as trusted) are not in it, so a client of the
 * protocol cannot plant one. A value is kept as `{ value, expiresAt? }`, so the item's own fields
 * never collide with the store's expiry, and `ttl` (minutes) sets that expiry.
 */

const ROOT = "agent-store";
/** Items one key's tree holds, across its namespaces. */
export const MAX_ITEMS_PER_KEY = 10_000;

export interface ItemView {
  namespace: string[];
  key: string;
  value: Record<string, unknown>;
  created_at: string;
  updated_at: string;
  score?: number | null;
}

export class AgentStore {
  readonly #memory: TroupeMemoryStore;

  constructor(memory: TroupeMemoryStore) {
    this.#memory = memory;
  }

  #root(principal: Principal): string[] {
    return [ROOT, namespaceLabel(principal.id)];
  }

  #item(principal: Principal, item: Item & { score?: number }): ItemView {
    const wrapped = item.value as { value?: unknown };
    return {
      namespace: item.namespace.slice(this.#root(principal).length),
      key: item.key,
      value: (wrapped.value ?? {}) as Record<string, unknown>,
      created_at: iso(item.createdAt.getTime()),
      updated_at: iso(item.updatedAt.getTime()),
      ...("score" in item ? { score: item.score ?? null } : {}),
    };
  }

  async put(principal: Principal, request: { namespace: string[]; key: string; value: Record<string, unknown>; index?: false | string[] | null; ttl?: number | null }): Promise<void> {
    const stored = { value: request.value, ...(request.ttl ? { expiresAt: Date.now() + Math.round(request.ttl * 60_000) } : {}) };
    // Index fields name the item's own value; the store's paths start at the wrapper.
    const index = request.index === false ? false : request.index ? request.index.map((field) => (field === "$" ? "value" : `value.${field}`)) : undefined;
    await this.#memory.putInTree({ root: this.#root(principal), maxItems: MAX_ITEMS_PER_KEY }, [...this.#root(principal), ...request.namespace], request.key, stored, index);
  }

  async get(principal: Principal, namespace: string[], key: string): Promise<ItemView | null> {
    const item = await this.#memory.get([...this.#root(principal), ...namespace], key);
    return item ? this.#item(principal, item) : null;
  }

  async remove(principal: Principal, namespace: string[], key: string): Promise<void> {
    await this.#memory.delete([...this.#root(principal), ...namespace], key);
  }

  /** Items under a namespace prefix: by relevance to `query` (the store's lexical or hybrid search), else the latest first; `filter` on the item's own fields. */
  async search(principal: Principal, request: { namespace_prefix?: string[] | null; filter?: Record<string, unknown> | null; limit?: number | null; offset?: number | null; query?: string | null }): Promise<ItemView[]> {
    const filter = request.filter ? Object.fromEntries(Object.entries(request.filter).map(([field, condition]) => [`value.${field}`, condition])) : undefined;
    const found = await this.#memory.search([...this.#root(principal), ...(request.namespace_prefix ?? [])], {
      ...(filter ? { filter } : {}),
      limit: request.limit ?? 10,
      offset: request.offset ?? 0,
      ...(request.query ? { query: request.query } : {}),
    });
    return found.map((item) => this.#item(principal, item));
  }

  /** The key's namespaces (as the client names them), matching a prefix and a suffix, cut at `max_depth`. */
  async namespaces(principal: Principal, request: { prefix?: string[] | null; suffix?: string[] | null; max_depth?: number | null; limit?: number | null; offset?: number | null }): Promise<string[][]> {
    const root = this.#root(principal);
    const found = await this.#memory.listNamespaces({
      prefix: [...root, ...(request.prefix ?? [])],
      ...(request.suffix ? { suffix: request.suffix } : {}),
      ...(request.max_depth ? { maxDepth: root.length + request.max_depth } : {}),
      limit: request.limit ?? 100,
      offset: request.offset ?? 0,
    });
    return found.map((namespace) => namespace.slice(root.length));
  }
}
