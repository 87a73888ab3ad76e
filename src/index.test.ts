import { readFileSync } from "node:fs";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import * as troupe from "./index.js";

const ROOT = new URL("..", import.meta.url);

/** Every name `src/index.ts` exports, types included, read from its syntax; and any statement that is not a named re-export. */
function exportedNames(): { names: string[]; other: string[] } {
  const file = new URL("src/index.ts", ROOT);
  const source = ts.createSourceFile("index.ts", readFileSync(file, "utf8"), ts.ScriptTarget.Latest);
  const names: string[] = [];
  const other: string[] = [];
  for (const statement of source.statements) {
    if (ts.isExportDeclaration(statement) && statement.exportClause && ts.isNamedExports(statement.exportClause)) {
      for (const element of statement.exportClause.elements) names.push(element.name.text);
    } else other.push(statement.getText(source).slice(0, 80));
  }
  return { names, other };
}

/** The names docs/library.md documents: the code spans before the dash of each bullet of "What the package exports". */
function documentedNames(): string[] {
  const page = readFileSync(new URL("docs/library.md", ROOT), "utf8");
  const section = /^## What the package exports\n([\s\S]*?)(?=^## )/m.exec(page)?.[1] ?? "";
  const names: string[] = [];
  for (const bullet of section.split(/^- /m).slice(1)) {
    const head = bullet.split(" — ")[0] ?? "";
    for (const span of head.matchAll(/`([^`]+)`/g)) names.push(span[1] as string);
  }
  return names;
}

const sorted = (names: Iterable<string>): string[] => [...new Set(names)].sort();

describe("the public API", () => {
  it("exports exactly what docs/library.md documents", () => {
    const { names } = exportedNames();
    const documented = documentedNames();
    expect(documented.length).toBeGreaterThan(50);
    expect(sorted(names)).toEqual(sorted(documented));
    // Each documented once: a name in two bullets is a page that contradicts itself.
    expect(documented.length).toBe(new Set(documented).size);
  });

  it("is named re-exports only, so the list above is the whole of it (no `export *`, no code of its own)", () => {
    expect(exportedNames().other).toEqual([]);
  });

  it("gives at run time only documented values", () => {
    const documented = new Set(documentedNames());
    expect(Object.keys(troupe).filter((name) => !documented.has(name))).toEqual([]);
    expect(typeof troupe.createTroupe).toBe("function");
  });

  it("keeps internals out of the main entry: they are in troupe/testing", async () => {
    for (const internal of ["createGraph", "ToolRegistry", "OfflineChatModel", "MemoryStash", "longestPath"]) expect(troupe).not.toHaveProperty(internal);
    const testing = await import("./testing/index.js");
    for (const internal of ["createGraph", "ToolRegistry", "OfflineChatModel", "MemoryStash", "longestPath"]) expect(testing).toHaveProperty(internal);
  });

  it("serves the testing entry under package.json's exports, next to the main one", () => {
    const manifest = JSON.parse(readFileSync(new URL("package.json", ROOT), "utf8")) as { exports: Record<string, { types: string; default: string }> };
    expect(manifest.exports["."]).toEqual({ types: "./dist/src/index.d.ts", default: "./dist/src/index.js" });
    expect(manifest.exports["./testing"]).toEqual({ types: "./dist/src/testing/index.d.ts", default: "./dist/src/testing/index.js" });
  });
});
