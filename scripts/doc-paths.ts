// The paths a docs page names, and which of them the repository lacks (part of `npm run docs:check`).
// A page names a path in a code span (`src/graph/dispatch.ts`, `test/unit/`) or links to one
// ([trust.md](trust.md#labels)). Checked:
// - every code span that starts with one of the repository's top folders (src/, test/, bench/,
//   scripts/, docs/, examples/) names a file or folder that exists;
// - with `bareNames`, every other code span that looks like a source file (`dispatch.ts`,
//   `routes/tasks.ts`, `0021-runs-page.sql`) is the end of exactly one path or more in the
//   repository — a name no file ends with is missing;
// - every relative link to a file exists, and its `#anchor` is a heading of the page it names (a
//   bare `#anchor`: of the page itself).
// Placeholders (`NNNN`, `<id>`, `{sqlite,postgres}`, `*`) are not paths and are skipped.
import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

const ROOTS = ["src", "test", "bench", "scripts", "docs", "examples"];
const SOURCE_FILE = /^[\w./-]*[\w-]\.(?:ts|mts|mjs|js|sql|md|json|jsonl|yml|yaml)$/;
const PLACEHOLDER = /[{}<>*$]|NNNN|\bX+\b/;
/** Files a user makes, which pages name as examples: not the repository's. */
const USER_FILES = /^(?:\.\.?\/|troupe\.config\.|schema\.json$|suite\.jsonl$|openapi\.json$)/;

export type NamedPath = { path: string; kind: "full" | "bare" | "link"; line: number };

/** The lines of a markdown text outside fenced blocks, with their line numbers (from 1). */
function proseLines(markdown: string): { text: string; line: number }[] {
  const lines: { text: string; line: number }[] = [];
  let fenced = false;
  markdown.split("\n").forEach((text, index) => {
    if (/^\s*(```|~~~)/.test(text)) {
      fenced = !fenced;
      return;
    }
    if (!fenced) lines.push({ text, line: index + 1 });
  });
  return lines;
}

/** The code spans of a markdown text outside fenced blocks, with their line numbers. */
function codeSpans(markdown: string): { text: string; line: number }[] {
  return proseLines(markdown).flatMap(({ text, line }) => [...text.matchAll(/(`+)([^`]+?)\1/g)].map((match) => ({ text: (match[2] ?? "").trim(), line })));
}

/** The links of a markdown text to files beside it or to its own headings (`#anchor`), with their line numbers. */
function fileLinks(markdown: string): { target: string; line: number }[] {
  return proseLines(markdown).flatMap(({ text, line }) =>
    [...text.replace(/`[^`]*`/g, "").matchAll(/\]\(([^)\s]+)\)/g)]
      .map((match) => match[1] ?? "")
      .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target) && !target.startsWith("/"))
      .map((target) => ({ target, line })),
  );
}

/** Every path a page names: full paths from a top folder, links, and (with `bareNames`) file names. */
export function namedPaths(markdown: string, options: { bareNames?: boolean } = {}): NamedPath[] {
  const named: NamedPath[] = [];
  for (const span of codeSpans(markdown)) {
    // A span may be a command or a list (`npm run bench -- --only scale`, `a.ts, b.ts`): look at each word.
    for (const rawWord of span.text.split(/[\s,;()"'=]+/)) {
      const word = rawWord.replace(/[.:]+$/, "").replace(/#.*$/, "").replace(/:\d+(?::\d+)?$/, "");
      if (!word || PLACEHOLDER.test(word)) continue;
      const top = word.split("/")[0] ?? "";
      if (word.includes("/") && ROOTS.includes(top)) named.push({ path: word, kind: "full", line: span.line });
      else if (options.bareNames && SOURCE_FILE.test(word) && !USER_FILES.test(word) && !word.startsWith("/") && !word.startsWith("dist/") && !word.startsWith("node_modules/") && !word.startsWith("@")) {
        named.push({ path: word, kind: "bare", line: span.line });
      }
    }
  }
  for (const link of fileLinks(markdown)) named.push({ path: link.target, kind: "link", line: link.line });
  return named;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
export function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, "")
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

/** The anchors of a markdown page's headings (a repeated heading gets -1, -2, … as on GitHub). */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const match = fenced ? null : /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line);
    if (!match) continue;
    const base = anchorOf(match[1] ?? "");
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/**
 * The problems with the paths a page names: each missing one as "<page>:<line>: <what>".
 * `page` is the page's path from `root`; `files` the repository's files (paths from `root`), for
 * bare names.
 */
export function missingPaths(markdown: string, page: string, root: string, files: readonly string[], options: { bareNames?: boolean } = {}): string[] {
  const problems: string[] = [];
  const pageDir = path.dirname(path.join(root, page));
  for (const named of namedPaths(markdown, options)) {
    const where = `${page}:${named.line}`;
    if (named.kind === "full") {
      if (!existsSync(path.join(root, named.path))) problems.push(`${where}: \`${named.path}\` does not exist`);
    } else if (named.kind === "bare") {
      const suffix = `/${named.path}`;
      if (!files.some((file) => file === named.path || file.endsWith(suffix))) problems.push(`${where}: \`${named.path}\` is no file of the repository`);
    } else {
      const [target = "", anchor] = named.path.split("#");
      if (target === "") {
        if (anchor && !anchorsOf(markdown).has(anchor)) problems.push(`${where}: the link to ${named.path} names no heading of ${page}`);
        continue;
      }
      const file = path.resolve(pageDir, decodeURIComponent(target));
      if (!existsSync(file)) {
        problems.push(`${where}: the link to ${named.path} names no file`);
        continue;
      }
      if (anchor && file.endsWith(".md") && statSync(file).isFile() && !anchorsOf(readFileSync(file, "utf8")).has(anchor)) {
        problems.push(`${where}: the link to ${named.path} names no heading of ${path.relative(root, file)}`);
      }
    }
  }
  return problems;
}
