import { lengthOf, rankDocuments, type WordStem, wordsOf } from "./namespace-bm25.js";

/**
 * What a namespace's search ranks by, kept between searches: each fact's length and its distinct
 * words, sorted, with their counts (a query word's count in a fact is a binary search). A search
 * then reads numbers for its matches, not their texts: FTS5 still says which facts match, and the
 * scores are those `namespaceBm25` gives from the texts (the same arithmetic, `rankDocuments`).
 * Before this a search read, lowercased and scanned every match's text and sorted them all: at
 * 1,000 facts that each held a query word, 2 ms of the search's 2.3 ms in process. It also keeps,
 * at its version, each query word's matches as FTS5 gave them (`keepMatches`) and each stem's
 * count in every fact: a search of words searched before reads no postings (`rankKept`).
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

/** Query words (and, apart, stems) an index keeps the matches (counts) of at most. */
const KEPT_WORDS = 64;
/** Numbers an index keeps for words and stems beyond as many as its own words: a small namespace still keeps a few words. */
const KEPT_SLACK = 16_384;

export class NamespaceIndex {
  /** The facts' ids, update times, expiry times (Infinity: never) and lengths, by position. */
  readonly #ids: Float64Array;
  readonly #updated: Float64Array;
  readonly #expires: Float64Array;
  readonly #lengths: Int32Array;
  readonly #positionOf: Map<number, number>;
  /** Each fact's distinct words, sorted, with their counts: fact p's are [start[p], start[p + 1]). */
  readonly #words: string[];
  readonly #counts: Int32Array;
  readonly #start: Int32Array;
  /** Query words' matches (FTS5's, positions) and stems' counts in every fact, kept at this version, least recently used first; `#kept` numbers in all. */
  readonly #matches = new Map<string, Int32Array>();
  readonly #stemCounts = new Map<string, Int32Array>();
  #kept = 0;

  private constructor(facts: IndexedFact[], lengths: number[], words: string[], counts: number[], start: number[]) {
    this.#ids = Float64Array.from(facts, (fact) => fact.id);
    this.#updated = Float64Array.from(facts, (fact) => fact.updatedAt);
    this.#expires = Float64Array.from(facts, (fact) => fact.expiresAt ?? Number.POSITIVE_INFINITY);
    this.#lengths = Int32Array.from(lengths);
    this.#positionOf = new Map(facts.map((fact, position) => [fact.id, position]));
    this.#words = words;
    this.#counts = Int32Array.from(counts);
    this.#start = Int32Array.from(start);
  }

  /** The index of the facts, or undefined once their distinct words per fact pass `maxPostings` (a namespace too big to keep). */
  static build(facts: Iterable<IndexedFact>, maxPostings: number): NamespaceIndex | undefined {
    const kept: IndexedFact[] = [];
    const lengths: number[] = [];
    const words: string[] = [];
    const counts: number[] = [];
    const start: number[] = [0];
    for (const fact of facts) {
      const lower = (fact.text ?? "").toLowerCase();
      kept.push(fact);
      lengths.push(lengthOf(lower));
      // The fact's words sorted: each distinct word once, with how many times it occurs.
      const sorted = wordsOf(lower).sort();
      for (let index = 0; index < sorted.length; ) {
        let end = index + 1;
        while (end < sorted.length && sorted[end] === sorted[index]) end += 1;
        words.push(sorted[index] as string);
        counts.push(end - index);
        index = end;
      }
      start.push(words.length);
      if (words.length > maxPostings) return undefined;
    }
    return new NamespaceIndex(kept, lengths, words, counts, start);
  }

  /** How many facts the namespace holds (expired ones too, until a write purges them): BM25's collection size. */
  get size(): number {
    return this.#ids.length;
  }

  /** Postings held (a fact's distinct words) and numbers kept for query words and stems: what the index costs in memory. */
  get postings(): number {
    return this.#words.length + this.#kept;
  }

  /** How often the fact at `position` holds words the stem starts (or is, whole): a binary search in its sorted words. */
  #count(position: number, { stem, whole }: WordStem): number {
    let low = this.#start[position] as number;
    let high = this.#start[position + 1] as number;
    const end = high;
    while (low < high) {
      const middle = (low + high) >> 1;
      if ((this.#words[middle] as string) < stem) low = middle + 1;
      else high = middle;
    }
    let times = 0;
    for (let word = low; word < end; word += 1) {
      const text = this.#words[word] as string;
      if (whole ? text !== stem : !text.startsWith(stem)) break;
      times += this.#counts[word] as number;
    }
    return times;
  }

  /** The positions of the facts (FTS5's) that hold `word`, when kept at this version; marks it recently used. */
  matchesOf(word: string): Int32Array | undefined {
    const kept = this.#matches.get(word);
    if (kept !== undefined) {
      this.#matches.delete(word);
      this.#matches.set(word, kept);
    }
    return kept;
  }

  /**
   * Keeps the facts FTS5 matched for one query word (`matchedIds`; ids of other namespaces left
   * out): later searches of the word at this version read no postings. The least recently
   * searched words go first once the index keeps `KEPT_WORDS`, or more kept numbers than its own words.
   */
  keepMatches(word: string, matchedIds: Iterable<number>): Int32Array {
    const positions: number[] = [];
    for (const id of matchedIds) {
      const position = this.#positionOf.get(id);
      if (position !== undefined) positions.push(position);
    }
    const kept = Int32Array.from(new Set(positions)).sort();
    const old = this.#matches.get(word);
    if (old !== undefined) this.#kept -= old.length;
    this.#matches.delete(word);
    this.#matches.set(word, kept);
    this.#kept += kept.length;
    this.#trim(this.#matches, word);
    return kept;
  }

  /** Drops the least recently used kept lists of `map` (never `current`) past the index's budget for them. */
  #trim(map: Map<string, Int32Array>, current: string): void {
    for (const [oldest, held] of map) {
      if ((map.size <= KEPT_WORDS && this.#kept <= this.#words.length + KEPT_SLACK) || oldest === current) break;
      map.delete(oldest);
      this.#kept -= held.length;
    }
  }

  /** Each fact's count of the stem, by position: computed once per stem at this version, then kept. */
  #countsOf(stem: WordStem): Int32Array {
    const key = `${stem.whole ? "=" : "^"}${stem.stem}`;
    let counts = this.#stemCounts.get(key);
    if (counts === undefined) {
      counts = new Int32Array(this.size);
      for (let position = 0; position < counts.length; position += 1) counts[position] = this.#count(position, stem);
      this.#kept += counts.length;
    } else this.#stemCounts.delete(key);
    this.#stemCounts.set(key, counts);
    this.#trim(this.#stemCounts, key);
    return counts;
  }

  /**
   * BM25 of the matches (`matchedIds`, FTS5's; ids of other namespaces and expired facts are left
   * out) for stems that `countableStem` accepts, in result order from `offset`, at most `limit`.
   */
  rank(matchedIds: Iterable<number>, stems: readonly WordStem[], now: number, limit: number, offset: number): RankedHit[] {
    const positions: number[] = [];
    for (const id of matchedIds) {
      const position = this.#positionOf.get(id);
      if (position !== undefined) positions.push(position);
    }
    return this.#rankPositions(positions, stems, now, limit, offset);
  }

  /** `rank` of the facts in any of the lists (`matchesOf`, `keepMatches`: one per query word, FTS5's OR as their union): no postings read. */
  rankKept(lists: readonly Int32Array[], stems: readonly WordStem[], now: number, limit: number, offset: number): RankedHit[] {
    let total = 0;
    for (const list of lists) total += list.length;
    const positions = new Int32Array(total);
    let at = 0;
    for (const list of lists) {
      positions.set(list, at);
      at += list.length;
    }
    return this.#rankPositions(positions, stems, now, limit, offset);
  }

  #rankPositions(positions: ArrayLike<number>, stems: readonly WordStem[], now: number, limit: number, offset: number): RankedHit[] {
    // The distinct matches that have not expired, by position (plain loops over typed arrays: a
    // thousand matches rank in some tens of µs).
    const seen = new Uint8Array(this.size);
    const expires = this.#expires;
    const chosen = new Int32Array(positions.length);
    let count = 0;
    for (let index = 0; index < positions.length; index += 1) {
      const position = positions[index] as number;
      if (seen[position] === 1 || (expires[position] as number) <= now) continue;
      seen[position] = 1;
      chosen[count] = position;
      count += 1;
    }
    const matched = chosen.subarray(0, count);
    // Each match's count of each stem, match by match, from the stems' kept counts.
    const width = stems.length;
    const counts = new Int32Array(count * width);
    for (let stemIndex = 0; stemIndex < width; stemIndex += 1) {
      const ofStem = this.#countsOf(stems[stemIndex] as WordStem);
      for (let index = 0; index < count; index += 1) counts[index * width + stemIndex] = ofStem[matched[index] as number] as number;
    }
    const lengths = new Int32Array(count);
    for (let index = 0; index < count; index += 1) lengths[index] = this.#lengths[matched[index] as number] as number;
    const scores = rankDocuments(lengths, counts, width, this.size);
    const ids = this.#ids;
    const updated = this.#updated;
    const order = (left: number, right: number): number =>
      (scores[right] as number) - (scores[left] as number) || (updated[matched[right] as number] as number) - (updated[matched[left] as number] as number) || (ids[matched[right] as number] as number) - (ids[matched[left] as number] as number);
    const candidates: number[] = new Array<number>(count);
    for (let index = 0; index < count; index += 1) candidates[index] = index;
    const best = bestOf(candidates, offset + limit, order);
    return best.slice(offset).map((index) => ({ id: ids[matched[index] as number] as number, updatedAt: updated[matched[index] as number] as number, score: scores[index] as number }));
  }
}

/** A namespace's entry: searched once at this version (no index yet), indexed, or too big to index. */
type CacheEntry = { version: string; state: "searched" } | { version: string; state: "indexed"; index: NamespaceIndex; cost: number } | { version: string; state: "too-big" };

/** Namespaces remembered at most (those searched once hold no index: a few bytes each). */
const MAX_ENTRIES = 4_096;

/**
 * The namespaces' indexes a store keeps, each with the version of the namespace it was built at
 * (a counter every write to the namespace raises, in the database: a write by another connection
 * or process is seen too). An index is built on the second search at a version, not the first: a
 * namespace written between every two searches is ranked from its texts as before, without
 * paying for an index nobody reuses. Least recently searched first out, within `maxPostings`.
 */
export class NamespaceIndexCache {
  readonly #entries = new Map<string, CacheEntry>();
  #postings = 0;

  constructor(readonly maxPostings: number) {}

  /** The namespace's index at `version`; undefined on the first search at a version, or when the namespace is too big to keep (rank from the texts). */
  at(prefix: string, version: string, facts: () => Iterable<IndexedFact>): NamespaceIndex | undefined {
    const entry = this.#entries.get(prefix);
    if (entry !== undefined) {
      this.#entries.delete(prefix);
      if (entry.state === "indexed") this.#postings -= entry.cost;
    }
    let kept: CacheEntry = { version, state: "searched" };
    if (entry !== undefined && entry.version === version) {
      if (entry.state === "searched") {
        const index = NamespaceIndex.build(facts(), this.maxPostings);
        kept = index === undefined ? { version, state: "too-big" } : { version, state: "indexed", index, cost: 0 };
      } else kept = entry;
    }
    this.#keep(prefix, kept);
    return kept.state === "indexed" ? kept.index : undefined;
  }

  /** Counts again what the namespace's index holds (a search kept a word's matches or a stem's counts in it), putting out the least recently searched past the budget. */
  charge(prefix: string): void {
    const entry = this.#entries.get(prefix);
    if (entry?.state !== "indexed") return;
    this.#entries.delete(prefix);
    this.#postings -= entry.cost;
    this.#keep(prefix, entry);
  }

  /** Postings the kept indexes hold in all (their words, and the matches and counts kept in them). */
  get postings(): number {
    return this.#postings;
  }

  #keep(prefix: string, entry: CacheEntry): void {
    this.#entries.set(prefix, entry);
    if (entry.state === "indexed") {
      entry.cost = entry.index.postings;
      this.#postings += entry.cost;
    }
    for (const [oldest, held] of this.#entries) {
      if ((this.#postings <= this.maxPostings && this.#entries.size <= MAX_ENTRIES) || oldest === prefix) break;
      this.#entries.delete(oldest);
      if (held.state === "indexed") this.#postings -= held.cost;
    }
  }
}
