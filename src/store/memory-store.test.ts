import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir } from "../../test/helpers.js";
import { memoryNamespace } from "../core/memory.js";
import { HashingEmbeddings } from "../testing/hashing-embeddings.js";
import { openStore, type Store, type StoreOptions } from "./index.js";

const opened: Store[] = [];
afterEach(() => {
  for (const store of opened.splice(0)) store.close();
});

function open(options: StoreOptions = {}, directory = tempDir("troupe-memory-")): Store {
  const store = openStore(directory, options);
  opened.push(store);
  return store;
}

const alice = memoryNamespace({ kind: "key", name: "alice" });
const bob = memoryNamespace({ kind: "key", name: "bob" });

describe("SqliteMemoryStore (a LangGraph BaseStore)", () => {
  it("puts, gets, searches by words with BM25, lists namespaces and deletes", async () => {
    const { memoryStore } = open();
    await memoryStore.put(["docs", "a"], "k1", { text: "the capital of Atlantis is Poseidonia" });
    await memoryStore.put(["docs", "a"], "k2", { text: "the ferry leaves at noon" });
    await memoryStore.put(["docs", "b"], "k3", { text: "capital letters are uppercase" });
    const item = await memoryStore.get(["docs", "a"], "k1");
    expect(item?.value).toEqual({ text: "the capital of Atlantis is Poseidonia" });
    expect(item?.createdAt).toBeInstanceOf(Date);
    const found = await memoryStore.search(["docs", "a"], { query: "What is the capital of Atlantis?" });
    expect(found.map((hit) => hit.key)).toEqual(["k1"]);
    expect(found[0]?.score).toBeGreaterThan(0);
    // A prefix reaches the namespaces below it.
    expect((await memoryStore.search(["docs"], { query: "capital" })).map((hit) => hit.key).sort()).toEqual(["k1", "k3"]);
    expect(await memoryStore.listNamespaces({ prefix: ["docs"] })).toEqual([["docs", "a"], ["docs", "b"]]);
    expect(await memoryStore.listNamespaces({ maxDepth: 1 })).toEqual([["docs"]]);
    await memoryStore.delete(["docs", "a"], "k1");
    expect(await memoryStore.get(["docs", "a"], "k1")).toBeNull();
    expect(await memoryStore.search(["docs", "a"], { query: "Atlantis" })).toEqual([]);
  });

  it("updates in place (created kept, updated moved) and filters on value fields", async () => {
    let now = 1_000;
    const { memoryStore } = open({ memory: { now: () => now } });
    await memoryStore.put(["n"], "k", { text: "v1", kind: "a", rank: 1 });
    now = 2_000;
    await memoryStore.put(["n"], "k", { text: "v2", kind: "a", rank: 5 });
    const item = await memoryStore.get(["n"], "k");
    expect([item?.value.text, item?.createdAt.getTime(), item?.updatedAt.getTime()]).toEqual(["v2", 1_000, 2_000]);
    await memoryStore.put(["n"], "j", { text: "other", kind: "b", rank: 2 });
    expect((await memoryStore.search(["n"], { filter: { kind: "a" } })).map((hit) => hit.key)).toEqual(["k"]);
    expect((await memoryStore.search(["n"], { filter: { rank: { $gt: 3 } } })).map((hit) => hit.key)).toEqual(["k"]);
    await expect(memoryStore.search(["n"], { filter: { "bad'field": 1 } })).rejects.toMatchObject({ code: "invalid_filter" });
  });

  it("caps the items of a namespace and the size of an item, with clear codes, even under concurrent writes", async () => {
    const { memoryStore } = open({ memory: { limits: { maxItemsPerNamespace: 5, maxValueBytes: 200 } } });
    const writes = await Promise.allSettled(Array.from({ length: 12 }, (_, index) => memoryStore.put(["n"], `k${index}`, { text: `fact ${index}` })));
    expect(writes.filter((write) => write.status === "fulfilled")).toHaveLength(5);
    const refused = writes.find((write) => write.status === "rejected") as PromiseRejectedResult;
    expect(refused.reason).toMatchObject({ code: "memory_full", data: { limit: 5 } });
    expect(await memoryStore.count(["n"])).toBe(5);
    // Updating an item of a full namespace is not adding one.
    await memoryStore.put(["n"], "k0", { text: "fact zero, again" });
    // Another namespace has its own count.
    await memoryStore.put(["m"], "k", { text: "elsewhere" });
    await expect(memoryStore.put(["m"], "big", { text: "x".repeat(500) })).rejects.toMatchObject({ code: "memory_item_too_large" });
  });

  it("writes a batch of puts in one transaction: all of them, or none", async () => {
    const { memoryStore } = open({ memory: { limits: { maxItemsPerNamespace: 2 } } });
    await memoryStore.batch([
      { namespace: ["n"], key: "a", value: { text: "first" } },
      { namespace: ["n"], key: "b", value: { text: "second" } },
    ]);
    expect(await memoryStore.count(["n"])).toBe(2);
    const over = memoryStore.batch([
      { namespace: ["m"], key: "a", value: { text: "one" } },
      { namespace: ["m"], key: "b", value: { text: "two" } },
      { namespace: ["m"], key: "c", value: { text: "three" } },
    ]);
    await expect(over).rejects.toMatchObject({ code: "memory_full" });
    expect(await memoryStore.count(["m"])).toBe(0);
    // Reads and writes together run in order.
    const [, read] = await memoryStore.batch([{ namespace: ["n"], key: "a", value: null }, { namespace: ["n"], key: "a" }]);
    expect(read).toBeNull();
  });

  it("never returns an expired item, and an expired item frees its place", async () => {
    let now = 10_000;
    const { memoryStore } = open({ memory: { now: () => now, limits: { maxItemsPerNamespace: 1 } } });
    await memoryStore.put(["n"], "k", { text: "short-lived fact", expiresAt: 15_000 });
    expect((await memoryStore.get(["n"], "k"))?.value.text).toBe("short-lived fact");
    now = 15_000;
    expect(await memoryStore.get(["n"], "k")).toBeNull();
    expect(await memoryStore.search(["n"], { query: "fact" })).toEqual([]);
    expect(await memoryStore.count(["n"])).toBe(0);
    await memoryStore.put(["n"], "j", { text: "a new fact" });
    expect(await memoryStore.count(["n"])).toBe(1);
  });

  it("takes any words as a query: operators, quotes and punctuation are words, not FTS syntax", async () => {
    const { memoryStore } = open();
    await memoryStore.put(["n"], "k", { text: "NEAR the OR gate, \"quoted\" AND (parenthesised)" });
    for (const query of ['"', "NEAR(", "a AND OR NOT", "*", "((", "gate)", "-- ; DROP TABLE memory_items", "ü", "".padEnd(2_000, "é ")]) {
      await expect(memoryStore.search(["n"], { query })).resolves.toBeInstanceOf(Array);
    }
    expect((await memoryStore.search(["n"], { query: "gate OR" })).map((hit) => hit.key)).toEqual(["k"]);
  });

  it("is hybrid with an embeddings model: it finds by meaning what words miss, and says so", async () => {
    const embeddings = new HashingEmbeddings();
    const { memories } = open({ memory: { index: { embeddings, model: "test:hashing" } } });
    await memories.save(alice, { text: "Alice's favourite colour is teal", subject: "alice's favourite colour" });
    await memories.save(alice, { text: "The office opens at nine", subject: "office hours" });
    // "favorite color" shares no word with the fact (the stemmer keeps colour and color apart), but its letters are close.
    const found = await memories.search(alice, "favorite color");
    expect(found.retrieval).toBe("hybrid");
    expect(found.items[0]?.text).toBe("Alice's favourite colour is teal");
    const lexicalOnly = open();
    await lexicalOnly.memories.save(alice, { text: "Alice's favourite colour is teal" });
    expect(await lexicalOnly.memories.search(alice, "favorite color")).toEqual({ items: [], retrieval: "lexical" });
  });

  it("falls back to lexical, with a note, when the embeddings model fails", async () => {
    const failing = new HashingEmbeddings();
    const { memories } = open({ memory: { index: { embeddings: failing, model: "test:hashing" } } });
    await memories.save(alice, { text: "the capital of Atlantis is Poseidonia" });
    failing.embedQuery = async () => {
      throw new Error("503 from the embeddings server");
    };
    const found = await memories.search(alice, "capital of Atlantis");
    expect(found.retrieval).toBe("lexical");
    expect(found.note).toContain("503 from the embeddings server");
    expect(found.items).toHaveLength(1);
  });
});

describe("Memories (troupe's facts over the store)", () => {
  it("keeps each namespace to itself", async () => {
    const { memories } = open();
    const saved = await memories.save(alice, { text: "the launch code is 0000", subject: "launch code" });
    expect((await memories.search(bob, "launch code")).items).toEqual([]);
    expect(await memories.get(bob, saved.item.id)).toBeNull();
    expect(await memories.forget(bob, saved.item.id)).toBe(false);
    expect((await memories.list(bob)).total).toBe(0);
    expect((await memories.search(alice, "launch code")).items.map((item) => item.id)).toEqual([saved.item.id]);
  });

  it("updates a fact about the same subject instead of repeating it", async () => {
    const { memories } = open();
    const first = await memories.save(alice, { text: "my favourite colour is blue", subject: "my favourite colour", sourceRun: "run-1" });
    const second = await memories.save(alice, { text: "my favourite colour is green", subject: "My  favourite colour", sourceRun: "run-2" });
    expect([first.created, second.created, second.item.id]).toEqual([true, false, first.item.id]);
    expect(second.item).toMatchObject({ text: "my favourite colour is green", sourceRun: "run-2" });
    expect((await memories.list(alice)).total).toBe(1);
  });

  it("refuses empty, oversized and malformed input with clear codes", async () => {
    const { memories } = open({ memory: { maxItemBytes: 100 } });
    await expect(memories.save(alice, { text: "   " })).rejects.toMatchObject({ code: "invalid_memory" });
    await expect(memories.save(alice, { text: "é".repeat(60) })).rejects.toMatchObject({ code: "memory_item_too_large", data: { bytes: 120, limit: 100 } });
    await expect(memories.save(alice, { text: "x", ttlSeconds: -1 })).rejects.toMatchObject({ code: "invalid_memory" });
    await expect(memories.save(alice, { text: "x", extra: 1 } as never)).rejects.toMatchObject({ code: "invalid_memory" });
    await expect(memories.get(alice, "../../etc")).rejects.toMatchObject({ code: "invalid_memory_id" });
    await expect(memories.search(alice, "  ")).rejects.toMatchObject({ code: "empty_query" });
    await expect(memories.search(alice, "q".repeat(1_001))).rejects.toMatchObject({ code: "query_too_long" });
  });

  it("says clearly when the store is damaged or its tables are gone, never answering empty", async () => {
    const directory = tempDir("troupe-memory-");
    const store = open({}, directory);
    await store.memories.save(alice, { text: "a fact to lose" });
    store.db.exec("DROP TABLE memory_fts");
    await expect(store.memories.search(alice, "fact")).rejects.toMatchObject({ code: "memory_store_missing" });
    store.db.exec("DROP TABLE memory_items");
    await expect(store.memories.list(alice)).rejects.toMatchObject({ code: "memory_store_missing" });
    store.close();
    // A file that is not a database at all cannot be opened.
    const broken = tempDir("troupe-memory-");
    writeFileSync(path.join(broken, "troupe.db"), "this is not a database, just some text that SQLite cannot read as one".repeat(100));
    expect(() => open({}, broken)).toThrow(/not a database|cannot open the database/);
  });
});
