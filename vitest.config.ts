import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";
import { TEST_TIMEOUT_MS } from "./test/wait.js";

/**
 * Two tiers (`vitest run --project unit|integration`; `npm test` runs both):
 *
 * - unit: the co-located `src/**\/*.test.ts` and `test/unit/`, in process only — no build, no
 *   Postgres, no child process, no system package. `test/setup/unit-guard.ts` makes any process
 *   start throw, so the tier keeps its promise.
 * - integration: every `*.int.test.ts`, and any other test file under `test/` (a new plain file
 *   there runs here, where anything is allowed). Its global setup checks the system packages and
 *   starts a throwaway Postgres cluster; it spawns the built CLI (`npm run build` first).
 */
const UNIT = ["src/**/*.test.ts", "test/unit/**/*.test.ts"];
const INTEGRATION = ["**/*.int.test.ts"];

export default defineConfig({
  // The console's modules import the browser libraries from /vendor/, which the server serves
  // from these npm packages (src/server/routes/console.ts): the same files for test/unit/task-page.test.ts.
  resolve: { alias: [{ find: /^\/vendor\/marked\.js$/, replacement: "marked" }, { find: /^\/vendor\/purify\.js$/, replacement: "dompurify" }] },
  test: {
    // A net against a hang, above every wait's own patience (test/wait.ts): a test waits on states,
    // and a busy machine only makes it wait longer.
    testTimeout: TEST_TIMEOUT_MS,
    // Tests run troupe's defaults (review: auto); a test that needs the whole pipeline asks for it.
    env: { TROUPE_REVIEW: "" },
    hookTimeout: TEST_TIMEOUT_MS,
    pool: "forks",
    // At least two files at once: most tests wait on child processes, sockets or leases, so even a
    // two-CPU machine (where vitest would run one) finishes the suite about a quarter sooner.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: UNIT,
          exclude: [...INTEGRATION, "**/node_modules/**"],
          setupFiles: ["test/setup/unit-guard.ts"],
          // The files of one worker share its module graph instead of importing the app again each:
          // the tier ran in 112 s on a quiet two-CPU machine isolated, 43 s not (import time 45% →
          // 5%). Every file builds its own engine, store and server, so none leans on another's
          // state; the tier passes in shuffled file orders (`--sequence.shuffle.files`).
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: "integration",
          include: [...INTEGRATION.map((pattern) => `{src,test}/${pattern}`), "test/**/*.test.ts"],
          exclude: ["test/unit/**", "**/node_modules/**"],
          // The system packages (apt when missing), then a throwaway Postgres cluster.
          globalSetup: ["test/setup/system-packages.ts", "test/setup/postgres.ts"],
        },
      },
    ],
  },
});
