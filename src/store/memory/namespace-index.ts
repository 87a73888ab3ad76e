import { lengthOf, rankDocuments, type WordStem, wordsOf } from "./namespace-bm25.js";

/**
 * What a namespace's search ranks by, kept between searches: each fact's length and the words it
 * holds with their counts, as an inverted index (a sorted vocabulary, each word's facts). A search
 * then reads numbers for its matches, not their texts: FTS5 still says which facts match, and the
 * scores are those `namespaceBm25` gives from the texts (the same arithmetic, `rankDocuments`).
 * Before this a search read, lowercased and scanned every match's text and sorted them all: at
 * 1,000 facts that each held a query word, 2 ms of the search's 2.3 ms in process.
 */

/** A fact as the index is built from it (`expiresAt` null: never). */
export interface IndexedFact {
  id: number;
  text: string | null;
  updatedAt: number;
  expiresAt: number | null;
}

/** A ranked match: the fact's id, its score (higher is better) and when it was last updated. */
export interface RankedHit {
  id: number;
  updatedAt: number;
  score: number;
}

/** The order of a search's results: the best score first, then the latest update, then the latest id. */
export function better(left: RankedHit, right: RankedHit): number {
  return right.score - left.score || right.updatedAt - left.updatedAt || right.id - left.id;
}

/**
 * The first `wanted` items in `order`, without sorting them all when `wanted` is small: a sorted
 * window of the best so far, which most items of a big namespace do not enter.
 */
export function bestOf<T>(items: readonly T[], wanted: number, order: (left: T, right: T) => number): T[] {
  if (wanted <= 0) return [];
  if (wanted * 4 >= items.length) return [...items].sort(order).slice(0, wanted);
  const best: T[] = [];
  for (const item of items) {
    const last = best[best.length - 1];
    if (best.length === wanted && last !== undefined && order(item, last) >= 0) continue;
    let low = 0;
    let high = best.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (order(best[middle] as T, item) <= 0) low = middle + 1;
      else high = middle;
    }
    best.splice(low, 0, item);
    if (best.length > wanted) best.pop();
  }
  return best;
}

export class NamespaceIndex {
  /** The facts' ids, update times, expiry times (Infinity: never) and lengths, by position. */
  readonly #ids: Float64Array;
  readonly #updated: Float64Array;
  readonly #expires: Float64Array;
  readonly #lengths: Int32Array;
  readonly #positionOf: Map<number, number>;
  /** Every word the facts hold, sorted; word i's facts and counts are postings [start[i], start[i + 1]). */
  readonly #vocabulary: string[];
  readonly #start: Int32Array;
  readonly #postingFact: Int32Array;
  readonly #postingCount: Int32Array;

  private constructor(facts: IndexedFact[], lengths: number[], words: Map<string, { facts: number[]; counts: number[] }>, postings: number) {
    this.#ids = Float64Array.from(facts, (fact) => fact.id);
    this.#updated = Float64Array.from(facts, (fact) => fact.updatedAt);
    this.#expires = Float64Array.from(facts, (fact) => fact.expiresAt ?? Number.POSITIVE_INFINITY);
    this.#lengths = Int32Array.from(lengths);
    this.#positionOf = new Map(facts.map((fact, position) => [fact.id, position]));
    this.#vocabulary = [...words.keys()].sort();
    this.#start = new Int32Array(this.#vocabulary.length + 1);
    this.#postingFact = new Int32Array(postings);
    this.#postingCount = new Int32Array(postings);
    let at = 0;
    this.#vocabulary.forEach((word, index) => {
      this.#start[index] = at;
      const entry = words.get(word) as { facts: number[]; counts: number[] };
      this.#postingFact.set(entry.facts, at);
      this.#postingCount.set(entry.counts, at);
      at += entry.facts.length;
    });
    this.#start[this.#vocabulary.length] = at;
  }

  /** The index of the facts, or undefined once their distinct words per fact pass `maxPostings` (a namespace too big to keep). */
  static build(facts: Iterable<IndexedFact>, maxPostings: number): NamespaceIndex | undefined {
    const kept: IndexedFact[] = [];
    const lengths: number[] = [];
    const words = new Map<string, { facts: number[]; counts: number[] }>();
    let postings = 0;
    for (const fact of facts) {
      const lower = (fact.text ?? "").toLowerCase();
      const position = kept.length;
      kept.push(fact);
      lengths.push(lengthOf(lower));
      const counts = new Map<string, number>();
      for (const word of wordsOf(lower)) counts.set(word, (counts.get(word) ?? 0) + 1);
      postings += counts.size;
      if (postings > maxPostings) return undefined;
      for (const [word, count] of counts) {
        let entry = words.get(word);
        if (entry === undefined) {
          entry = { facts: [], counts: [] };
          words.set(word, entry);
        }
        entry.facts.push(position);
        entry.counts.push(count);
      }
    }
    return new NamespaceIndex(kept, lengths, words, postings);
  }

  /** How many facts the namespace holds (expired ones too, until a write purges them): BM25's collection size. */
  get size(): number {
    return this.#ids.length;
  }

  /** Postings held: what the index costs in memory. */
  get postings(): number {
    return this.#postingFact.length;
  }

  /** The first vocabulary position at or after `word`. */
  #lowerBound(word: string): number {
    let low = 0;
    let high = this.#vocabulary.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if ((this.#vocabulary[middle] as string) < word) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /**
   * BM25 of the matches (`matchedIds`, FTS5's; ids of other namespaces and expired facts are left
   * out) for stems that `countableStem` accepts, in result order from `offset`, at most `limit`.
   */
  rank(matchedIds: Iterable<number>, stems: readonly WordStem[], now: number, limit: number, offset: number): RankedHit[] {
    const matched: number[] = [];
    const slot = new Int32Array(this.size);
    for (const id of matchedIds) {
      const position = this.#positionOf.get(id);
      if (position === undefined || (this.#expires[position] as number) <= now || slot[position] !== 0) continue;
      matched.push(position);
      slot[position] = matched.length;
    }
    // Each match's count of each stem: the postings of the words the stem starts (or is, whole).
    const counts = new Int32Array(matched.length * stems.length);
    stems.forEach(({ stem, whole }, stemIndex) => {
      for (let word = this.#lowerBound(stem); word < this.#vocabulary.length; word += 1) {
        const text = this.#vocabulary[word] as string;
        if (whole ? text !== stem : !text.startsWith(stem)) break;
        for (let posting = this.#start[word] as number; posting < (this.#start[word + 1] as number); posting += 1) {
          const at = slot[this.#postingFact[posting] as number] as number;
          if (at === 0) continue;
          const cell = (at - 1) * stems.length + stemIndex;
          counts[cell] = (counts[cell] as number) + (this.#postingCount[posting] as number);
        }
      }
    });
    const lengths = Int32Array.from(matched, (position) => this.#lengths[position] as number);
    const scores = rankDocuments(lengths, counts, stems.length, this.size);
    const ids = this.#ids;
    const updated = this.#updated;
    const order = (left: number, right: number): number =>
      (scores[right] as number) - (scores[left] as number) || (updated[matched[right] as number] as number) - (updated[matched[left] as number] as number) || (ids[matched[right] as number] as number) - (ids[matched[left] as number] as number);
    const best = bestOf(
      matched.map((_, index) => index),
      offset + limit,
      order,
    );
    return best.slice(offset).map((index) => ({ id: ids[matched[index] as number] as number, updatedAt: updated[matched[index] as number] as number, score: scores[index] as number }));
  }
}

/**
 * The namespaces' indexes a store keeps, each with the version of the namespace it was built at
 * (a counter every write to the namespace raises, in the database: a write by another connection
 * or process is seen too). Least recently searched first out, within `maxPostings` in all.
 */
export class NamespaceIndexCache {
  readonly #entries = new Map<string, { version: string; index: NamespaceIndex | undefined }>();
  #postings = 0;

  constructor(readonly maxPostings: number) {}

  /** The namespace's index at `version`, built when missing or older; undefined when the namespace is too big to keep. */
  at(prefix: string, version: string, facts: () => Iterable<IndexedFact>): NamespaceIndex | undefined {
    const entry = this.#entries.get(prefix);
    if (entry !== undefined) {
      this.#entries.delete(prefix);
      this.#postings -= entry.index?.postings ?? 0;
      if (entry.version === version) {
        this.#keep(prefix, entry);
        return entry.index;
      }
    }
    const fresh = { version, index: NamespaceIndex.build(facts(), this.maxPostings) };
    this.#keep(prefix, fresh);
    return fresh.index;
  }

  #keep(prefix: string, entry: { version: string; index: NamespaceIndex | undefined }): void {
    this.#entries.set(prefix, entry);
    this.#postings += entry.index?.postings ?? 0;
    for (const [oldest, held] of this.#entries) {
      if (this.#postings <= this.maxPostings || oldest === prefix) break;
      this.#entries.delete(oldest);
      this.#postings -= held.index?.postings ?? 0;
    }
  }
}
