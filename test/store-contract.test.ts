import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll } from "vitest";
import { openStore } from "../src/store/index.js";
import { freshDatabase } from "./postgres.js";
import { defineStoreContract } from "./store-contract/suite.js";

const directories: string[] = [];
afterAll(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

const dataDir = (): string => {
  const directory = mkdtempSync(path.join(tmpdir(), "troupe-contract-"));
  directories.push(directory);
  return directory;
};

// The same contract for every implementation of the store.
defineStoreContract("SQLite", {
  fresh: async () => {
    const directory = dataDir();
    return { open: () => openStore({ dataDir: directory }) };
  },
});

defineStoreContract("Postgres", {
  fresh: async () => {
    const databaseUrl = await freshDatabase("contract");
    const directory = dataDir();
    return { open: () => openStore({ dataDir: directory, databaseUrl }) };
  },
});
