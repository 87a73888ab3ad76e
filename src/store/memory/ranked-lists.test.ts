import { describe, expect, it } from "vitest";
import { better } from "./namespace-index.js";
import { type KeptHit, keptPage, RankedLists } from "./ranked-lists.js";

function hits(count: number, expiresAt = Number.POSITIVE_INFINITY): KeptHit[] {
  return Array.from({ length: count }, (_, index) => ({ id: index + 1, score: (index * 7) % 5, updatedAt: (index * 3) % 4, expiresAt }));
}

describe("RankedLists", () => {
  it("keeps a query's list on the second search at a version, sorted as the SQL sorts it, and forgets it when the version moves", () => {
    const lists = new RankedLists(100);
    expect(lists.entry("a")).toBeUndefined();
    lists.searched("a", "1/1");
    expect(lists.entry("a")).toEqual({ version: "1/1", state: "searched" });
    lists.keep("a", "1/1", hits(10));
    const entry = lists.entry("a");
    expect(entry?.state).toBe("kept");
    const kept = entry?.state === "kept" ? entry.hits : [];
    expect(kept).toEqual([...hits(10)].sort(better));
    expect(kept.map((hit) => hit.score)).toEqual([...kept.map((hit) => hit.score)].sort((left, right) => right - left));
    expect(lists.hits).toBe(10);
    lists.drop("a");
    expect(lists.entry("a")).toBeUndefined();
    expect(lists.hits).toBe(0);
  });

  it("holds at most its budget of matches, the least recently searched query going first; a list past a quarter of it is not kept", () => {
    const lists = new RankedLists(40);
    lists.keep("a", "1", hits(10));
    lists.keep("b", "1", hits(10));
    lists.keep("c", "1", hits(10));
    lists.entry("a");
    lists.keep("d", "1", hits(10));
    lists.keep("e", "1", hits(10));
    // Fifty past forty: b went (a was searched again since), c stayed.
    expect(lists.hits).toBe(40);
    expect(lists.entry("b")).toBeUndefined();
    expect(lists.entry("c")?.state).toBe("kept");
    expect(lists.entry("a")?.state).toBe("kept");
    lists.keep("big", "1", hits(11));
    expect(lists.entry("big")).toEqual({ version: "1", state: "too-big" });
    expect(lists.hits).toBe(40);
  });
});

describe("keptPage", () => {
  it("pages past expired matches: from the offset among those alive at the time", () => {
    const all = [...hits(6).slice(0, 3), ...hits(3, 500).map((hit) => ({ ...hit, id: hit.id + 10 }))].sort(better);
    const alive = all.filter((hit) => hit.expiresAt > 1_000);
    expect(keptPage(all, 1_000, 10, 0)).toEqual(alive);
    expect(keptPage(all, 1_000, 2, 1)).toEqual(alive.slice(1, 3));
    expect(keptPage(all, 100, 4, 2)).toEqual(all.slice(2, 6));
    expect(keptPage(all, 1_000, 5, 10)).toEqual([]);
  });
});
