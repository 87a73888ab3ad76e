/**
 * The store contract for a namespace's kept search (issue 35), run against SQLite and Postgres:
 * a search repeated at a namespace's version is answered from what the store kept (SQLite: each
 * word's matches in the namespace's index; Postgres: the query's ranked list), and must give
 * exactly what a store that never searched gives (the database's own engine): the same items in
 * the same order with the same scores, through writes by this store and by another one, expiry,
 * filters, paging, words the namespace lacks, stem variants and other keys' facts.
 */
import type { SearchItem } from "@langchain/langgraph-checkpoint";
import { afterEach, describe, expect, it } from "vitest";
import type { MemorySetup, Store } from "../../src/store/index.js";
import type { StoreFactory } from "./suite.js";

const WORDS = ["report", "reports", "reporting", "reported", "customer", "weekly", "budget", "region", "deploy", "team", "figure", "contact"];

/** A fact's text: a few words of WORDS, the account's number, and words every fact holds. */
function factText(n: number): string {
  const word = (salt: number) => WORDS[(n * 7 + salt * 5) % WORDS.length] as string;
  return `The ${word(1)} ${word(2)} for account ${n}: ${word(3)} ${n % 3 === 0 ? word(4) : ""} note.`;
}

/** What a user sees of a search: each item's namespace, key, text and score, in order. */
function seen(items: SearchItem[]): Array<[string, string, unknown, number]> {
  return items.map((item) => [item.namespace.join("."), item.key, item.value.text, Math.round((item.score ?? 0) * 1e9) / 1e9]);
}

const QUERIES = ["report", "reports weekly", "customer budget note", "account", "account 7", "reporting region team", "nothing here", "deploy contact figure 12"];

export function defineMemorySearchContract(name: string, factory: StoreFactory): void {
  describe(`store contract (a namespace's kept search): ${name}`, () => {
    const opened: Store[] = [];
    afterEach(async () => {
      for (const store of opened.splice(0).reverse()) await store.close();
    });
    let clock = 1_000_000;
    const memory: MemorySetup = { memory: { now: () => clock } };
    const setup = async (): Promise<{ store: Store; fresh: () => Promise<Store> }> => {
      const database = await factory.fresh();
      const open = async (): Promise<Store> => {
        const store = await database.open(memory);
        opened.push(store);
        return store;
      };
      return { store: await open(), fresh: open };
    };
    /** The search as the database's engine answers it: from a store that never searched (closed after). */
    const engine = async (fresh: () => Promise<Store>, namespace: string[], query: string, options: { limit?: number; offset?: number; filter?: Record<string, unknown> } = {}) => {
      const store = await fresh();
      try {
        return seen((await store.memoryStore.searchRanked(namespace, { query, ...options })).items);
      } finally {
        opened.splice(opened.indexOf(store), 1);
        await store.close();
      }
    };
    /** The search three times in a row on the same store (the first at a version, the second that keeps, the kept one): each the same. */
    const kept = async (store: Store, namespace: string[], query: string, options: { limit?: number; offset?: number; filter?: Record<string, unknown> } = {}) => {
      const first = seen((await store.memoryStore.searchRanked(namespace, { query, ...options })).items);
      for (let time = 0; time < 2; time += 1) expect(seen((await store.memoryStore.searchRanked(namespace, { query, ...options })).items)).toEqual(first);
      return first;
    };
    const fill = async (store: Store, namespace: string[], from: number, to: number): Promise<void> => {
      for (let n = from; n < to; n += 1) await store.memoryStore.put(namespace, `k${n}`, { text: factText(n) });
    };

    it("answers a repeated search exactly as the engine does, page by page, and another key's facts change nothing", async () => {
      clock = 1_000_000;
      const { store, fresh } = await setup();
      await fill(store, ["mem", "alice"], 0, 40);
      await fill(store, ["mem", "bob"], 0, 60);
      for (const query of QUERIES) {
        expect(await kept(store, ["mem", "alice"], query, { limit: 50 })).toEqual(await engine(fresh, ["mem", "alice"], query, { limit: 50 }));
        for (const [limit, offset] of [
          [5, 0],
          [5, 5],
          [7, 30],
          [10, 100],
        ] as const) {
          expect(await kept(store, ["mem", "alice"], query, { limit, offset })).toEqual(await engine(fresh, ["mem", "alice"], query, { limit, offset }));
        }
      }
      const before = await kept(store, ["mem", "alice"], "reports weekly", { limit: 50 });
      expect(before.length).toBeGreaterThan(5);
      // Another key's facts, holding the same words: alice's ranking is hers alone.
      await fill(store, ["mem", "bob"], 60, 120);
      expect(await kept(store, ["mem", "alice"], "reports weekly", { limit: 50 })).toEqual(before);
      expect(await engine(fresh, ["mem", "alice"], "reports weekly", { limit: 50 })).toEqual(before);
    });

    it("sees a write between searches, by this store or by another one on the database, in the namespace or under it", async () => {
      clock = 1_000_000;
      const { store, fresh } = await setup();
      const other = await fresh();
      await fill(store, ["mem", "alice"], 0, 30);
      const query = "weekly report account";
      const first = await kept(store, ["mem", "alice"], query, { limit: 10 });
      // This store writes: a fact that ranks among the first.
      await store.memoryStore.put(["mem", "alice"], "new", { text: "weekly report account weekly report account" });
      const afterOwn = await kept(store, ["mem", "alice"], query, { limit: 10 });
      expect(afterOwn.map((item) => item[1])).toContain("new");
      expect(afterOwn).toEqual(await engine(fresh, ["mem", "alice"], query, { limit: 10 }));
      // Another store (another process) deletes it and changes a fact.
      await other.memoryStore.delete(["mem", "alice"], "new");
      await other.memoryStore.put(["mem", "alice"], "k3", { text: "nothing of the kind" });
      const afterOther = await kept(store, ["mem", "alice"], query, { limit: 10 });
      expect(afterOther.map((item) => item[1])).not.toContain("new");
      expect(afterOther.map((item) => item[1])).not.toContain("k3");
      expect(afterOther).toEqual(await engine(fresh, ["mem", "alice"], query, { limit: 10 }));
      expect(afterOther).not.toEqual(first);
      // A namespace under it: the search of the parent reaches it.
      await other.memoryStore.put(["mem", "alice", "notes"], "child", { text: "weekly report from below, weekly report" });
      const afterChild = await kept(store, ["mem", "alice"], query, { limit: 10 });
      expect(afterChild.map((item) => item[1])).toContain("child");
      expect(afterChild).toEqual(await engine(fresh, ["mem", "alice"], query, { limit: 10 }));
    });

    it("leaves out facts that expired since the list was kept, as the engine does at that time", async () => {
      clock = 1_000_000;
      const { store, fresh } = await setup();
      await fill(store, ["mem", "alice"], 0, 20);
      await store.memoryStore.put(["mem", "alice"], "soon", { text: "budget budget budget report", expiresAt: clock + 500 });
      const query = "budget report";
      const early = await kept(store, ["mem", "alice"], query, { limit: 10 });
      expect(early[0]?.[1]).toBe("soon");
      expect(early).toEqual(await engine(fresh, ["mem", "alice"], query, { limit: 10 }));
      clock += 1_000;
      const late = await kept(store, ["mem", "alice"], query, { limit: 10 });
      expect(late.map((item) => item[1])).not.toContain("soon");
      expect(late).toEqual(await engine(fresh, ["mem", "alice"], query, { limit: 10 }));
    });

    it("filters on value fields as the engine does, and finds nothing for a word the namespace lacks", async () => {
      clock = 1_000_000;
      const { store, fresh } = await setup();
      for (let n = 0; n < 30; n += 1) await store.memoryStore.put(["mem", "alice"], `k${n}`, { text: factText(n), kind: n % 2 === 0 ? "even" : "odd" });
      await fill(store, ["mem", "bob"], 0, 10);
      await store.memoryStore.put(["mem", "bob"], "only-bob", { text: "zanzibar" });
      const filtered = await kept(store, ["mem", "alice"], "report weekly", { limit: 20, filter: { kind: "even" } });
      expect(filtered.length).toBeGreaterThan(0);
      expect(filtered).toEqual(await engine(fresh, ["mem", "alice"], "report weekly", { limit: 20, filter: { kind: "even" } }));
      expect(await kept(store, ["mem", "alice"], "zanzibar", { limit: 20 })).toEqual([]);
      expect(await kept(store, ["mem", "bob"], "zanzibar", { limit: 20 })).toEqual(await engine(fresh, ["mem", "bob"], "zanzibar", { limit: 20 }));
      // A stem's other forms: "reporting" finds the facts "report" and "reported" find, ranked as the engine ranks them.
      for (const query of ["reporting", "reported", "reports"]) expect(await kept(store, ["mem", "alice"], query, { limit: 30 })).toEqual(await engine(fresh, ["mem", "alice"], query, { limit: 30 }));
    });
  });
}
