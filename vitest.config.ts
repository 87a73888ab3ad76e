import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // At least two files at once: most tests wait on child processes, sockets or leases, so even a
    // two-CPU machine (where vitest would run one) finishes the suite about a quarter sooner.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // A throwaway Postgres cluster for the store contract suite and the scale-out tests.
    globalSetup: ["test/postgres-setup.ts"],
  },
});
