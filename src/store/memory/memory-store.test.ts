import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir } from "../../../test/helpers.js";
import { memoryNamespace } from "../../core/memory.js";
import { openSqliteStore, type SqliteStore } from "../index.js";

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
});
