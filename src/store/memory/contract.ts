import { BaseStore, type Item, type ListNamespacesOperation, type MatchCondition, type Operation, type OperationResults, type PutOperation, type SearchItem, type SearchOperation, getTextAtPath, tokenizePath, validateNamespace } from "@langchain/langgraph-checkpoint";
import type { Embedder } from "../../core/embedder.js";
import { ConflictError, InputError, SystemError, TroupeError } from "../../core/errors.js";
import { MEMORY_LIMITS, type Retrieval } from "../../core/memory.js";

/** Semantic search: an embeddings model (a LangChain `Embeddings`) and its name, kept with each vector. */
export interface MemoryIndexConfig {
  embeddings: Embedder;
  /** `provider:model`: vectors of another model are not compared with this one's. */
  model: string;
  /** Value fields embedded and indexed (default `["text"]`). */
  fields?: string[];
}

export interface MemoryStoreLimits {
  maxItemsPerNamespace: number;
  /** Bytes of an item's value as JSON. */
  maxValueBytes: number;
}

export interface MemoryStoreOptions {
  limits?: Partial<MemoryStoreLimits>;
  index?: MemoryIndexConfig;
  now?: () => number;
}

/** A ranked search with how it was ranked: what troupe's memory layer needs beyond `BaseStore.search`. */
export interface RankedSearch {
  items: SearchItem[];
  retrieval: Retrieval;
  note?: string;
}

/** A row as a backend reads it: the value as JSON text, times in ms since the epoch. */
export interface StoredItem {
  id: number;
  prefix: string;
  key: string;
  value: string;
  createdAt: number;
  updatedAt: number;
}

/** A write checked and ready for a backend: a delete (value null), or an upsert with its index text and vector. */
export interface PreparedWrite {
  prefix: string;
  key: string;
  value: string | null;
  text: string;
  expiresAt: number | null;
  embedding: Float32Array | undefined;
  model: string | null;
  /** A cap on the items of a whole namespace tree (its root, joined), checked with the namespace's own. */
  tree?: TreeCap;
}

/** The most items the namespaces under a root (joined) hold together. */
export interface TreeCap {
  prefix: string;
  maxItems: number;
}

/** One condition of a search filter on a value field, checked: a dotted path of plain names, an operator, a scalar. */
export interface FilterCondition {
  path: string[];
  operator: "$eq" | "$ne" | "$gt" | "$gte" | "$lt" | "$lte";
  operand: string | number | boolean | null;
}

/** Which items a read covers: a namespace prefix (joined; undefined for every namespace), a filter, and the time expiry is judged at. */
export interface ItemScope {
  prefix: string | undefined;
  filter: FilterCondition[];
  now: number;
}

const OPERATORS = new Set(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]);

/** Items whose value has `expiresAt` (ms since the epoch) in the past are gone: never returned, purged on the next write. */
function expiresAtOf(value: Record<string, unknown>): number | null {
  return typeof value.expiresAt === "number" && Number.isFinite(value.expiresAt) ? value.expiresAt : null;
}

/** Namespace labels joined by "." (which a label cannot contain), as the `prefix` column holds them. */
function joinNamespace(namespace: readonly string[]): string {
  return namespace.join(".");
}

const STOPWORDS = new Set(
  "a an and are as at be by do does did for from has have i in is it its me my of on or our so that the their them then there these this those to was we were what when where which who whom why will with you your about tell remember recall know".split(" "),
);

/** The words of a free-text query a lexical search looks for: letters, digits and "_" only (no operator can be injected), stopwords left out, at most 32. */
export function queryWords(query: string): string[] {
  const words = (query.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? []).filter((word) => word.length > 1 || /\d/.test(word));
  const unique = [...new Set(words.filter((word) => !STOPWORDS.has(word)))].slice(0, 32);
  return unique.length > 0 ? unique : [...new Set(words)].slice(0, 32);
}

/** Words of a free-text query as an FTS5 expression: each word quoted, any of them. */
export function ftsQuery(query: string): string | undefined {
  const words = queryWords(query);
  return words.length === 0 ? undefined : words.map((word) => `"${word}"`).join(" OR ");
}

/** Reciprocal rank fusion: each ranking contributes 1 / (k + rank); k = 60, as in the RRF paper. */
const RRF_K = 60;

/** How many candidates each ranking gives the fusion. */
const FUSION_CANDIDATES = 50;

/** The error of a namespace that holds as many items as it may. */
export function memoryFull(count: number, limit: number): ConflictError {
  return new ConflictError("memory_full", `this memory holds ${count} items, the most it may (${limit}); forget some first`, { count, limit });
}

/** The error of a namespace tree (one owner's items) that holds as many items as it may. */
export function treeFull(count: number, limit: number): ConflictError {
  return new ConflictError("store_full", `your store holds ${count} items across its namespaces, the most it may (${limit}); delete some first`, { count, limit });
}

/**
 * A LangGraph `BaseStore` for troupe's long-term memory, with what troupe's memory layer needs
 * beyond it: a count per namespace (for the cap) and a search that says how it ranked. Everything
 * but the SQL is here — validation, size caps, expiry, index text, vectors, hybrid fusion,
 * namespace listing — so SQLite and Postgres behave the same (the store contract suite checks it);
 * a backend implements the few reads and the transactional write below.
 */
export abstract class TroupeMemoryStore extends BaseStore {
  readonly limits: MemoryStoreLimits;
  readonly index: MemoryIndexConfig | undefined;
  protected readonly now: () => number;

  constructor(options: MemoryStoreOptions = {}) {
    super();
    this.now = options.now ?? Date.now;
    this.index = options.index;
    this.limits = {
      maxItemsPerNamespace: options.limits?.maxItemsPerNamespace ?? MEMORY_LIMITS.maxItemsPerNamespace,
      maxValueBytes: options.limits?.maxValueBytes ?? MEMORY_LIMITS.itemMaxBytes * 2,
    };
  }

  /** The item at a key that has not expired. */
  protected abstract readItem(prefix: string, key: string, now: number): Promise<StoredItem | undefined>;
  /**
   * Applies the writes in one transaction, all or none. Before an upsert of a new key it purges
   * the namespace's expired items and refuses (`memoryFull`) when the namespace is full; the check
   * and the write are atomic against concurrent writers.
   */
  protected abstract write(writes: PreparedWrite[], now: number): Promise<void>;
  /** Items in exactly this namespace that have not expired. */
  protected abstract countItems(prefix: string, now: number): Promise<number>;
  /** The most recently updated items of the scope first. */
  protected abstract recent(scope: ItemScope, limit: number, offset: number): Promise<StoredItem[]>;
  /** Items matching any of the words, best first, with a score (higher is better). */
  protected abstract lexical(scope: ItemScope, words: string[], limit: number, offset: number): Promise<Array<StoredItem & { score: number }>>;
  /** Every item of the scope with a vector of this model. */
  protected abstract vectors(scope: ItemScope, model: string): Promise<Array<StoredItem & { embedding: Float32Array }>>;
  /** Every namespace (joined) holding an item that has not expired, sorted; only those at or under `under` (joined) when given. */
  protected abstract prefixes(now: number, under?: string): Promise<string[]>;

  /** Runs the operations in order; a batch of writes only is one transaction. */
  override async batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    const results: unknown[] = [];
    // Vectors are made before the writes, outside any transaction (they are a network call).
    const puts = operations.filter((operation): operation is PutOperation => "value" in operation);
    const vectors = await this.#embedPuts(puts);
    if (puts.length > 1 && puts.length === operations.length) {
      // Only writes: one transaction (one commit) for all of them, all or none.
      await this.write(
        puts.map((operation) => this.#prepare(operation, vectors.get(operation))),
        this.now(),
      );
      return operations.map(() => undefined) as OperationResults<Op>;
    }
    for (const operation of operations) {
      if ("namespacePrefix" in operation) results.push((await this.#search(operation)).items);
      else if ("value" in operation) results.push(await this.write([this.#prepare(operation, vectors.get(operation))], this.now()));
      else if ("key" in operation) {
        validateNamespace(operation.namespace, { allowEmpty: true, allowReservedRoot: true });
        const row = await this.readItem(joinNamespace(operation.namespace), operation.key, this.now());
        results.push(row ? itemOf(row) : null);
      } else if ("matchConditions" in operation || "limit" in operation) results.push(await this.#listNamespaces(operation as ListNamespacesOperation));
      else throw new InputError("invalid_operation", "unknown store operation");
    }
    return results as OperationResults<Op>;
  }

  /**
   * Puts an item in a namespace under `tree.root`, refused (`store_full`) when it is a new key and
   * the namespaces under the root hold `tree.maxItems` items together — checked in the writing
   * transaction, as the namespace's own cap is, so concurrent writers cannot pass it.
   */
  async putInTree(tree: { root: string[]; maxItems: number }, namespace: string[], key: string, value: Record<string, unknown>, index?: false | string[]): Promise<void> {
    if (tree.root.length === 0 || namespace.length < tree.root.length || tree.root.some((label, position) => namespace[position] !== label)) {
      throw new InputError("invalid_namespace", "the namespace is not under the tree's root");
    }
    const operation: PutOperation = { namespace, key, value, ...(index !== undefined ? { index } : {}) };
    const vectors = await this.#embedPuts([operation]);
    await this.write([{ ...this.#prepare(operation, vectors.get(operation)), tree: { prefix: joinNamespace(tree.root), maxItems: tree.maxItems } }], this.now());
  }

  async count(namespace: string[]): Promise<number> {
    validateNamespace(namespace);
    return this.countItems(joinNamespace(namespace), this.now());
  }

  /** `search`, with the retrieval used: lexical, or hybrid (lexical and semantic fused) with an embeddings model. */
  async searchRanked(namespacePrefix: string[], options: { query?: string; filter?: Record<string, unknown>; limit?: number; offset?: number }): Promise<RankedSearch> {
    validateNamespace(namespacePrefix, { allowEmpty: true });
    return this.#search({ namespacePrefix, ...options });
  }

  /** The text a put is indexed by (lexically and for its vector): the index fields' strings, joined. */
  #indexText(operation: PutOperation): string {
    if (operation.value === null || operation.index === false) return "";
    const fields = operation.index ?? this.index?.fields ?? ["text"];
    const texts = fields.flatMap((field) => (field === "$" ? [JSON.stringify(operation.value)] : getTextAtPath(operation.value, tokenizePath(field).join("."))));
    // Without the fields named, every string of the value is indexed.
    return (texts.length > 0 ? texts : stringsOf(operation.value)).join("\n");
  }

  async #embedPuts(puts: PutOperation[]): Promise<Map<PutOperation, Float32Array>> {
    const vectors = new Map<PutOperation, Float32Array>();
    const index = this.index;
    if (!index) return vectors;
    const texts = puts.map((operation) => [operation, this.#indexText(operation)] as const).filter(([operation, text]) => operation.value !== null && text !== "");
    if (texts.length === 0) return vectors;
    try {
      const embedded = await index.embeddings.embedDocuments(texts.map(([, text]) => text));
      texts.forEach(([operation], position) => {
        const vector = embedded[position];
        if (vector && vector.length > 0) vectors.set(operation, Float32Array.from(vector));
      });
    } catch {
      // The item is still saved and found by its words; only its vector is missing (search says so).
    }
    return vectors;
  }

  #prepare(operation: PutOperation, vector: Float32Array | undefined): PreparedWrite {
    validateNamespace(operation.namespace);
    if (typeof operation.key !== "string" || operation.key.length === 0 || operation.key.length > 200) {
      throw new InputError("invalid_key", "an item's key is 1-200 characters");
    }
    const prefix = joinNamespace(operation.namespace);
    if (operation.value === null) return { prefix, key: operation.key, value: null, text: "", expiresAt: null, embedding: undefined, model: null };
    const value = JSON.stringify(operation.value);
    const bytes = Buffer.byteLength(value, "utf8");
    if (bytes > this.limits.maxValueBytes) {
      throw new InputError("memory_item_too_large", `the item is ${bytes} bytes; an item is at most ${this.limits.maxValueBytes} bytes`, { bytes, limit: this.limits.maxValueBytes });
    }
    return {
      prefix,
      key: operation.key,
      value,
      // No database keeps a NUL in text; it separates words as well as a space.
      text: this.#indexText(operation).replaceAll("\u0000", " "),
      expiresAt: expiresAtOf(operation.value),
      embedding: vector,
      model: vector ? (this.index?.model ?? null) : null,
    };
  }

  async #search(operation: SearchOperation): Promise<RankedSearch> {
    validateNamespace(operation.namespacePrefix, { allowEmpty: true, allowReservedRoot: true });
    const limit = Math.max(0, Math.min(1_000, operation.limit ?? 10));
    const offset = Math.max(0, operation.offset ?? 0);
    const scope: ItemScope = {
      prefix: operation.namespacePrefix.length > 0 ? joinNamespace(operation.namespacePrefix) : undefined,
      filter: filterOf(operation.filter),
      now: this.now(),
    };
    if (operation.query === undefined || operation.query.trim() === "") {
      // No query: the most recently updated first.
      const rows = await this.recent(scope, limit, offset);
      return { items: rows.map((row) => ({ ...itemOf(row), score: undefined })), retrieval: "lexical" };
    }
    const words = queryWords(operation.query);
    const lexical = async (count: number, skip: number): Promise<Array<StoredItem & { score: number }>> => (words.length === 0 ? [] : this.lexical(scope, words, count, skip));
    const index = this.index;
    let queryVector: Float32Array | undefined;
    let note: string | undefined;
    if (index) {
      try {
        queryVector = Float32Array.from(await index.embeddings.embedQuery(operation.query));
      } catch (error) {
        note = `the embeddings model ${index.model} failed (${(error as Error).message}); the search was lexical`;
      }
    }
    if (!queryVector || !index) {
      const rows = await lexical(limit, offset);
      return { items: rows.map((row) => ({ ...itemOf(row), score: row.score })), retrieval: "lexical", ...(note ? { note } : {}) };
    }
    // Hybrid: the best lexical and the best semantic candidates, fused by reciprocal rank.
    const wanted = Math.max(FUSION_CANDIDATES, offset + limit);
    const [byWords, candidates] = await Promise.all([lexical(wanted, 0), this.vectors(scope, index.model)]);
    const query = queryVector;
    const byMeaning = candidates
      .map((row) => ({ row, similarity: cosine(query, row.embedding) }))
      .sort((left, right) => right.similarity - left.similarity)
      .slice(0, wanted);
    const fused = new Map<string, { row: StoredItem; score: number }>();
    const add = (row: StoredItem, rank: number): void => {
      const id = `${row.prefix}\u0000${row.key}`;
      const entry = fused.get(id) ?? { row, score: 0 };
      entry.score += 1 / (RRF_K + rank + 1);
      fused.set(id, entry);
    };
    byWords.forEach((row, rank) => add(row, rank));
    byMeaning.forEach(({ row }, rank) => add(row, rank));
    const ranked = [...fused.values()].sort((left, right) => right.score - left.score || right.row.updatedAt - left.row.updatedAt).slice(offset, offset + limit);
    return { items: ranked.map(({ row, score }) => ({ ...itemOf(row), score })), retrieval: "hybrid" };
  }

  async #listNamespaces(operation: ListNamespacesOperation): Promise<string[][]> {
    const conditions: MatchCondition[] = operation.matchConditions ?? [];
    // A prefix without wildcards narrows the read to the namespaces under it: one owner's listing reads only its own.
    const fixed = conditions.find((condition) => condition.matchType === "prefix" && condition.path.length > 0 && !condition.path.includes("*"));
    let namespaces = (await this.prefixes(this.now(), fixed ? joinNamespace(fixed.path) : undefined)).map((prefix) => prefix.split("."));
    namespaces = namespaces.filter((namespace) => conditions.every((condition) => matches(condition, namespace)));
    if (operation.maxDepth !== undefined) {
      const depth = operation.maxDepth;
      namespaces = [...new Set(namespaces.map((namespace) => namespace.slice(0, depth).join(".")))].map((joined) => joined.split("."));
    }
    const offset = operation.offset ?? 0;
    return namespaces.slice(offset, offset + (operation.limit ?? namespaces.length));
  }
}

/** A search filter as conditions: `{ field: value }` is equality, `{ field: { $gt: 3 } }` a comparison; anything else is refused. */
function filterOf(filter: Record<string, unknown> | undefined): FilterCondition[] {
  return Object.entries(filter ?? {}).flatMap(([field, condition]) => {
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,63}(?:\.[A-Za-z_][A-Za-z0-9_]{0,63}){0,3}$/.test(field)) throw new InputError("invalid_filter", `cannot filter on the field "${field}"`);
    const operators = typeof condition === "object" && condition !== null && !Array.isArray(condition) ? (condition as Record<string, unknown>) : { $eq: condition };
    return Object.entries(operators).map(([operator, operand]): FilterCondition => {
      if (!OPERATORS.has(operator)) throw new InputError("invalid_filter", `unknown filter operator ${operator}`);
      if (operand !== null && typeof operand === "object") throw new InputError("invalid_filter", `a filter compares with a scalar value (${field})`);
      if (operand === undefined || typeof operand === "function" || typeof operand === "symbol" || typeof operand === "bigint") throw new InputError("invalid_filter", `a filter compares with a scalar value (${field})`);
      return { path: field.split("."), operator: operator as FilterCondition["operator"], operand: operand as FilterCondition["operand"] };
    });
  });
}

function matches(condition: MatchCondition, namespace: string[]): boolean {
  const { path } = condition;
  if (path.length > namespace.length) return false;
  const start = condition.matchType === "prefix" ? 0 : namespace.length - path.length;
  return path.every((label, index) => label === "*" || namespace[start + index] === label);
}

function itemOf(row: StoredItem): Item {
  return { namespace: row.prefix.split("."), key: row.key, value: JSON.parse(row.value) as Record<string, unknown>, createdAt: new Date(row.createdAt), updatedAt: new Date(row.updatedAt) };
}

function stringsOf(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(stringsOf);
  if (value !== null && typeof value === "object") return Object.values(value).flatMap(stringsOf);
  return [];
}

/** A vector as bytes (SQLite BLOB, Postgres bytea). */
export function vectorBytes(vector: Float32Array): Buffer {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
}

/** Bytes back to a vector: a copy, since the Buffer's memory may not be aligned for a Float32Array view. */
export function vectorOf(buffer: Uint8Array): Float32Array {
  const copy = new Uint8Array(buffer.byteLength);
  copy.set(buffer);
  return new Float32Array(copy.buffer);
}

function cosine(left: Float32Array, right: Float32Array): number {
  if (left.length !== right.length || left.length === 0) return -1;
  let dot = 0;
  let leftNorm = 0;
  let rightNorm = 0;
  for (let index = 0; index < left.length; index += 1) {
    const a = left[index] as number;
    const b = right[index] as number;
    dot += a * b;
    leftNorm += a * a;
    rightNorm += b * b;
  }
  return leftNorm === 0 || rightNorm === 0 ? 0 : dot / Math.sqrt(leftNorm * rightNorm);
}

/** The SQLite errors that mean the memory tables are damaged or missing, as troupe errors. */
export function storeError(error: unknown): unknown {
  if (error instanceof TroupeError) return error;
  const code = (error as { code?: unknown }).code;
  const message = (error as Error).message ?? String(error);
  if (code === "SQLITE_CORRUPT" || code === "SQLITE_NOTADB" || code === "SQLITE_CORRUPT_VTAB" || /malformed|not a database|fts5: corrupt/i.test(message)) {
    return new SystemError("memory_store_corrupt", `the memory store is damaged (${message}); restore troupe.db from a copy, or move it away to start a new one`, {}, { cause: error });
  }
  if (/no such table: memory_|no such module: fts5/i.test(message)) {
    return new SystemError("memory_store_missing", `the memory store's tables are missing (${message}); the database was not migrated by this troupe, or they were removed`, {}, { cause: error });
  }
  return error;
}

/** A `memory_items` row as either backend reads it (alias `m`, columns `MEMORY_COLUMNS`). */
export interface ItemRow {
  id: number;
  prefix: string;
  key: string;
  value: string;
  created_at: number;
  updated_at: number;
}

export const MEMORY_COLUMNS = "m.id, m.prefix, m.key, m.value, m.created_at, m.updated_at";

/** A row as a stored item (Postgres's BIGSERIAL id may arrive as a string: it is made a number). */
export function storedOf(row: ItemRow): StoredItem {
  return { id: Number(row.id), prefix: row.prefix, key: row.key, value: row.value, createdAt: row.created_at, updatedAt: row.updated_at };
}
