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
    ["src/core/**", ["config", "providers", "tools", "agents", "graph", "store", "runtime", "cli", "testing", "server"], ["@langchain/langgraph", "fastify"]],
    ["src/{providers,tools,config}/**", ["agents", "graph", "store", "runtime", "cli", "server"], []],
    ["src/agents/**", ["graph", "store", "runtime", "cli", "server"], []],
    ["src/graph/**", ["store", "runtime", "cli", "server"], []],
    ["src/store/**", ["agents", "graph", "runtime", "cli", "server"], []],
    // A domain's Postgres side reads its contract, never its SQLite sibling (and the reverse).
    ["src/store/*/postgres*.ts", ["agents", "graph", "runtime", "cli", "server"], [], ["./sqlite*", "../*/sqlite*"]],
    ["src/store/*/sqlite*.ts", ["agents", "graph", "runtime", "cli", "server"], [], ["./postgres*", "../*/postgres*", "../postgres-store*"]],
    ["src/runtime/**", ["cli", "server", "web"], ["fastify"]],
    ["src/server/**", ["cli", "web"], []],
    ["src/web/**", ["core", "config", "providers", "tools", "agents", "graph", "store", "runtime", "cli", "server", "testing"], []],
  ].map(([files, layers, packages, siblings = []]) => ({
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
          ],
        },
      ],
    },
  })),
);
