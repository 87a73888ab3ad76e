import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { memoryNamespace } from "../src/core/memory.js";
import { openStore } from "../src/store/index.js";
import type { PostgresStore } from "../src/store/postgres-store.js";
import { freshDatabase } from "./postgres.js";
import { defineStoreContract, type StoreFactory } from "./store-contract/suite.js";
import { defineMemorySearchContract } from "./store-contract/memory-search.js";
import { defineOperationsContract } from "./store-contract/operations.js";

const directories: string[] = [];
afterAll(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

const dataDir = (): string => {
  const directory = mkdtempSync(path.join(tmpdir(), "troupe-contract-"));
  directories.push(directory);
  return directory;
};

const sqlite: StoreFactory = {
  fresh: async () => {
    const directory = dataDir();
    return { open: (memory = {}) => openStore({ dataDir: directory, ...memory }) };
  },
};

const postgres: StoreFactory = {
  fresh: async () => {
    const databaseUrl = await freshDatabase("contract");
    const directory = dataDir();
    return { open: (memory = {}) => openStore({ dataDir: directory, databaseUrl, ...memory }) };
  },
};

// The same contract for every implementation of the store.
defineStoreContract("SQLite", sqlite);
defineStoreContract("Postgres", postgres);
defineOperationsContract("SQLite", sqlite);
defineOperationsContract("Postgres", postgres);
defineMemorySearchContract("SQLite", sqlite);
defineMemorySearchContract("Postgres", postgres);

describe("the Postgres memory store", () => {
  it("says clearly when its table is gone, never answering empty", async () => {
    const databaseUrl = await freshDatabase("memory_gone");
    const store = (await openStore({ dataDir: dataDir(), databaseUrl })) as PostgresStore;
    try {
      const alice = memoryNamespace({ kind: "key", name: "alice" });
      await store.memories.save(alice, { text: "a fact to lose" });
      expect((await store.memories.search(alice, "fact")).items).toHaveLength(1);
      await store.pool.query("DROP TABLE memory_items");
      await expect(store.memories.search(alice, "fact")).rejects.toMatchObject({ code: "memory_store_missing" });
      await expect(store.memories.list(alice)).rejects.toMatchObject({ code: "memory_store_missing" });
      await expect(store.memories.save(alice, { text: "another" })).rejects.toMatchObject({ code: "memory_store_missing" });
    } finally {
      await store.close();
    }
  });
});
