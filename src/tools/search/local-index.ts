import path from "node:path";
import MiniSearch from "minisearch";
import { readContainedFile, walkRegularFiles } from "../workspace-read.js";

/**
 * The offline search: a MiniSearch full-text index over text files in the knowledge folders and
 * the workspace. The index is rebuilt when a file is added, removed or changed (a signature of
 * paths, sizes and modification times is compared on each search). Files are listed and read
 * through descriptors (workspace-read.ts): a symlink, FIFO or device is skipped, never followed
 * or opened, even when a script swaps one in between the listing and the read.
 */

export interface SearchHit {
  title: string;
  /** For local hits: the file, relative to its folder; for web hits: the URL. */
  path?: string;
  url?: string;
  /** `knowledge`, `workspace`, or the online provider's name. */
  source: string;
  snippet: string;
  score: number;
}

export interface IndexedFolder {
  /** Where the files are. */
  directory: string;
  /** What hits from it are labelled with. */
  source: string;
}

const TEXT_EXTENSIONS = new Set([
  ".md", ".markdown", ".txt", ".rst", ".adoc", ".org", ".json", ".jsonl", ".csv", ".tsv", ".yaml", ".yml", ".toml", ".ini",
  ".html", ".htm", ".xml", ".js", ".mjs", ".cjs", ".ts", ".py", ".sh", ".sql", ".c", ".h", ".go", ".rs", ".java", ".rb", ".css",
]);
const SKIPPED = new Set(["node_modules", ".git", ".troupe", "dist", "__pycache__"]);
const MAX_FILES = 5_000;
const MAX_FILE_BYTES = 1024 * 1024;
/**
 * Text indexed in all, per folder: the index and the texts live in troupe's heap, and a script
 * can fill a workspace with a gigabyte of text; past this the remaining files (in path order)
 * are not indexed rather than the process running out of memory.
 */
const MAX_TOTAL_BYTES = 32 * 1024 * 1024;

interface Document {
  id: string;
  title: string;
  text: string;
  path: string;
  source: string;
}

async function collect(folder: IndexedFolder): Promise<Array<{ relative: string; size: number; mtime: number }>> {
  const files = await walkRegularFiles(folder.directory, {
    maxFiles: MAX_FILES,
    include: (name) => !name.startsWith(".") && TEXT_EXTENSIONS.has(path.extname(name).toLowerCase()),
    skipFolder: (name) => name.startsWith(".") || SKIPPED.has(name),
  });
  let total = 0;
  const kept: Array<{ relative: string; size: number; mtime: number }> = [];
  for (const file of files) {
    if (file.size > MAX_FILE_BYTES) continue;
    total += file.size;
    if (total > MAX_TOTAL_BYTES) break;
    kept.push({ relative: file.relative, size: file.size, mtime: file.mtimeMs });
  }
  return kept;
}

/** A file's text, or undefined when it cannot be read as a regular text file under the folder now. */
async function readText(folder: IndexedFolder, relative: string): Promise<string | undefined> {
  try {
    const text = (await readContainedFile(folder.directory, relative, MAX_FILE_BYTES)).bytes.toString("utf8");
    return text.includes("\u0000") ? undefined : text;
  } catch {
    return undefined; // gone, swapped for something else, or grown past the cap since it was listed
  }
}

function titleOf(text: string, relative: string): string {
  const heading = /^\s{0,3}#{1,3}\s+(.+)$/m.exec(text)?.[1];
  if (heading) return heading.trim();
  const htmlTitle = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(text)?.[1];
  if (htmlTitle) return htmlTitle.trim();
  return path.basename(relative);
}

/** A bounded excerpt around the first place a query term occurs. */
export function snippetOf(text: string, terms: string[], width = 240): string {
  const flat = text.replace(/<[^>]+>/g, " ").replace(/\s+/g, " ").trim();
  const lower = flat.toLowerCase();
  let at = -1;
  for (const term of terms) {
    const index = lower.indexOf(term.toLowerCase());
    if (index >= 0 && (at < 0 || index < at)) at = index;
  }
  const start = Math.max(0, at < 0 ? 0 : at - width / 3);
  const excerpt = flat.slice(start, start + width).trim();
  return `${start > 0 ? "…" : ""}${excerpt}${start + width < flat.length ? "…" : ""}`;
}

/** An index over some folders, rebuilt when their files change. */
export class LocalSearchIndex {
  #signature = "";
  #index: MiniSearch<Document> | undefined;
  #texts = new Map<string, string>();

  async search(folders: readonly IndexedFolder[], query: string, limit: number): Promise<SearchHit[]> {
    const files = await Promise.all(folders.map(async (folder) => ({ folder, files: await collect(folder) })));
    const signature = JSON.stringify(files.map(({ folder, files: list }) => [folder.directory, list.map((file) => [file.relative, file.size, file.mtime])]));
    if (signature !== this.#signature || !this.#index) {
      const index = new MiniSearch<Document>({
        fields: ["title", "text", "path"],
        storeFields: ["title", "path", "source"],
        searchOptions: { boost: { title: 3, path: 1.5 }, prefix: true, fuzzy: 0.15, combineWith: "OR" },
      });
      const texts = new Map<string, string>();
      for (const { folder, files: list } of files) {
        for (const file of list) {
          const text = await readText(folder, file.relative);
          if (text === undefined) continue;
          const id = `${folder.source}:${file.relative}`;
          texts.set(id, text);
          index.add({ id, title: titleOf(text, file.relative), text, path: file.relative, source: folder.source });
        }
      }
      this.#index = index;
      this.#texts = texts;
      this.#signature = signature;
    }
    const results = this.#index.search(query).slice(0, limit);
    return results.map((result) => ({
      title: String(result.title),
      path: String(result.path),
      source: String(result.source),
      snippet: snippetOf(this.#texts.get(String(result.id)) ?? "", result.terms),
      score: Math.round(result.score * 1000) / 1000,
    }));
  }
}
