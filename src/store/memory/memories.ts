import { createHash, randomBytes } from "node:crypto";
import type { Item } from "@langchain/langgraph-checkpoint";
import { InputError } from "../../core/errors.js";
import { factLabel, type Memory, MEMORY_LIMITS, type MemoryHit, MemoryId, MemoryInput, type MemoryItem, type MemorySearchResult, MemoryValue } from "../../core/memory.js";
import { UNREADABLE_LABEL, TRUSTED } from "../../core/provenance.js";
import type { MemoryStoreOptions, TroupeMemoryStore } from "./contract.js";

export interface MemoriesOptions {
  /** Bytes of a fact's text (default MEMORY_LIMITS.itemMaxBytes). */
  maxItemBytes?: number;
  now?: () => number;
}

/** A fact's key: from its subject, so saving the same subject again updates it; otherwise random. */
export function memoryKey(subject: string | undefined): string {
  if (subject === undefined) return `m-${randomBytes(6).toString("hex")}`;
  const normal = subject.toLowerCase().replace(/^(?:the|a|an|my|our)\s+/, "").replace(/\s+/g, " ").trim();
  return `m-${createHash("sha256").update(normal).digest("hex").slice(0, 12)}`;
}

function itemView(item: Item): MemoryItem {
  const value = MemoryValue.safeParse(item.value);
  const fact = value.success ? value.data : { text: JSON.stringify(item.value), subject: null, sourceRun: null, expiresAt: null, label: UNREADABLE_LABEL };
  return {
    id: item.key,
    text: fact.text,
    subject: fact.subject,
    sourceRun: fact.sourceRun,
    createdAt: item.createdAt.getTime(),
    updatedAt: item.updatedAt.getTime(),
    expiresAt: fact.expiresAt,
    label: factLabel(fact),
  };
}

/** An id as users type it; anything else is a clear input error rather than "not found". */
function checkedId(id: string): string {
  const parsed = MemoryId.safeParse(id);
  if (!parsed.success) throw new InputError("invalid_memory_id", `"${id.length > 40 ? `${id.slice(0, 40)}…` : id}" is not a memory id: ${parsed.error.issues[0]?.message ?? "invalid"}`, { id: id.slice(0, 100) });
  return parsed.data;
}

/**
 * troupe's facts over a LangGraph store: validation and size caps, ids (from the subject, so a
 * fact about the same thing is updated rather than repeated), expiry, and search with the
 * retrieval it used. It holds no SQL: any `TroupeMemoryStore` (SQLite now, Postgres later)
 * serves it.
 */
export class Memories implements Memory {
  readonly store: TroupeMemoryStore;
  readonly maxItemBytes: number;
  readonly #now: () => number;

  constructor(store: TroupeMemoryStore, options: MemoriesOptions = {}) {
    this.store = store;
    this.maxItemBytes = options.maxItemBytes ?? MEMORY_LIMITS.itemMaxBytes;
    this.#now = options.now ?? Date.now;
  }

  async save(namespace: readonly string[], input: MemoryInput): Promise<{ item: MemoryItem; created: boolean }> {
    const parsed = MemoryInput.safeParse(input);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new InputError("invalid_memory", `${issue?.path.length ? `${issue.path.join(".")}: ` : ""}${issue?.message ?? "invalid"}`, { field: issue?.path.join(".") });
    }
    const fact = parsed.data;
    const bytes = Buffer.byteLength(fact.text, "utf8");
    if (bytes > this.maxItemBytes) {
      throw new InputError("memory_item_too_large", `the fact is ${bytes} bytes; a fact is at most ${this.maxItemBytes} bytes`, { bytes, limit: this.maxItemBytes });
    }
    const key = memoryKey(fact.subject);
    const existing = await this.store.get([...namespace], key);
    const value: MemoryValue = {
      text: fact.text,
      subject: fact.subject ?? null,
      sourceRun: fact.sourceRun ?? null,
      expiresAt: fact.ttlSeconds !== undefined ? this.#now() + fact.ttlSeconds * 1_000 : null,
      label: fact.label ?? TRUSTED,
    };
    await this.store.put([...namespace], key, value);
    const item = await this.store.get([...namespace], key);
    if (!item) throw new InputError("memory_expired", "the fact expired as soon as it was saved");
    return { item: itemView(item), created: existing === null };
  }

  async get(namespace: readonly string[], id: string): Promise<MemoryItem | null> {
    const item = await this.store.get([...namespace], checkedId(id));
    return item ? itemView(item) : null;
  }

  async search(namespace: readonly string[], query: string, options: { limit?: number } = {}): Promise<MemorySearchResult> {
    const text = query.trim();
    if (text === "") throw new InputError("empty_query", "the search query is empty");
    if (text.length > MEMORY_LIMITS.queryMaxChars) throw new InputError("query_too_long", `the search query is longer than ${MEMORY_LIMITS.queryMaxChars} characters`);
    const limit = Math.max(1, Math.min(MEMORY_LIMITS.searchMaxResults, options.limit ?? 5));
    const ranked = await this.store.searchRanked([...namespace], { query: text, limit });
    // Only this namespace, not the ones below it.
    const items: MemoryHit[] = ranked.items
      .filter((item) => item.namespace.length === namespace.length)
      .map((item) => ({ ...itemView(item), score: Math.round((item.score ?? 0) * 10_000) / 10_000 }));
    return { items, retrieval: ranked.retrieval, ...(ranked.note ? { note: ranked.note } : {}) };
  }

  async list(namespace: readonly string[], options: { limit?: number; offset?: number } = {}): Promise<{ items: MemoryItem[]; total: number }> {
    const limit = Math.max(1, Math.min(1_000, options.limit ?? 50));
    const offset = Math.max(0, options.offset ?? 0);
    const [items, total] = await Promise.all([this.store.search([...namespace], { limit, offset }), this.store.count([...namespace])]);
    return { items: items.filter((item) => item.namespace.length === namespace.length).map(itemView), total };
  }

  async forget(namespace: readonly string[], id: string): Promise<boolean> {
    const key = checkedId(id);
    const existing = await this.store.get([...namespace], key);
    if (!existing) return false;
    await this.store.delete([...namespace], key);
    return true;
  }
}

/** How the long-term store is set up: its limits, and an embeddings model for semantic search. */
export interface MemorySetup {
  memory?: MemoryStoreOptions & { maxItemBytes?: number };
}

/** The memory store's options: the value holds the fact's text and a little more (subject, source run, expiry). */
export function memoryOptionsOf(options: MemorySetup): MemoryStoreOptions {
  const { maxItemBytes, ...memoryOptions } = options.memory ?? {};
  // Room for the text twice (escaped), and its subject and provenance label (at most 8 sources of 200 characters).
  return { ...memoryOptions, limits: { ...memoryOptions.limits, maxValueBytes: memoryOptions.limits?.maxValueBytes ?? (maxItemBytes ?? MEMORY_LIMITS.itemMaxBytes) * 2 + 4_096 } };
}

/** A memory store with troupe's facts over it. */
export function memoryOf<S extends TroupeMemoryStore>(memoryStore: S, options: MemorySetup): { memoryStore: S; memories: Memories } {
  const maxItemBytes = options.memory?.maxItemBytes;
  return { memoryStore, memories: new Memories(memoryStore, maxItemBytes !== undefined ? { maxItemBytes } : {}) };
}
