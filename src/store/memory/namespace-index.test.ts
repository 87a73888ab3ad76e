import { describe, expect, it } from "vitest";
import { queryWords } from "./contract.js";
import { countableStem, namespaceBm25, stemsOf } from "./namespace-bm25.js";
import { bestOf, better, type IndexedFact, NamespaceIndex, NamespaceIndexCache, type RankedHit } from "./namespace-index.js";

/** Texts with what a fact may hold: forms of a word, numbers inside and beside words, accents, other scripts, "_", a surrogate pair, a dotted capital I. */
const TEXTS = [
  "The customer prefers weekly reports; REPORTED twice, reporting daily.",
  "Report 7 of account 17: the 7th reporter's report.",
  "naïve café owners in İstanbul prefer reports in Turkish",
  "weekly_reports are filed by the team (reports-team)",
  "東京 office reports 週報 weekly",
  "math 𝐀𝐁 reports and ＦＵＬＬＷＩＤＴＨ reports",
  "",
  "reportage about reporters: a long text with many words that are not the query at all, repeated words words words",
  "7 7 7 seven",
  "prefers preferring preferred preference",
];

function facts(texts: readonly string[]): IndexedFact[] {
  return texts.map((text, index) => ({ id: 100 + index, text, updatedAt: 1_000 + (index % 3), expiresAt: null }));
}

/** The ranking from the texts, as the store made it before the index: every match scored from its text, all sorted. */
function fromTexts(rows: IndexedFact[], matched: readonly number[], query: string, total: number): RankedHit[] {
  const hits = rows.filter((row) => matched.includes(row.id));
  const scores = namespaceBm25(
    hits.map((row) => row.text ?? ""),
    queryWords(query),
    total,
  );
  return hits
    .map((row, index) => ({ id: row.id, updatedAt: row.updatedAt, score: scores[index] ?? 0 }))
    .sort((left, right) => right.score - left.score || right.updatedAt - left.updatedAt || right.id - left.id);
}

describe("NamespaceIndex", () => {
  it("ranks matches exactly as their texts do: the same order and the same scores", () => {
    const rows = facts(TEXTS);
    const index = NamespaceIndex.build(rows, 10_000) as NamespaceIndex;
    expect(index.size).toBe(TEXTS.length);
    const everyId = rows.map((row) => row.id);
    for (const query of ["reports", "prefers weekly", "report 7", "istanbul cafe naïve", "東京 reports", "fullwidth reports", "words query seven 7", "reporter reportage", "the"]) {
      const stems = stemsOf(queryWords(query));
      expect(stems.every(countableStem)).toBe(true);
      // As if FTS5 matched every fact, and as if it matched every other one.
      for (const matched of [everyId, everyId.filter((_, position) => position % 2 === 0)]) {
        expect(index.rank(matched, stems, 0, 100, 0)).toEqual(fromTexts(rows, matched, query, TEXTS.length));
      }
    }
  });

  it("pages from an offset, leaves out ids of other namespaces and expired facts", () => {
    const rows = facts(TEXTS).map((row, position) => (position === 0 ? { ...row, expiresAt: 5_000 } : row));
    const index = NamespaceIndex.build(rows, 10_000) as NamespaceIndex;
    const stems = stemsOf(queryWords("reports"));
    const all = index.rank([...rows.map((row) => row.id), 9_999], stems, 1_000, 100, 0);
    expect(all.map((hit) => hit.id)).toContain(100);
    expect(all.map((hit) => hit.id)).not.toContain(9_999);
    expect(index.rank(rows.map((row) => row.id), stems, 1_000, 2, 1)).toEqual(all.slice(1, 3));
    expect(index.rank(rows.map((row) => row.id), stems, 5_000, 100, 0).map((hit) => hit.id)).not.toContain(100);
  });

  it("says which stems it cannot count: a word with \"_\", a letter outside the basic plane", () => {
    expect(stemsOf(queryWords("weekly_reports")).every(countableStem)).toBe(false);
    expect(stemsOf(queryWords("𝐀𝐁")).every(countableStem)).toBe(false);
    expect(stemsOf(queryWords("İstanbul 東京 7")).every(countableStem)).toBe(true);
  });

  it("ranks a union of kept word matches exactly as it ranks FTS5's ids for the whole query", () => {
    const rows = facts(TEXTS);
    const index = NamespaceIndex.build(rows, 10_000) as NamespaceIndex;
    const holds = (word: string) => rows.filter((row) => (row.text ?? "").toLowerCase().includes(word)).map((row) => row.id);
    for (const query of ["reports weekly", "prefers 7", "report reporter reportage", "seven naïve"]) {
      const words = queryWords(query);
      const stems = stemsOf(words);
      const lists = words.map((word) => index.matchesOf(word) ?? index.keepMatches(word, [...holds(word), 9_999]));
      const union = [...new Set(words.flatMap(holds))];
      for (const [limit, offset] of [[100, 0], [2, 0], [3, 2]] as const) {
        expect(index.rankKept(lists, stems, 0, limit, offset)).toEqual(index.rank(union, stems, 0, limit, offset));
      }
      // The second search of each word reads the kept list.
      for (const word of words) expect(index.matchesOf(word)).toBe(lists[words.indexOf(word)]);
    }
  });

  it("keeps at most 64 words' matches, the least recently searched going first, and counts them in its postings", () => {
    const index = NamespaceIndex.build(facts(TEXTS), 10_000) as NamespaceIndex;
    const words = index.postings;
    index.keepMatches("first", [100, 101, 102]);
    expect(index.postings).toBe(words + 3);
    for (let word = 0; word < 63; word += 1) index.keepMatches(`w${word}`, [100]);
    index.matchesOf("w0");
    index.keepMatches("one-more", [100]);
    // 65 words: "first" (searched least recently) went; w0, searched again, stayed.
    expect(index.matchesOf("first")).toBeUndefined();
    expect(index.matchesOf("w0")).toBeDefined();
    expect(index.matchesOf("w1")).toBeDefined();
    expect(index.postings).toBe(words + 64);
  });

  it("is not built past its postings' budget", () => {
    expect(NamespaceIndex.build(facts(["one two three", "four five six"]), 5)).toBeUndefined();
    expect(NamespaceIndex.build(facts(["one two three", "four five six"]), 6)?.postings).toBe(6);
  });
});

describe("NamespaceIndexCache", () => {
  it("builds on the second search at a version, again when the version moves, and lets the least recently searched go past its budget", () => {
    const cache = new NamespaceIndexCache(10);
    let builds = 0;
    const source = (texts: string[]) => () => {
      builds += 1;
      return facts(texts);
    };
    // The first search at a version ranks from the texts; the second builds; the third reuses.
    expect(cache.at("a", "1", source(["one two three"]))).toBeUndefined();
    const first = cache.at("a", "1", source(["one two three"]));
    expect(first?.size).toBe(1);
    expect(cache.at("a", "1", source(["ignored"]))).toBe(first);
    expect(builds).toBe(1);
    // A write moved the version: texts once, then a new index.
    expect(cache.at("a", "2", source(["one two three four"]))).toBeUndefined();
    expect(cache.at("a", "2", source(["one two three four"]))?.postings).toBe(4);
    expect(builds).toBe(2);
    cache.at("b", "1", source(["five six seven"]));
    cache.at("b", "1", source(["five six seven"]));
    // a (4 postings) and b (3) fit; c (4) pushes out a, the least recently searched.
    cache.at("c", "1", source(["eight nine ten eleven"]));
    cache.at("c", "1", source(["eight nine ten eleven"]));
    expect(cache.at("b", "1", source([]))?.postings).toBe(3);
    expect(builds).toBe(4);
    expect(cache.at("a", "2", source(["one two three four"]))).toBeUndefined();
    // A namespace bigger than the whole budget is not kept, and not built again at the same version.
    cache.at("big", "1", source(["a b c d e f g h i j k l"]));
    expect(cache.at("big", "1", source(["a b c d e f g h i j k l"]))).toBeUndefined();
    expect(cache.at("big", "1", source(["a b c d e f g h i j k l"]))).toBeUndefined();
    expect(builds).toBe(5);
  });
});

describe("NamespaceIndexCache's budget", () => {
  it("counts the matches a search kept in an index, and puts out the least recently searched namespace for them", () => {
    const cache = new NamespaceIndexCache(12);
    const source = (texts: string[]) => () => facts(texts);
    for (const prefix of ["a", "b"]) {
      cache.at(prefix, "1", source(["one two three four"]));
      cache.at(prefix, "1", source(["one two three four"]));
    }
    expect(cache.postings).toBe(8);
    const b = cache.at("b", "1", source([])) as NamespaceIndex;
    b.keepMatches("one", [100]);
    cache.charge("b");
    expect(cache.postings).toBe(9);
    // Four more kept numbers in b (a list holds each fact once): 13 past 12, so a (searched least recently) goes.
    b.keepMatches("two", [100, 100, 100]);
    b.keepMatches("three", [100]);
    b.keepMatches("four", [100]);
    b.keepMatches("five", [100]);
    cache.charge("b");
    expect(cache.postings).toBe(9);
    expect(cache.at("b", "1", source([]))).toBe(b);
    expect(cache.at("a", "1", source(["one two three four"]))).toBeUndefined();
  });
});

describe("bestOf", () => {
  it("gives the first hits of the full sort, ties broken by update time then id", () => {
    const hits: RankedHit[] = Array.from({ length: 500 }, (_, index) => ({ id: index, updatedAt: (index * 7) % 5, score: ((index * 31) % 13) / 4 }));
    const sorted = [...hits].sort((left, right) => right.score - left.score || right.updatedAt - left.updatedAt || right.id - left.id);
    expect(hits.map((hit) => hit.score)).toContain(0);
    for (const wanted of [0, 1, 10, 37, 124, 125, 499, 600]) expect(bestOf(hits, wanted, better)).toEqual(sorted.slice(0, wanted));
  });
});
