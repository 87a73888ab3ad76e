import type { Statement } from "better-sqlite3";
import { SystemError } from "../../core/errors.js";
import { prepared, type Sqlite } from "../database/sqlite.js";
import { countableStem, namespaceBm25, stemsOf } from "./namespace-bm25.js";
import { bestOf, better, type IndexedFact, NamespaceIndexCache, type RankedHit } from "./namespace-index.js";
import { type ItemRow, type ItemScope, MEMORY_COLUMNS, type MemoryStoreOptions, type PreparedWrite, type StoredItem, TroupeMemoryStore, memoryFull, storeError, storedOf, treeFull, vectorBytes, vectorOf } from "./contract.js";

/** Postings (a fact's distinct words) the indexes of searched namespaces hold in all: some tens of MB at most. */
const INDEX_POSTINGS = 1_000_000;

/** A namespace and the ones under it as a range of `prefix`: itself, or from "P." up to "P/" ("/" follows "."), on the index. */
const IN_RANGE = "prefix = @prefix OR (prefix > @prefixDot AND prefix < @prefixEnd)";

/**
 * The long-term store in SQLite (`memory_items` and the FTS5 index `memory_fts`, migration 8):
 * every statement troupe runs on its memory in SQLite is in this class. Lexical search matches
 * with FTS5 (porter stemming) and ranks by BM25 over the namespace searched (namespace-bm25.ts),
 * from an index of the namespace's words kept while its version (`memory_versions`, raised by
 * every write: migration 29) stays (namespace-index.ts), with each query word's matches once FTS5
 * has given them at that version; the count cap is checked in the IMMEDIATE
 * transaction that writes, so concurrent writers cannot overshoot.
 */
export class SqliteMemoryStore extends TroupeMemoryStore {
  readonly #db: Sqlite;
  readonly #indexes = new NamespaceIndexCache(INDEX_POSTINGS);

  constructor(db: Sqlite, options: MemoryStoreOptions = {}) {
    super(options);
    this.#db = db;
  }

  /** A statement prepared once per connection (a bounded cache: filters make the SQL vary). */
  #statement(sql: string): Statement {
    return prepared(this.#db, sql);
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

  protected override async readItem(prefix: string, key: string, now: number): Promise<StoredItem | undefined> {
    return this.#guard(() => {
      const row = this.#statement(`SELECT ${MEMORY_COLUMNS} FROM memory_items m WHERE m.prefix = ? AND m.key = ? AND (m.expires_at IS NULL OR m.expires_at > ?)`).get(prefix, key, now) as ItemRow | undefined;
      return row ? storedOf(row) : undefined;
    });
  }

  protected override async write(writes: PreparedWrite[], now: number): Promise<void> {
    this.#guard(() =>
      this.#db
        .transaction(() => {
          for (const write of writes) this.#write(write, now);
        })
        .immediate(),
    );
  }

  #write(write: PreparedWrite, now: number): void {
    if (write.value === null) {
      this.#statement("DELETE FROM memory_items WHERE prefix = ? AND key = ?").run(write.prefix, write.key);
      return;
    }
    // Expired items free their place before the count.
    this.#statement("DELETE FROM memory_items WHERE prefix = ? AND expires_at IS NOT NULL AND expires_at <= ?").run(write.prefix, now);
    const exists = this.#statement("SELECT 1 FROM memory_items WHERE prefix = ? AND key = ?").get(write.prefix, write.key) !== undefined;
    if (!exists) {
      const { n } = this.#statement("SELECT COUNT(*) AS n FROM memory_items WHERE prefix = ?").get(write.prefix) as { n: number };
      if (n >= this.limits.maxItemsPerNamespace) throw memoryFull(n, this.limits.maxItemsPerNamespace);
      if (write.tree) {
        const tree = write.tree;
        const { n: held } = this.#statement("SELECT COUNT(*) AS n FROM memory_items WHERE (prefix = ? OR substr(prefix, 1, ?) = ?) AND (expires_at IS NULL OR expires_at > ?)").get(
          tree.prefix,
          tree.prefix.length + 1,
          `${tree.prefix}.`,
          now,
        ) as { n: number };
        if (held >= tree.maxItems) throw treeFull(held, tree.maxItems);
      }
    }
    this.#statement(
      `INSERT INTO memory_items (prefix, key, value, text, created_at, updated_at, expires_at, embedding, embedding_model)
       VALUES (@prefix, @key, @value, @text, @now, @now, @expiresAt, @embedding, @model)
       ON CONFLICT (prefix, key) DO UPDATE SET value = excluded.value, text = excluded.text, updated_at = excluded.updated_at,
         expires_at = excluded.expires_at, embedding = excluded.embedding, embedding_model = excluded.embedding_model`,
    ).run({
      prefix: write.prefix,
      key: write.key,
      value: write.value,
      text: write.text,
      now,
      expiresAt: write.expiresAt,
      embedding: write.embedding ? vectorBytes(write.embedding) : null,
      model: write.model,
    });
  }

  protected override async countItems(prefix: string, now: number): Promise<number> {
    return this.#guard(() => (this.#statement("SELECT COUNT(*) AS n FROM memory_items WHERE prefix = ? AND (expires_at IS NULL OR expires_at > ?)").get(prefix, now) as { n: number }).n);
  }

  /** The WHERE clause of a scope: its expiry, its namespace prefix and its filter on value fields. */
  #where(scope: ItemScope): { sql: string; values: Record<string, unknown> } {
    const clauses = ["(m.expires_at IS NULL OR m.expires_at > @now)"];
    const values: Record<string, unknown> = { now: scope.now };
    if (scope.prefix !== undefined) {
      clauses.push("(m.prefix = @prefix OR substr(m.prefix, 1, @prefixLength) = @prefixDot)");
      values.prefix = scope.prefix;
      values.prefixDot = `${scope.prefix}.`;
      values.prefixLength = scope.prefix.length + 1;
    }
    scope.filter.forEach((condition, index) => {
      const column = `json_extract(m.value, '$.${condition.path.join(".")}')`;
      const name = `f${index}`;
      const sqlOperator = { $eq: "=", $ne: "!=", $gt: ">", $gte: ">=", $lt: "<", $lte: "<=" }[condition.operator];
      clauses.push(condition.operator === "$ne" ? `(${column} IS NULL OR ${column} != @${name})` : `${column} ${sqlOperator} @${name}`);
      values[name] = typeof condition.operand === "boolean" ? (condition.operand ? 1 : 0) : condition.operand;
    });
    return { sql: clauses.join(" AND "), values };
  }

  protected override async recent(scope: ItemScope, limit: number, offset: number): Promise<StoredItem[]> {
    const where = this.#where(scope);
    return this.#guard(() =>
      (this.#statement(`SELECT ${MEMORY_COLUMNS} FROM memory_items m WHERE ${where.sql} ORDER BY m.updated_at DESC, m.id DESC LIMIT @limit OFFSET @offset`).all({ ...where.values, limit, offset }) as ItemRow[]).map(storedOf),
    );
  }

  protected override async lexical(scope: ItemScope, words: string[], limit: number, offset: number): Promise<Array<StoredItem & { score: number }>> {
    const where = this.#where(scope);
    const anyWord = words.map((word) => `"${word}"`).join(" OR ");
    if (scope.prefix === undefined) {
      const rows = this.#guard(
        () =>
          this.#statement(
            `SELECT ${MEMORY_COLUMNS}, bm25(memory_fts, 1.0, 0.0) AS rank FROM memory_fts JOIN memory_items m ON m.id = memory_fts.rowid
             WHERE memory_fts MATCH @match AND ${where.sql} ORDER BY rank, m.updated_at DESC LIMIT @limit OFFSET @offset`,
          )
          .all({ ...where.values, match: `text : (${anyWord})`, limit, offset }) as Array<ItemRow & { rank: number }>,
      );
      // BM25 in FTS5 is lower for better matches.
      return rows.map((row) => ({ ...storedOf(row), score: -row.rank }));
    }
    // Within a namespace, the index matches its phrase too (migration 22): only the caller's facts
    // are read, however many other keys hold. The SQL filter (or the namespace's index) still
    // decides: the phrase also matches a namespace that merely contains it. They are ranked by BM25
    // with the namespace's own statistics (namespace-bm25.ts): FTS5's bm25() reads every key's
    // postings of the words. One read transaction: the version, the index and the matches agree.
    const prefix = scope.prefix;
    // The last label's phrase is enough to find the namespace's rows (and those under it): every
    // namespace shares its first labels' words ("memories", "key"), whose postings FTS5 would
    // walk too. A label without a letter or digit has no words: the whole name's phrase then.
    const label = prefix.slice(prefix.lastIndexOf(".") + 1);
    const namespace = `prefix : "${(/[\p{L}\p{N}]/u.test(label) ? label : prefix).replaceAll('"', '""')}"`;
    const match = `${namespace} AND text : (${anyWord})`;
    const range = { prefix, prefixDot: `${prefix}.`, prefixEnd: `${prefix}/` };
    const stems = stemsOf(words);
    return this.#guard(() =>
      this.#db.transaction(() => {
        const index = stems.every(countableStem) ? this.#namespaceIndex(range) : undefined;
        if (index === undefined) return this.#page(this.#rankTexts(where, match, range, words, limit, offset));
        if (scope.filter.length > 0) {
          const ids = this.#statement(`SELECT m.id FROM memory_fts JOIN memory_items m ON m.id = memory_fts.rowid WHERE memory_fts MATCH @match AND ${where.sql}`).pluck().all({ ...where.values, match }) as number[];
          return this.#page(index.rank(ids, stems, scope.now, limit, offset));
        }
        // Without a filter, each word's matches are FTS5's, asked once per word at this version and
        // kept in the index: the query's matches are their union (FTS5's OR), and a search of kept
        // words reads no postings, however many facts hold them or other keys hold.
        const matches = this.#statement("SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?").pluck();
        const lists = words.map((word) => index.matchesOf(word) ?? index.keepMatches(word, matches.iterate(`${namespace} AND text : "${word}"`) as Iterable<number>));
        const hits = index.rankKept(lists, stems, scope.now, limit, offset);
        this.#indexes.charge(prefix);
        return this.#page(hits);
      })(),
    );
  }

  /** The namespace's index at its current version (built when it changed), undefined when too big to keep. */
  #namespaceIndex(range: { prefix: string; prefixDot: string; prefixEnd: string }) {
    const { n, v } = this.#statement(`SELECT COUNT(*) AS n, COALESCE(SUM(version), 0) AS v FROM memory_versions WHERE ${IN_RANGE}`).get(range) as { n: number; v: number };
    const statement = this.#statement(`SELECT id, text, updated_at, expires_at FROM memory_items WHERE ${IN_RANGE}`);
    function* facts(): Generator<IndexedFact> {
      for (const row of statement.iterate(range) as Iterable<{ id: number; text: string | null; updated_at: number; expires_at: number | null }>) {
        yield { id: row.id, text: row.text, updatedAt: row.updated_at, expiresAt: row.expires_at };
      }
    }
    return this.#indexes.at(range.prefix, `${n}/${v}`, facts);
  }

  /** Ranks the matches from their texts: a query word the index cannot count ("_" in it), or a namespace too big to keep indexed. */
  #rankTexts(where: { sql: string; values: Record<string, unknown> }, match: string, range: { prefix: string; prefixDot: string; prefixEnd: string }, words: string[], limit: number, offset: number): RankedHit[] {
    const matched = this.#statement(`SELECT m.id, m.text, m.updated_at FROM memory_fts JOIN memory_items m ON m.id = memory_fts.rowid WHERE memory_fts MATCH @match AND ${where.sql}`).all({
      ...where.values,
      match,
    }) as Array<{ id: number; text: string | null; updated_at: number }>;
    const total = (this.#statement(`SELECT COUNT(*) AS n FROM memory_items WHERE ${IN_RANGE}`).get(range) as { n: number }).n;
    const scores = namespaceBm25(
      matched.map((row) => row.text ?? ""),
      words,
      total,
    );
    const hits = matched.map((row, index) => ({ id: row.id, updatedAt: row.updated_at, score: scores[index] ?? 0 }));
    return bestOf(hits, offset + limit, better).slice(offset);
  }

  /** The page's facts, read whole, in the hits' order. */
  #page(best: RankedHit[]): Array<StoredItem & { score: number }> {
    if (best.length === 0) return [];
    const rows = this.#statement(`SELECT ${MEMORY_COLUMNS} FROM memory_items m WHERE m.id IN (SELECT value FROM json_each(?))`).all(JSON.stringify(best.map((hit) => hit.id))) as ItemRow[];
    const byId = new Map(rows.map((row) => [Number(row.id), row]));
    return best.flatMap((hit) => {
      const row = byId.get(hit.id);
      return row === undefined ? [] : [{ ...storedOf(row), score: hit.score }];
    });
  }

  protected override async vectors(scope: ItemScope, model: string): Promise<Array<StoredItem & { embedding: Float32Array }>> {
    const where = this.#where(scope);
    const rows = this.#guard(
      () => this.#statement(`SELECT ${MEMORY_COLUMNS}, m.embedding FROM memory_items m WHERE m.embedding_model = @model AND ${where.sql}`).all({ ...where.values, model }) as Array<ItemRow & { embedding: Buffer }>,
    );
    return rows.map((row) => ({ ...storedOf(row), embedding: vectorOf(row.embedding) }));
  }

  protected override async prefixes(now: number, under?: string): Promise<string[]> {
    if (under === undefined) {
      return this.#guard(() => (this.#statement("SELECT DISTINCT prefix FROM memory_items WHERE expires_at IS NULL OR expires_at > ? ORDER BY prefix").all(now) as Array<{ prefix: string }>).map((row) => row.prefix));
    }
    return this.#guard(() =>
      (
        this.#statement("SELECT DISTINCT prefix FROM memory_items WHERE (expires_at IS NULL OR expires_at > ?) AND (prefix = ? OR substr(prefix, 1, ?) = ?) ORDER BY prefix").all(
          now,
          under,
          under.length + 1,
          `${under}.`,
        ) as Array<{ prefix: string }>
      ).map((row) => row.prefix),
    );
  }
}
