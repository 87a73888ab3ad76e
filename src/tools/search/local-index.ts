import { lstat, readdir, readFile } from "node:fs/promises";
import path from "node:path";
import MiniSearch from "minisearch";

/**
 * The offline search: a MiniSearch full-text index over text files in the knowledge folders and
 * the workspace. The index is rebuilt when a file is added, removed or changed (a signature of
 * paths, sizes and modification times is compared on each search).
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

interface Document {
  id: string;
  title: string;
  text: string;
  path: string;
  source: string;
}

async function collect(folder: IndexedFolder): Promise<Array<{ file: string; relative: string; size: number; mtime: number }>> {
  const found: Array<{ file: string; relative: string; size: number; mtime: number }> = [];
  const walk = async (directory: string, prefix: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(directory, { withFileTypes: true });
    } catch {
      return;
    }
    entries.sort((a, b) => a.name.localeCompare(b.name));
    for (const entry of entries) {
      if (found.length >= MAX_FILES) return;
      if (entry.name.startsWith(".") || SKIPPED.has(entry.name)) continue;
      const file = path.join(directory, entry.name);
      const relative = prefix ? `${prefix}/${entry.name}` : entry.name;
      // Symlinks are not followed: the index covers what is really in the folder.
      if (entry.isDirectory()) await walk(file, relative);
      else if (entry.isFile() && TEXT_EXTENSIONS.has(path.extname(entry.name).toLowerCase())) {
        const info = await lstat(file).catch(() => undefined);
        if (info && info.size <= MAX_FILE_BYTES) found.push({ file, relative, size: info.size, mtime: info.mtimeMs });
      }
    }
  };
  await walk(folder.directory, "");
  return found;
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
          const text = await readFile(file.file, "utf8").catch(() => undefined);
          if (text === undefined || text.includes("\u0000")) continue;
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
