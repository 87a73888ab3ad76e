import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { anchorOf, missingPaths, namedPaths } from "../../scripts/doc-paths.js";

const root = path.resolve(import.meta.dirname, "../..");
/** A few of the repository's files, as `git ls-files` would list them, for bare names. */
const files = ["src/graph/dispatch.ts", "src/server/routes/tasks.ts", "src/core/plan.ts", "src/store/migrations/sqlite/0021-scale.sql"];

describe("the paths a docs page names", () => {
  it("reads full paths out of code spans, commands and lists, and leaves placeholders and fenced blocks alone", () => {
    const page = [
      "The planner (`src/agents/planner.ts`) and `src/graph/nodes/`; run `npm run bench -- --only scale` or `node scripts/check-docs.mjs`.",
      "Migrations: `src/store/migrations/{sqlite,postgres}/NNNN-what.sql`, `src/store/migrations/sqlite/NNNN-*.sql`; `src/core/plan.ts:12` and `src/core/run.ts#L4`.",
      "```",
      "`src/fenced/away.ts`",
      "```",
      "A list: `src/core/stash.ts, src/core/refs.ts`.",
    ].join("\n");
    expect(namedPaths(page).map((named) => [named.path, named.kind, named.line])).toEqual([
      ["src/agents/planner.ts", "full", 1],
      ["src/graph/nodes/", "full", 1],
      ["scripts/check-docs.mjs", "full", 1],
      ["src/core/plan.ts", "full", 2],
      ["src/core/run.ts", "full", 2],
      ["src/core/stash.ts", "full", 6],
      ["src/core/refs.ts", "full", 6],
    ]);
  });

  it("reads bare file names only when asked, and never a user's own files", () => {
    const page = "`dispatch.ts`, `routes/tasks.ts`, `troupe.config.json`, `./notes.md`, `dist/src/cli/main.js` and `npm`.";
    expect(namedPaths(page).filter((named) => named.kind === "bare")).toEqual([]);
    expect(namedPaths(page, { bareNames: true }).map((named) => named.path)).toEqual(["dispatch.ts", "routes/tasks.ts"]);
  });

  it("names every missing path with its page and line, and passes the ones that exist", () => {
    const page = ["Exists: `src/graph/build-graph.ts`, `test/unit/`, `docs/runs.md`.", "Gone: `src/graph/worker-loop.ts` and `bench/nowhere/`."].join("\n");
    expect(missingPaths(page, "docs/example.md", root, files)).toEqual([
      "docs/example.md:2: `src/graph/worker-loop.ts` does not exist",
      "docs/example.md:2: `bench/nowhere/` does not exist",
    ]);
  });

  it("resolves bare names by the end of a repository path", () => {
    const page = "`dispatch.ts`, `routes/tasks.ts`, `0021-scale.sql`, `nodes/dispatch.ts` and `schedule-runner.ts`.";
    expect(missingPaths(page, "docs/example.md", root, files, { bareNames: true })).toEqual([
      "docs/example.md:1: `nodes/dispatch.ts` is no file of the repository",
      "docs/example.md:1: `schedule-runner.ts` is no file of the repository",
    ]);
  });

  it("checks links to pages and their headings, its own included", () => {
    const page = "# The page\n\n[runs](runs.md), [the graph](architecture.md#the-graph), [gone](evals.md), [no heading](runs.md#no-such-heading), [web](https://example.com/x.md), [here](#anything), [top](#the-page).";
    expect(missingPaths(page, "docs/example.md", root, files)).toEqual([
      "docs/example.md:3: the link to evals.md names no file",
      "docs/example.md:3: the link to runs.md#no-such-heading names no heading of docs/runs.md",
      "docs/example.md:3: the link to #anything names no heading of docs/example.md",
    ]);
  });

  it("makes GitHub's anchors", () => {
    expect(["Feature → files", "The `troupe run` command", "Inside: the graph's nodes"].map(anchorOf)).toEqual(["feature--files", "the-troupe-run-command", "inside-the-graphs-nodes"]);
  });

  it("finds nothing missing in the repository's own pages", () => {
    const pages = [...readdirSync(path.join(root, "docs")).filter((name) => name.endsWith(".md")).map((name) => `docs/${name}`), "README.md"];
    const problems = pages.flatMap((page) => missingPaths(readFileSync(path.join(root, page), "utf8"), page, root, []));
    expect(problems).toEqual([]);
  });
});
