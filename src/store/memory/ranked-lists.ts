import { better } from "./namespace-index.js";

/**
 * Postgres's ranked matches of a query in a namespace, kept between searches while the namespace
 * does not change (its version in `memory_versions`, raised by every write: Postgres migration 18).
 * Postgres ranks a match by `ts_rank`, which reads the match alone (no statistics of the others),
 * so the list is its own: the same ids, scores and order a search asks for again. A search of a
 * kept query then reads the version and its page's rows, not every match's rank (at 1,000 facts
 * that each held a query word, most of a search's time, and growing with the namespace).
 */

/** A kept match: its id, Postgres's score, when it was updated and when it expires (Infinity: never). */
export interface KeptHit {
  id: number;
  score: number;
  updatedAt: number;
  expiresAt: number;
}

/** A query's entry: searched once at this version (nothing kept yet), kept, or too many matches to keep. */
type Entry = { version: string; state: "searched" } | { version: string; state: "kept"; hits: KeptHit[] } | { version: string; state: "too-big" };

/** Queries remembered at most (those searched once keep no list: a few bytes each). */
const MAX_ENTRIES = 4_096;

/**
 * Ranked lists by namespace and query, least recently searched first out within `maxHits` matches
 * in all. A list is kept on the second search of a query at a version, not the first: a namespace
 * written between every two searches pays for no list nobody reuses.
 */
export class RankedLists {
  readonly #entries = new Map<string, Entry>();
  #hits = 0;

  constructor(readonly maxHits: number) {}

  /** Matches kept in all. */
  get hits(): number {
    return this.#hits;
  }

  /** The query's entry (marked recently used), or undefined. */
  entry(key: string): Readonly<Entry> | undefined {
    const entry = this.#entries.get(key);
    if (entry !== undefined) {
      this.#entries.delete(key);
      this.#entries.set(key, entry);
    }
    return entry;
  }

  /** Remembers that the query was searched at `version` (its next search there keeps its list). */
  searched(key: string, version: string): void {
    this.#set(key, { version, state: "searched" });
  }

  /** Keeps the query's ranked list at `version` (sorted here), or remembers it as too big to keep. */
  keep(key: string, version: string, hits: KeptHit[]): void {
    this.#set(key, hits.length > this.maxHits / 4 ? { version, state: "too-big" } : { version, state: "kept", hits: hits.sort(better) });
  }

  /** Forgets the query's entry (its namespace changed). */
  drop(key: string): void {
    const entry = this.#entries.get(key);
    if (entry === undefined) return;
    this.#entries.delete(key);
    if (entry.state === "kept") this.#hits -= entry.hits.length;
  }

  #set(key: string, entry: Entry): void {
    this.drop(key);
    this.#entries.set(key, entry);
    if (entry.state === "kept") this.#hits += entry.hits.length;
    for (const [oldest, held] of this.#entries) {
      if ((this.#hits <= this.maxHits && this.#entries.size <= MAX_ENTRIES) || oldest === key) break;
      this.#entries.delete(oldest);
      if (held.state === "kept") this.#hits -= held.hits.length;
    }
  }
}

/** The page of a kept list at `now`: expired matches left out (a match's score does not depend on the others), from `offset`, at most `limit`. */
export function keptPage(hits: readonly KeptHit[], now: number, limit: number, offset: number): KeptHit[] {
  const page: KeptHit[] = [];
  let skipped = 0;
  for (const hit of hits) {
    if (page.length === limit) break;
    if (hit.expiresAt <= now) continue;
    if (skipped < offset) skipped += 1;
    else page.push(hit);
  }
  return page;
}
