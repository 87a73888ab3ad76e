import type pg from "pg";
import { SystemError, TroupeError } from "../../core/errors.js";
import { type ItemRow, type ItemScope, MEMORY_COLUMNS, memoryFull, type MemoryStoreOptions, type PreparedWrite, type StoredItem, storedOf, treeFull, TroupeMemoryStore, vectorBytes, vectorOf } from "./contract.js";
import { inTransaction } from "../database/postgres.js";
import { keptPage, RankedLists } from "./ranked-lists.js";

/** Postgres errors that mean the memory table is gone, or the store closed, as troupe errors. */
function storeError(error: unknown): unknown {
  if (error instanceof TroupeError) return error;
  const code = (error as { code?: unknown }).code;
  const message = (error as Error).message ?? String(error);
  if (code === "42P01") {
    return new SystemError("memory_store_missing", `the memory store's table is missing (${message}); the database was not migrated by this troupe, or it was removed`, {}, { cause: error });
  }
  if (/after calling end on the pool/i.test(message)) return new SystemError("memory_store_closed", "the memory store is closed", {}, { cause: error });
  return error;
}

/** A query's parameters, numbered as they are added. */
class Params {
  readonly values: unknown[] = [];
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/** The version of a namespace and the ones under it ($1 the namespace, $2 and $3 its range's ends "P." and "P/"; the key's collation is "C"): how many there are and the sum of their versions. */
const VERSION_OF_RANGE = "(SELECT COUNT(*) || '/' || COALESCE(SUM(version), 0) FROM memory_versions WHERE prefix = $1 OR (prefix > $2 AND prefix < $3))";

/** The version of a namespace's range and the rows of ids $4 beside it (one row with null columns when there are none). */
const KEPT_PAGE = `SELECT v.version, ${MEMORY_COLUMNS} FROM (SELECT ${VERSION_OF_RANGE} AS version) v LEFT JOIN memory_items m ON m.id = ANY($4::bigint[])`;

/**
 * A namespace's range on `memory_items_updated` (text_pattern_ops): the namespace $1, or from "P."
 * ($2) up to "P/" ($3), which is exactly the names starting with "P.". The statements that rank
 * are planned with their parameters each time (a generic plan, prepared, walked every key's
 * postings of a common word: 10–20 ms a search); only the kept page's is prepared.
 */
const IN_RANGE = "(m.prefix = $1 OR (m.prefix ~>=~ $2 AND m.prefix ~<~ $3))";

/** Any of the words ($4: each quoted, joined by "|") as a tsquery. */
const WORDS_QUERY = "to_tsquery('english'::regconfig, $4)";

/** The version and Postgres's ranked page ($5 now, $6 limit, $7 offset): a search with no list kept. */
const RANKED_PAGE = `WITH hits AS (SELECT ${MEMORY_COLUMNS}, ts_rank(m.search, ${WORDS_QUERY}, 1) AS rank FROM memory_items m
    WHERE m.search @@ ${WORDS_QUERY} AND ${IN_RANGE} AND (m.expires_at IS NULL OR m.expires_at > $5)
    ORDER BY rank DESC, m.updated_at DESC, m.id DESC LIMIT $6 OFFSET $7)
  SELECT v.version, hits.* FROM (SELECT ${VERSION_OF_RANGE} AS version) v LEFT JOIN hits ON true`;

/** The version and every match's rank, expired ones too (a kept list leaves them out when it pages). */
const EVERY_RANK = `WITH hits AS (SELECT m.id, ts_rank(m.search, ${WORDS_QUERY}, 1) AS rank, m.updated_at, m.expires_at FROM memory_items m WHERE m.search @@ ${WORDS_QUERY} AND ${IN_RANGE})
  SELECT v.version, hits.* FROM (SELECT ${VERSION_OF_RANGE} AS version) v LEFT JOIN hits ON true`;

/** Ranked matches the kept lists hold in all (four numbers each): some tens of MB at most. */
const KEPT_HITS = 500_000;

/** Any of the words as a tsquery, each quoted (they hold letters, digits and "_" only). */
function tsQuery(params: Params, words: readonly string[]): string {
  return `to_tsquery('english'::regconfig, ${params.add(words.map((word) => `'${word}'`).join(" | "))})`;
}

const SQL_OPERATORS = { $eq: "=", $ne: "<>", $gt: ">", $gte: ">=", $lt: "<", $lte: "<=" } as const;

/**
 * The long-term store on Postgres (`memory_items`, troupe's Postgres migration 2): lexical search
 * is a GIN-indexed tsvector ranked by `ts_rank`; a write takes a transaction-scoped advisory lock
 * on its namespace before it counts, so writers from any process cannot overshoot the cap.
 */
export class PostgresMemoryStore extends TroupeMemoryStore {
  readonly #pool: pg.Pool;
  readonly #ranked = new RankedLists(KEPT_HITS);

  constructor(pool: pg.Pool, options: MemoryStoreOptions = {}) {
    super(options);
    this.#pool = pool;
  }

  /** Runs SQL (as a named statement, prepared once per connection and then planned no more, when `name` is given). */
  async #query<R extends pg.QueryResultRow>(sql: string, values: unknown[], name?: string): Promise<R[]> {
    try {
      return (await this.#pool.query<R>(name === undefined ? { text: sql, values } : { name, text: sql, values })).rows;
    } catch (error) {
      throw storeError(error);
    }
  }

  protected override async readItem(prefix: string, key: string, now: number): Promise<StoredItem | undefined> {
    const rows = await this.#query<ItemRow>(`SELECT ${MEMORY_COLUMNS} FROM memory_items m WHERE m.prefix = $1 AND m.key = $2 AND (m.expires_at IS NULL OR m.expires_at > $3)`, [prefix, key, now]);
    return rows[0] ? storedOf(rows[0]) : undefined;
  }

  protected override async write(writes: PreparedWrite[], now: number): Promise<void> {
    try {
      await inTransaction(this.#pool, async (client) => {
        // Trees, then namespaces, each locked in one order, so two batches over the same ones cannot deadlock.
        for (const tree of [...new Set(writes.flatMap((write) => (write.tree ? [write.tree.prefix] : [])))].sort()) {
          await client.query("SELECT pg_advisory_xact_lock(hashtextextended('troupe.memory-tree:' || $1, 0))", [tree]);
        }
        for (const prefix of [...new Set(writes.map((write) => write.prefix))].sort()) {
          await client.query("SELECT pg_advisory_xact_lock(hashtextextended('troupe.memory:' || $1, 0))", [prefix]);
        }
        for (const write of writes) await this.#write(client, write, now);
      });
    } catch (error) {
      throw storeError(error);
    }
  }

  async #write(client: pg.PoolClient, write: PreparedWrite, now: number): Promise<void> {
    if (write.value === null) {
      await client.query("DELETE FROM memory_items WHERE prefix = $1 AND key = $2", [write.prefix, write.key]);
      return;
    }
    // Expired items free their place before the count.
    await client.query("DELETE FROM memory_items WHERE prefix = $1 AND expires_at IS NOT NULL AND expires_at <= $2", [write.prefix, now]);
    const exists = (await client.query("SELECT 1 FROM memory_items WHERE prefix = $1 AND key = $2", [write.prefix, write.key])).rowCount !== 0;
    if (!exists) {
      const n = (await client.query<{ n: number }>("SELECT COUNT(*)::int AS n FROM memory_items WHERE prefix = $1", [write.prefix])).rows[0]?.n ?? 0;
      if (n >= this.limits.maxItemsPerNamespace) throw memoryFull(n, this.limits.maxItemsPerNamespace);
      if (write.tree) {
        const tree = write.tree;
        const held =
          (
            await client.query<{ n: number }>("SELECT COUNT(*)::int AS n FROM memory_items WHERE (prefix = $1 OR starts_with(prefix, $2)) AND (expires_at IS NULL OR expires_at > $3)", [
              tree.prefix,
              `${tree.prefix}.`,
              now,
            ])
          ).rows[0]?.n ?? 0;
        if (held >= tree.maxItems) throw treeFull(held, tree.maxItems);
      }
    }
    await client.query(
      `INSERT INTO memory_items (prefix, key, value, text, created_at, updated_at, expires_at, embedding, embedding_model)
       VALUES ($1, $2, $3, $4, $5, $5, $6, $7, $8)
       ON CONFLICT (prefix, key) DO UPDATE SET value = excluded.value, text = excluded.text, updated_at = excluded.updated_at,
         expires_at = excluded.expires_at, embedding = excluded.embedding, embedding_model = excluded.embedding_model`,
      [write.prefix, write.key, write.value, write.text, now, write.expiresAt, write.embedding ? vectorBytes(write.embedding) : null, write.model],
    );
  }

  protected override async countItems(prefix: string, now: number): Promise<number> {
    const rows = await this.#query<{ n: number }>("SELECT COUNT(*)::int AS n FROM memory_items WHERE prefix = $1 AND (expires_at IS NULL OR expires_at > $2)", [prefix, now]);
    return rows[0]?.n ?? 0;
  }

  /** The WHERE clause of a scope: its expiry, its namespace prefix and its filter on value fields (compared as JSON). */
  #where(scope: ItemScope, params: Params): string {
    const clauses = [`(m.expires_at IS NULL OR m.expires_at > ${params.add(scope.now)})`];
    if (scope.prefix !== undefined) clauses.push(`(m.prefix = ${params.add(scope.prefix)} OR starts_with(m.prefix, ${params.add(`${scope.prefix}.`)}))`);
    for (const condition of scope.filter) {
      const column = `(m.value::jsonb #> ${params.add(condition.path)}::text[])`;
      const operand = `${params.add(JSON.stringify(condition.operand))}::jsonb`;
      clauses.push(condition.operator === "$ne" ? `(${column} IS NULL OR ${column} <> ${operand})` : `${column} ${SQL_OPERATORS[condition.operator]} ${operand}`);
    }
    return clauses.join(" AND ");
  }

  protected override async recent(scope: ItemScope, limit: number, offset: number): Promise<StoredItem[]> {
    const params = new Params();
    const where = this.#where(scope, params);
    const rows = await this.#query<ItemRow>(`SELECT ${MEMORY_COLUMNS} FROM memory_items m WHERE ${where} ORDER BY m.updated_at DESC, m.id DESC LIMIT ${params.add(limit)} OFFSET ${params.add(offset)}`, params.values);
    return rows.map(storedOf);
  }

  protected override async lexical(scope: ItemScope, words: string[], limit: number, offset: number): Promise<Array<StoredItem & { score: number }>> {
    if (scope.prefix !== undefined && scope.filter.length === 0) return this.#lexicalKept(scope.prefix, words, scope.now, limit, offset);
    const params = new Params();
    const where = this.#where(scope, params);
    const query = tsQuery(params, words);
    const rows = await this.#query<ItemRow & { rank: number }>(
      `SELECT ${MEMORY_COLUMNS}, ts_rank(m.search, ${query}, 1) AS rank FROM memory_items m
       WHERE m.search @@ ${query} AND ${where} ORDER BY rank DESC, m.updated_at DESC, m.id DESC LIMIT ${params.add(limit)} OFFSET ${params.add(offset)}`,
      params.values,
    );
    return rows.map((row) => ({ ...storedOf(row), score: Number(row.rank) }));
  }

  /**
   * A namespace's search without a filter. With the query's ranked list kept (ranked-lists.ts),
   * one prepared statement (planned once per connection) reads the namespace's version and the
   * page's rows: if the version is still the list's, that is the answer. Otherwise one reads the
   * version and Postgres's ranked page; on the query's second search at a version, one more reads
   * every match's rank, kept for the next searches while the version holds. Each statement reads
   * the version in the snapshot it reads the rows in.
   */
  async #lexicalKept(prefix: string, words: string[], now: number, limit: number, offset: number): Promise<Array<StoredItem & { score: number }>> {
    const key = `${prefix}\u0000${words.join(" ")}`;
    let entry = this.#ranked.entry(key);
    if (entry?.state === "kept") {
      const page = keptPage(entry.hits, now, limit, offset);
      const rows = await this.#query<Partial<ItemRow> & { version: string }>(KEPT_PAGE, [prefix, `${prefix}.`, `${prefix}/`, page.map((hit) => hit.id)], "troupe-memory-kept-page");
      if (rows[0]?.version === entry.version) {
        const byId = new Map(rows.filter((row) => row.id !== null && row.id !== undefined).map((row) => [Number(row.id), row as ItemRow]));
        return page.flatMap((hit) => {
          const row = byId.get(hit.id);
          return row === undefined ? [] : [{ ...storedOf(row), score: hit.score }];
        });
      }
      // The namespace changed since: its list is no use.
      this.#ranked.drop(key);
      entry = undefined;
    }
    const range = [prefix, `${prefix}.`, `${prefix}/`, words.map((word) => `'${word}'`).join(" | ")];
    const rows = await this.#query<ItemRow & { rank: number | null; version: string }>(RANKED_PAGE, [...range, now, limit, offset]);
    const current = rows[0]?.version ?? "";
    if (entry?.state === "searched" && current === entry.version) {
      // The second search at the version: every match's rank, kept while the version holds.
      const every = await this.#query<{ version: string; id: string | null; rank: number | null; updated_at: number | null; expires_at: number | null }>(EVERY_RANK, range);
      if (every[0]?.version === current) {
        this.#ranked.keep(
          key,
          current,
          every.filter((row) => row.id !== null).map((row) => ({ id: Number(row.id), score: Number(row.rank), updatedAt: Number(row.updated_at), expiresAt: row.expires_at === null ? Number.POSITIVE_INFINITY : Number(row.expires_at) })),
        );
      }
    } else if (entry?.version !== current) this.#ranked.searched(key, current);
    // Postgres ranked the page: a search at a version with no list kept (or one too big to keep).
    return rows
      .filter((row) => row.id !== null)
      .sort((left, right) => Number(right.rank) - Number(left.rank) || Number(right.updated_at) - Number(left.updated_at) || Number(right.id) - Number(left.id))
      .map((row) => ({ ...storedOf(row), score: Number(row.rank) }));
  }

  protected override async vectors(scope: ItemScope, model: string): Promise<Array<StoredItem & { embedding: Float32Array }>> {
    const params = new Params();
    const rows = await this.#query<ItemRow & { embedding: Buffer }>(
      `SELECT ${MEMORY_COLUMNS}, m.embedding FROM memory_items m WHERE m.embedding_model = ${params.add(model)} AND ${this.#where(scope, params)}`,
      params.values,
    );
    return rows.map((row) => ({ ...storedOf(row), embedding: vectorOf(row.embedding) }));
  }

  protected override async prefixes(now: number, under?: string): Promise<string[]> {
    const scoped = under === undefined ? "" : " AND (prefix = $2 OR starts_with(prefix, $3))";
    const rows = await this.#query<{ prefix: string }>(
      `SELECT DISTINCT prefix COLLATE "C" AS prefix FROM memory_items WHERE (expires_at IS NULL OR expires_at > $1)${scoped} ORDER BY 1`,
      under === undefined ? [now] : [now, under, `${under}.`],
    );
    return rows.map((row) => row.prefix);
  }
}
