import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir } from "../../../test/helpers.js";
import { memoryNamespace } from "../../core/memory.js";
import { memoryKey, openSqliteStore, type SqliteStore } from "../index.js";

const opened: SqliteStore[] = [];
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close();
});

function open(directory = tempDir("troupe-memory-")): SqliteStore {
  const store = openSqliteStore(directory);
  opened.push(store);
  return store;
}

const alice = memoryNamespace({ kind: "key", name: "alice" });

// What every memory store does is in the store contract suite (test/store-contract/), on SQLite and on Postgres.
describe("SqliteMemoryStore", () => {
  it("says clearly when the store is damaged or its tables are gone, never answering empty", async () => {
    const store = open();
    await store.memories.save(alice, { text: "a fact to lose" });
    store.db.exec("DROP TABLE memory_fts");
    await expect(store.memories.search(alice, "fact")).rejects.toMatchObject({ code: "memory_store_missing" });
    store.db.exec("DROP TABLE memory_items");
    await expect(store.memories.list(alice)).rejects.toMatchObject({ code: "memory_store_missing" });
    // A file that is not a database at all cannot be opened.
    const broken = tempDir("troupe-memory-");
    writeFileSync(path.join(broken, "troupe.db"), "this is not a database, just some text that SQLite cannot read as one".repeat(100));
    expect(() => open(broken)).toThrow(/not a database|cannot open the database/);
  });

  it("searches the caller's namespace only, however many facts other keys hold with the same words", async () => {
    const store = open();
    const bob = memoryNamespace({ kind: "key", name: "bob" });
    const alicex = memoryNamespace({ kind: "key", name: "alicex" });
    for (let index = 0; index < 30; index += 1) await store.memories.save(bob, { text: `bob's customer prefers weekly reports, number ${index}` });
    await store.memories.save(alicex, { text: "alicex's customer prefers weekly reports too" });
    await store.memories.save(alice, { text: "the customer prefers weekly reports" });
    await store.memories.save([...alice, "project"], { text: "for the project, the customer prefers daily reports" });
    await store.memories.save(alice, { text: "the invoices go out monthly" });
    const found = await store.memories.search(alice, "which reports does the customer prefer");
    // Not bob's (30 facts with the same words), not alicex's (a name that starts the same), not the namespace below alice's.
    expect(found.items.map((item) => item.text)).toEqual(["the customer prefers weekly reports"]);
    expect((await store.memories.search(bob, "customer reports", { limit: 10 })).items).toHaveLength(10);
    expect((await store.memories.search(memoryNamespace({ kind: "key", name: "carol" }), "customer reports")).items).toEqual([]);
  });

  it("ranks by the caller's facts alone: another key's facts change neither the order nor the scores", async () => {
    const store = open();
    const bob = memoryNamespace({ kind: "key", name: "bob" });
    await store.memories.save(alice, { text: "the invoices go out monthly" });
    await store.memories.save(alice, { text: "the invoices for the Lisbon office are paid in euros" });
    await store.memories.save(alice, { text: "the Lisbon office opens at nine" });
    await store.memories.save(alice, { text: "deploys happen on Tuesdays" });
    const ranked = async () => (await store.memories.search(alice, "Lisbon invoices", { limit: 10 })).items.map((item) => ({ text: item.text, score: item.score }));
    const before = await ranked();
    // Both words first; then one each, equally rare among alice's facts (two each): the shorter fact first.
    expect(before.map((item) => item.text)).toEqual(["the invoices for the Lisbon office are paid in euros", "the invoices go out monthly", "the Lisbon office opens at nine"]);
    expect(before.every((item) => item.score > 0)).toBe(true);
    // Bob's 40 facts about invoices would make "invoices" common deployment-wide: alice's ranking is hers.
    for (let index = 0; index < 40; index += 1) await store.memories.save(bob, { text: `invoices batch ${index} is sent` });
    expect(await ranked()).toEqual(before);
    // A word found in one of alice's facts outweighs one found in most of them, whatever the length.
    await store.memories.save(alice, { text: "invoices are numbered" });
    await store.memories.save(alice, { text: "deploys on Tuesdays are announced in the office" });
    const rare = (await store.memories.search(alice, "invoices announced", { limit: 5 })).items.map((item) => item.text);
    expect(rare[0]).toBe("deploys on Tuesdays are announced in the office");
  });

  it("ranks by the caller's own namespace: facts of a namespace that merely contains its name (another key's, below its own root) change nothing", async () => {
    const store = open();
    const bob = memoryNamespace({ kind: "key", name: "bob" });
    await store.memories.save(alice, { text: "apple apple apple stock" });
    await store.memories.save(alice, { text: "pear tart" });
    await store.memories.save(alice, { text: "apple pie" });
    const once = async () => (await store.memoryStore.searchRanked(alice, { query: "apple pear", limit: 10 })).items.map((item) => ({ text: item.value.text, score: item.score }));
    // Twice: from the texts, then from the namespace's index.
    const ranked = async () => {
      const fromTexts = await once();
      expect(await once()).toEqual(fromTexts);
      return fromTexts;
    };
    const before = await ranked();
    // Among alice's three facts "pear" (in one) is rarer than "apple" (in two): the pear fact first.
    expect(before.map((item) => item.text)).toEqual(["pear tart", "apple apple apple stock", "apple pie"]);
    // Bob keeps 40 notes in a namespace of his own whose labels end with alice's: her full-text
    // phrase matches them. Counted as hers they made both words rare alike, and the fact saying
    // "apple" three times came first.
    for (let index = 0; index < 40; index += 1) await store.memories.save([...bob, ...alice], { text: `note ${index} about nothing` });
    expect(await ranked()).toEqual(before);
  });

  it("ranks the same from its kept index as from the texts: a write by another connection, a bulk INSERT, expiry and a filter are all seen", async () => {
    const directory = tempDir("troupe-memory-");
    const store = open(directory);
    const other = open(directory);
    let now = Date.now();
    // Each search twice: the first at a namespace's version ranks from the texts, the second from the index it then builds.
    const search = async (target: SqliteStore, query: string, filter?: Record<string, unknown>) => {
      const once = async () => (await target.memoryStore.searchRanked(alice, { query, limit: 10, ...(filter ? { filter } : {}) })).items.map((item) => [item.key, item.score]);
      const fromTexts = await once();
      expect(await once()).toEqual(fromTexts);
      return fromTexts;
    };
    await store.memories.save(alice, { text: "the customer prefers weekly reports", subject: "reports" });
    await store.memories.save(alice, { text: "reported: the Lisbon office is closed on Mondays", subject: "lisbon" });
    const first = await search(store, "reports Lisbon");
    expect(first.map(([key]) => key)).toHaveLength(2);
    // Another connection (another process would do the same) adds a fact: the next search has it.
    await other.memories.save(alice, { text: "reports from Lisbon arrive late", subject: "late" });
    const second = await search(store, "reports Lisbon");
    expect(second).toHaveLength(3);
    expect(second).toEqual(await search(other, "reports Lisbon"));
    // A row written straight into the table (as the benchmark's loader does): seen too.
    const template = store.db.prepare("SELECT value, created_at FROM memory_items WHERE key = ?").get(memoryKey("late")) as { value: string; created_at: number };
    store.db.prepare("INSERT INTO memory_items (prefix, key, value, text, created_at, updated_at) VALUES (?, 'bulk-1', ?, ?, ?, ?)").run(
      alice.join("."),
      JSON.stringify({ ...(JSON.parse(template.value) as Record<string, unknown>), text: "Lisbon Lisbon reports", subject: "bulk" }),
      "Lisbon Lisbon reports",
      template.created_at,
      template.created_at,
    );
    expect((await search(store, "reports Lisbon"))[0]?.[0]).toBe("bulk-1");
    // A word with "_" is counted from the texts (the index's words never hold one): same answer shape.
    expect(await search(store, "weekly_reports")).toEqual(await search(other, "weekly_reports"));
    // A namespace whose last label has no word of its own is found by its whole name.
    await store.memoryStore.put(["n", "--"], "k", { text: "reports in a namespace without words" });
    await store.memoryStore.put(["n", "other"], "k", { text: "reports elsewhere" });
    expect((await store.memoryStore.searchRanked(["n", "--"], { query: "reports" })).items.map((item) => item.value.text)).toEqual(["reports in a namespace without words"]);
    // A filter on the value's fields, and an expired fact left out.
    expect((await search(store, "reports", { subject: "late" })).map(([key]) => key)).toEqual([memoryKey("late")]);
    // A store whose clock the test moves (the fact's expiry is set from the real one, a minute ahead).
    const expiring = openSqliteStore(directory, { memory: { now: () => now } });
    opened.push(expiring);
    await expiring.memories.save(alice, { text: "reports expire soon", subject: "soon", ttlSeconds: 60 });
    expect((await search(expiring, "expire")).map(([key]) => key)).toEqual([memoryKey("soon")]);
    now += 61_000;
    expect(await search(expiring, "expire")).toEqual([]);
  });

  it("ranks facts written before migration 29 (no namespace versions yet), and sees the first write after it", async () => {
    const directory = tempDir("troupe-memory-");
    const before = open(directory);
    await before.memories.save(alice, { text: "the customer prefers weekly reports", subject: "reports" });
    await before.memories.save(alice, { text: "the Lisbon office reports monthly", subject: "lisbon" });
    const expected = await before.memoryStore.searchRanked(alice, { query: "Lisbon reports", limit: 10 });
    // The database as troupe left it before migration 29.
    before.db.exec("DROP TRIGGER memory_items_version_insert; DROP TRIGGER memory_items_version_delete; DROP TRIGGER memory_items_version_update; DROP TABLE memory_versions; DELETE FROM schema_version WHERE version = 29");
    await before.memories.save(alice, { text: "an old fact about Lisbon", subject: "old" });
    await before.close();
    opened.splice(opened.indexOf(before), 1);
    const after = open(directory);
    expect((after.db.prepare("SELECT prefix, version FROM memory_versions").all() as unknown[])).toEqual([{ prefix: alice.join("."), version: 1 }]);
    const found = await after.memoryStore.searchRanked(alice, { query: "Lisbon reports", limit: 10 });
    expect(found.items.map((item) => item.key)).toEqual([memoryKey("lisbon"), memoryKey("old"), memoryKey("reports")]);
    expect(found.items.map((item) => item.key).filter((key) => key !== memoryKey("old"))).toEqual(expected.items.map((item) => item.key));
    await after.memories.save(alice, { text: "Lisbon Lisbon Lisbon", subject: "new" });
    expect((await after.memoryStore.searchRanked(alice, { query: "Lisbon", limit: 1 })).items[0]?.key).toBe(memoryKey("new"));
  });
});
