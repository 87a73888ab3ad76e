import js from "@eslint/js";
import globals from "globals";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "coverage/**", ".troupe/**", "workspace/**", "artifacts/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: "readonly", console: "readonly" } },
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": "error",
      "no-restricted-syntax": [
        "error",
        { selector: "CallExpression[callee.name='eval']", message: "eval is forbidden" },
        { selector: "NewExpression[callee.name='Function']", message: "new Function is forbidden" },
      ],
    },
  },
  // The web console runs in the browser: browser globals, and no imports from the Node side.
  { files: ["src/web/**/*.js"], languageOptions: { globals: globals.browser, sourceType: "module" } },
  // Layers point one way: core ← config/providers/tools ← agents ← graph ← runtime ← cli/server.
  ...[
    // eval sits beside runtime (it runs suites through it) and under cli/server; testing is test
    // support only: no shipped layer imports it (the CLI loads the scripted provider as a plugin).
    ["src/core/**", ["config", "providers", "tools", "agents", "graph", "store", "runtime", "eval", "cli", "testing", "server"], ["@langchain/langgraph", "fastify"]],
    ["src/{providers,config}/**", ["agents", "graph", "store", "runtime", "eval", "cli", "server", "testing"], []],
    // config reads tools' schemas (the tools and trust sections, remote agents), so tools never reads config.
    ["src/tools/**", ["config", "agents", "graph", "store", "runtime", "eval", "cli", "server", "testing"], []],
    ["src/agents/**", ["graph", "store", "runtime", "eval", "cli", "server", "testing"], []],
    ["src/graph/**", ["store", "runtime", "eval", "cli", "server", "testing"], []],
    // Inside graph: the nodes use the execution room (the dispatcher and the subtask runner), never the reverse.
    ["src/graph/execution/**", ["store", "runtime", "eval", "cli", "server", "testing"], [], [], ["../nodes/**"]],
    ["src/store/**", ["agents", "graph", "runtime", "eval", "cli", "server", "testing"], []],
    // A domain's Postgres side reads its contract, never its SQLite sibling (and the reverse).
    ["src/store/*/postgres*.ts", ["agents", "graph", "runtime", "eval", "cli", "server", "testing"], [], ["./sqlite*", "../*/sqlite*"]],
    ["src/store/*/sqlite*.ts", ["agents", "graph", "runtime", "eval", "cli", "server", "testing"], [], ["./postgres*", "../*/postgres*", "../postgres-store*"]],
    ["src/runtime/**", ["eval", "cli", "server", "web", "testing"], ["fastify"]],
    ["src/eval/**", ["cli", "server", "web", "testing"], ["fastify"]],
    ["src/server/**", ["cli", "web", "testing"], []],
    ["src/cli/**", ["web", "testing"], []],
    ["src/testing/**", ["eval", "cli", "web"], []],
    ["src/web/**", ["core", "config", "providers", "tools", "agents", "graph", "store", "runtime", "eval", "cli", "server", "testing"], []],
  ].map(([files, layers, packages, siblings = [], rooms = []]) => ({
    files: [files],
    ignores: ["**/*.test.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            ...layers.map((layer) => ({ group: [`**/${layer}/*`, `**/${layer}/**`], message: `this layer must not import from src/${layer}` })),
            ...packages.map((name) => ({ group: [name, `${name}/*`], message: `${name} does not belong in this layer` })),
            ...siblings.map((path) => ({ group: [path], message: "a store domain's dialects share only its contract" })),
            ...rooms.map((path) => ({ group: [path], message: "the execution room runs subtasks for the graph's nodes: it must not import them" })),
          ],
        },
      ],
    },
  })),
  // The unit tier (vitest.config.ts) starts no process and no database: its files do not import
  // the means to (test/setup/unit-guard.ts also makes any process start throw at run time).
  {
    files: ["src/**/*.test.ts", "test/unit/**/*.ts"],
    ignores: ["**/*.int.test.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: ["node:child_process", "child_process", "playwright-core"].map((name) => ({ name, message: "the unit tier starts no process: name this file *.int.test.ts" })),
          patterns: [{ group: ["**/postgres.js", "**/postgres-cluster.js", "**/scale-out-helpers.js"], message: "the unit tier uses no Postgres: name this file *.int.test.ts" }],
        },
      ],
    },
  },
);
