import type { Embedder } from "../core/embedder.js";
import {
  BaseStore,
  type GetOperation,
  type Item,
  type ListNamespacesOperation,
  type MatchCondition,
  type Operation,
  type OperationResults,
  type PutOperation,
  type SearchItem,
  type SearchOperation,
  getTextAtPath,
  tokenizePath,
  validateNamespace,
} from "@langchain/langgraph-checkpoint";
import type { Statement } from "better-sqlite3";
import { ConflictError, InputError, SystemError, TroupeError } from "../core/errors.js";
import { MEMORY_LIMITS, type Retrieval } from "../core/memory.js";
import type { Sqlite } from "./database.js";

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

export interface SqliteMemoryStoreOptions {
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

/**
 * A LangGraph `BaseStore` for troupe's long-term memory, with what troupe's memory layer needs
 * beyond it: a count per namespace (for the cap) and a search that says how it ranked. Async
 * throughout, so a store on another database (Postgres) implements the same.
 */
export abstract class TroupeMemoryStore extends BaseStore {
  /** Items in exactly this namespace that have not expired. */
  abstract count(namespace: string[]): Promise<number>;
  /** `search`, with the retrieval used: lexical, or hybrid (lexical and semantic fused) with an embeddings model. */
  abstract searchRanked(namespacePrefix: string[], options: { query?: string; filter?: Record<string, unknown>; limit?: number; offset?: number }): Promise<RankedSearch>;
}

/** Items whose value has `expiresAt` (ms since the epoch) in the past are gone: never returned, purged on the next write. */
function expiresAtOf(value: Record<string, unknown>): number | null {
  return typeof value.expiresAt === "number" && Number.isFinite(value.expiresAt) ? value.expiresAt : null;
}

/** Namespace labels joined by "." (which a label cannot contain), as the `prefix` column holds them. */
function joinNamespace(namespace: readonly string[]): string {
  return namespace.join(".");
}

/** Words of a free-text query as an FTS5 expression: each word quoted (no operator can be injected), any of them. */
export function ftsQuery(query: string): string | undefined {
  const words = (query.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? []).filter((word) => word.length > 1 || /\d/.test(word));
  const unique = [...new Set(words.filter((word) => !STOPWORDS.has(word)))].slice(0, 32);
  const chosen = unique.length > 0 ? unique : [...new Set(words)].slice(0, 32);
  return chosen.length === 0 ? undefined : chosen.map((word) => `"${word}"`).join(" OR ");
}

const STOPWORDS = new Set(
  "a an and are as at be by do does did for from has have i in is it its me my of on or our so that the their them then there these this those to was we were what when where which who whom why will with you your about tell remember recall know".split(" "),
);

interface ItemRow {
  id: number;
  prefix: string;
  key: string;
  value: string;
  created_at: number;
  updated_at: number;
}

/** Reciprocal rank fusion: each ranking contributes 1 / (k + rank); k = 60, as in the RRF paper. */
const RRF_K = 60;

/** How many candidates each ranking gives the fusion. */
const FUSION_CANDIDATES = 50;

/** The SQLite errors that mean the memory tables are damaged or missing, as troupe errors. */
function storeError(error: unknown): unknown {
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

/**
 * The long-term store in SQLite (`memory_items` and the FTS5 index `memory_fts`, migration 8):
 * every statement troupe runs on its memory is in this file. Items are JSON values by namespace
 * and key with created/updated times; a value's `expiresAt` is honoured; a namespace holds at
 * most `maxItemsPerNamespace` items and a value at most `maxValueBytes`, checked in the same
 * transaction that writes (so concurrent writers cannot overshoot). Search is lexical (FTS5's
 * BM25 over the indexed text); with an embeddings model it is hybrid: BM25 and cosine similarity
 * of the vectors, fused by reciprocal rank.
 */
export class SqliteMemoryStore extends TroupeMemoryStore {
  readonly limits: MemoryStoreLimits;
  readonly index: MemoryIndexConfig | undefined;
  readonly #db: Sqlite;
  readonly #now: () => number;
  readonly #statements = new Map<string, Statement>();

  constructor(db: Sqlite, options: SqliteMemoryStoreOptions = {}) {
    super();
    this.#db = db;
    this.#now = options.now ?? Date.now;
    this.index = options.index;
    this.limits = {
      maxItemsPerNamespace: options.limits?.maxItemsPerNamespace ?? MEMORY_LIMITS.maxItemsPerNamespace,
      maxValueBytes: options.limits?.maxValueBytes ?? MEMORY_LIMITS.itemMaxBytes * 2,
    };
  }

  #statement(sql: string): Statement {
    let statement = this.#statements.get(sql);
    if (!statement) {
      statement = this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  /** Runs SQL, turning damage to the memory tables into a clear error. */
  #guard<T>(body: () => T): T {
    if (!this.#db.open) throw new SystemError("memory_store_closed", "the memory store is closed");
    try {
      return body();
    } catch (error) {
      throw storeError(error);
    }
  }

  /** Runs the operations in order; a batch of writes only is one transaction. */
  override async batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    const results: unknown[] = [];
    // Vectors are made before the writes, outside any transaction (they are a network call).
    const puts = operations.filter((operation): operation is PutOperation => "value" in operation);
    const vectors = await this.#embedPuts(puts);
    if (puts.length > 1 && puts.length === operations.length) {
      // Only writes: one transaction (one commit) for all of them, all or none.
      this.#guard(() => this.#db.transaction(() => puts.forEach((operation) => this.#put(operation, vectors.get(operation))))());
      return operations.map(() => undefined) as OperationResults<Op>;
    }
    for (const operation of operations) {
      if ("namespacePrefix" in operation) results.push((await this.#search(operation)).items);
      else if ("value" in operation) results.push(this.#put(operation, vectors.get(operation)));
      else if ("key" in operation) results.push(this.#get(operation));
      else if ("matchConditions" in operation || "limit" in operation) results.push(this.#listNamespaces(operation as ListNamespacesOperation));
      else throw new InputError("invalid_operation", "unknown store operation");
    }
    return results as OperationResults<Op>;
  }

  override async count(namespace: string[]): Promise<number> {
    validateNamespace(namespace);
    return this.#guard(() => {
      const row = this.#statement("SELECT COUNT(*) AS n FROM memory_items WHERE prefix = ? AND (expires_at IS NULL OR expires_at > ?)").get(joinNamespace(namespace), this.#now()) as { n: number };
      return row.n;
    });
  }

  override async searchRanked(namespacePrefix: string[], options: { query?: string; filter?: Record<string, unknown>; limit?: number; offset?: number }): Promise<RankedSearch> {
    validateNamespace(namespacePrefix, { allowEmpty: true });
    return this.#search({ namespacePrefix, ...options });
  }

  #get(operation: GetOperation): Item | null {
    validateNamespace(operation.namespace, { allowEmpty: true, allowReservedRoot: true });
    return this.#guard(() => {
      const row = this.#statement(
        "SELECT id, prefix, key, value, created_at, updated_at FROM memory_items WHERE prefix = ? AND key = ? AND (expires_at IS NULL OR expires_at > ?)",
      ).get(joinNamespace(operation.namespace), operation.key, this.#now()) as ItemRow | undefined;
      return row ? itemOf(row) : null;
    });
  }

  /** The text a put is indexed by (lexically and for its vector): the index fields' strings, joined. */
  #indexText(operation: PutOperation): string {
    if (operation.value === null || operation.index === false) return "";
    const fields = operation.index ?? this.index?.fields ?? ["text"];
    const texts = fields.flatMap((field) => (field === "$" ? [JSON.stringify(operation.value)] : getTextAtPath(operation.value, tokenizePath(field).join("."))));
    if (texts.length > 0) return texts.join("\n");
    // Without the fields named, every string of the value is indexed.
    return stringsOf(operation.value).join("\n");
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

  #put(operation: PutOperation, vector: Float32Array | undefined): void {
    validateNamespace(operation.namespace);
    if (typeof operation.key !== "string" || operation.key.length === 0 || operation.key.length > 200) {
      throw new InputError("invalid_key", "an item's key is 1-200 characters");
    }
    const prefix = joinNamespace(operation.namespace);
    this.#guard(() => {
      if (operation.value === null) {
        this.#statement("DELETE FROM memory_items WHERE prefix = ? AND key = ?").run(prefix, operation.key);
        return;
      }
      const value = JSON.stringify(operation.value);
      const bytes = Buffer.byteLength(value, "utf8");
      if (bytes > this.limits.maxValueBytes) {
        throw new InputError("memory_item_too_large", `the item is ${bytes} bytes; an item is at most ${this.limits.maxValueBytes} bytes`, { bytes, limit: this.limits.maxValueBytes });
      }
      const text = this.#indexText(operation);
      const now = this.#now();
      const expiresAt = expiresAtOf(operation.value);
      this.#db
        .transaction(() => {
          // Expired items free their place before the count.
          this.#statement("DELETE FROM memory_items WHERE prefix = ? AND expires_at IS NOT NULL AND expires_at <= ?").run(prefix, now);
          const exists = this.#statement("SELECT 1 FROM memory_items WHERE prefix = ? AND key = ?").get(prefix, operation.key) !== undefined;
          if (!exists) {
            const { n } = this.#statement("SELECT COUNT(*) AS n FROM memory_items WHERE prefix = ?").get(prefix) as { n: number };
            if (n >= this.limits.maxItemsPerNamespace) {
              throw new ConflictError("memory_full", `this memory holds ${n} items, the most it may (${this.limits.maxItemsPerNamespace}); forget some first`, {
                count: n,
                limit: this.limits.maxItemsPerNamespace,
              });
            }
          }
          this.#statement(
            `INSERT INTO memory_items (prefix, key, value, text, created_at, updated_at, expires_at, embedding, embedding_model)
             VALUES (@prefix, @key, @value, @text, @now, @now, @expiresAt, @embedding, @model)
             ON CONFLICT (prefix, key) DO UPDATE SET value = excluded.value, text = excluded.text, updated_at = excluded.updated_at,
               expires_at = excluded.expires_at, embedding = excluded.embedding, embedding_model = excluded.embedding_model`,
          ).run({
            prefix,
            key: operation.key,
            value,
            text,
            now,
            expiresAt,
            embedding: vector ? Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength) : null,
            model: vector ? (this.index?.model ?? null) : null,
          });
        })
        .immediate();
    });
  }

  /** The WHERE clause of a namespace prefix, its expiry and a filter on value fields. */
  #where(operation: Pick<SearchOperation, "namespacePrefix" | "filter">, alias: string): { sql: string; values: Record<string, unknown> } {
    const clauses = [`(${alias}.expires_at IS NULL OR ${alias}.expires_at > @now)`];
    const values: Record<string, unknown> = { now: this.#now() };
    if (operation.namespacePrefix.length > 0) {
      const prefix = joinNamespace(operation.namespacePrefix);
      clauses.push(`(${alias}.prefix = @prefix OR substr(${alias}.prefix, 1, @prefixLength) = @prefixDot)`);
      values.prefix = prefix;
      values.prefixDot = `${prefix}.`;
      values.prefixLength = prefix.length + 1;
    }
    Object.entries(operation.filter ?? {}).forEach(([field, condition], index) => {
      if (!/^[A-Za-z_][A-Za-z0-9_]{0,63}(?:\.[A-Za-z_][A-Za-z0-9_]{0,63}){0,3}$/.test(field)) throw new InputError("invalid_filter", `cannot filter on the field "${field}"`);
      const column = `json_extract(${alias}.value, '$.${field}')`;
      const operators = typeof condition === "object" && condition !== null && !Array.isArray(condition) ? (condition as Record<string, unknown>) : { $eq: condition };
      Object.entries(operators).forEach(([operator, operand], position) => {
        const name = `f${index}_${position}`;
        const sqlOperator = { $eq: "=", $ne: "!=", $gt: ">", $gte: ">=", $lt: "<", $lte: "<=" }[operator];
        if (!sqlOperator) throw new InputError("invalid_filter", `unknown filter operator ${operator}`);
        if (operand !== null && typeof operand === "object") throw new InputError("invalid_filter", `a filter compares with a scalar value (${field})`);
        clauses.push(operator === "$ne" ? `(${column} IS NULL OR ${column} != @${name})` : `${column} ${sqlOperator} @${name}`);
        values[name] = typeof operand === "boolean" ? (operand ? 1 : 0) : operand;
      });
    });
    return { sql: clauses.join(" AND "), values };
  }

  async #search(operation: SearchOperation): Promise<RankedSearch> {
    validateNamespace(operation.namespacePrefix, { allowEmpty: true, allowReservedRoot: true });
    const limit = Math.max(0, Math.min(1_000, operation.limit ?? 10));
    const offset = Math.max(0, operation.offset ?? 0);
    const where = this.#where(operation, "m");
    const match = operation.query === undefined ? undefined : ftsQuery(operation.query);
    if (operation.query === undefined || operation.query.trim() === "") {
      // No query: the most recently updated first.
      const rows = this.#guard(
        () =>
          this.#db
            .prepare(`SELECT m.id, m.prefix, m.key, m.value, m.created_at, m.updated_at FROM memory_items m WHERE ${where.sql} ORDER BY m.updated_at DESC, m.id DESC LIMIT @limit OFFSET @offset`)
            .all({ ...where.values, limit, offset }) as ItemRow[],
      );
      return { items: rows.map((row) => ({ ...itemOf(row), score: undefined })), retrieval: "lexical" };
    }
    const lexical = (count: number, skip: number): Array<ItemRow & { rank: number }> =>
      match === undefined
        ? []
        : this.#guard(
            () =>
              this.#db
                .prepare(
                  `SELECT m.id, m.prefix, m.key, m.value, m.created_at, m.updated_at, bm25(memory_fts) AS rank
                   FROM memory_fts JOIN memory_items m ON m.id = memory_fts.rowid
                   WHERE memory_fts MATCH @match AND ${where.sql} ORDER BY rank, m.updated_at DESC LIMIT @limit OFFSET @offset`,
                )
                .all({ ...where.values, match, limit: count, offset: skip }) as Array<ItemRow & { rank: number }>,
          );
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
      const rows = lexical(limit, offset);
      return { items: rows.map((row) => ({ ...itemOf(row), score: -row.rank })), retrieval: "lexical", ...(note ? { note } : {}) };
    }
    // Hybrid: the best lexical and the best semantic candidates, fused by reciprocal rank.
    const wanted = Math.max(FUSION_CANDIDATES, offset + limit);
    const byWords = lexical(wanted, 0);
    const candidates = this.#guard(
      () =>
        this.#db
          .prepare(`SELECT m.id, m.prefix, m.key, m.value, m.created_at, m.updated_at, m.embedding FROM memory_items m WHERE m.embedding_model = @model AND ${where.sql}`)
          .all({ ...where.values, model: index.model }) as Array<ItemRow & { embedding: Buffer }>,
    );
    const byMeaning = candidates
      .map((row) => ({ row, similarity: cosine(queryVector, vectorOf(row.embedding)) }))
      .sort((left, right) => right.similarity - left.similarity)
      .slice(0, wanted);
    const fused = new Map<number, { row: ItemRow; score: number }>();
    const add = (row: ItemRow, rank: number): void => {
      const entry = fused.get(row.id) ?? { row, score: 0 };
      entry.score += 1 / (RRF_K + rank + 1);
      fused.set(row.id, entry);
    };
    byWords.forEach((row, rank) => add(row, rank));
    byMeaning.forEach(({ row }, rank) => add(row, rank));
    const ranked = [...fused.values()].sort((left, right) => right.score - left.score || right.row.updated_at - left.row.updated_at).slice(offset, offset + limit);
    return { items: ranked.map(({ row, score }) => ({ ...itemOf(row), score })), retrieval: "hybrid" };
  }

  #listNamespaces(operation: ListNamespacesOperation): string[][] {
    const rows = this.#guard(() => this.#statement("SELECT DISTINCT prefix FROM memory_items WHERE expires_at IS NULL OR expires_at > ? ORDER BY prefix").all(this.#now()) as Array<{ prefix: string }>);
    let namespaces = rows.map((row) => row.prefix.split("."));
    const conditions: MatchCondition[] = operation.matchConditions ?? [];
    namespaces = namespaces.filter((namespace) => conditions.every((condition) => matches(condition, namespace)));
    if (operation.maxDepth !== undefined) {
      const depth = operation.maxDepth;
      namespaces = [...new Set(namespaces.map((namespace) => namespace.slice(0, depth).join(".")))].map((joined) => joined.split("."));
    }
    const offset = operation.offset ?? 0;
    return namespaces.slice(offset, offset + (operation.limit ?? namespaces.length));
  }
}

function matches(condition: MatchCondition, namespace: string[]): boolean {
  const { path } = condition;
  if (path.length > namespace.length) return false;
  const start = condition.matchType === "prefix" ? 0 : namespace.length - path.length;
  return path.every((label, index) => label === "*" || namespace[start + index] === label);
}

function itemOf(row: ItemRow): Item {
  return { namespace: row.prefix.split("."), key: row.key, value: JSON.parse(row.value) as Record<string, unknown>, createdAt: new Date(row.created_at), updatedAt: new Date(row.updated_at) };
}

function stringsOf(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(stringsOf);
  if (value !== null && typeof value === "object") return Object.values(value).flatMap(stringsOf);
  return [];
}

function vectorOf(buffer: Buffer): Float32Array {
  // A copy: the Buffer's memory may not be aligned for a Float32Array view.
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
