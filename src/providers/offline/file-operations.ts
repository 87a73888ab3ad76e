/**
 * The offline model's reading of file operations: copy, move (and rename) and delete, of one
 * file or several, into a folder or onto a new name — "rename a.txt to b.txt", "move a.txt and
 * b.txt into archive/", "make a copy of report.md called backup.md", "delete the folder tmp".
 */
import type { Intent } from "./intent-types.js";

type FileOperation = Extract<Intent, { kind: "copy" | "move" | "delete" }>;

const COPY_VERBS = /^(?:copy|duplicate|back\s+up|backup|(?:make|save|create)\s+a\s+copy\s+of)$/i;
const VERB = String.raw`(copy|duplicate|back\s+up|backup|(?:make|save|create)\s+a\s+copy\s+of|move|rename|relocate)`;
const TRANSFER = new RegExp(String.raw`^\s*${VERB}\s+(.+?)\s+(to|into|in|as|under|inside|called|named)\s+(.+?)\s*[.!]?\s*$`, "i");
const REMOVAL = /^\s*(?:delete|remove|erase|rm)\s+(.+?)(?:\s+from\s+(?:the\s+)?workspace)?\s*[.!]?\s*$/i;

/** A path as a task writes it, quotes and all; a folder ends with "/". */
const PATH = /^["'`]?((?:[\w.-]+\/)*[\w.-]*[\w-])(\/)?["'`]?$/;
const HAS_EXTENSION = /\.[A-Za-z0-9]{1,10}$/;

interface Named {
  path: string;
  folder: boolean;
}

/** One path of a list: "the file a.txt", "the folder tmp", "archive/"; only names with an extension or a folder mark count. */
function namedPath(phrase: string, folderWord = false): Named | undefined {
  let text = phrase.trim().replace(/^the\s+/i, "");
  let folder = folderWord;
  const marked = /^(?:(files?)|folders?|directory|directories)\s+(?:called\s+|named\s+)?/i.exec(text);
  if (marked) {
    folder = marked[1] === undefined;
    text = text.slice(marked[0].length);
  }
  const after = /\s+(?:folder|directory)$/i.exec(text);
  if (after) {
    folder = true;
    text = text.slice(0, after.index);
  }
  const match = PATH.exec(text);
  if (!match?.[1] || match[1].includes("..") || match[1].startsWith(".")) return undefined;
  const isFolder = folder || match[2] === "/";
  if (!isFolder && !HAS_EXTENSION.test(match[1])) return undefined;
  return { path: match[1], folder: isFolder };
}

/** "a.txt", "a.txt and b.txt", "a.txt, b.txt and c.txt" — every one a path, or undefined. */
function pathList(phrase: string): Named[] | undefined {
  const text = phrase.trim().replace(/^the\s+/i, "");
  const marked = /^(?:files?|folders?|directory|directories)\s+/i.exec(text);
  const folderWord = marked !== null && !/^files?/i.test(marked[0]);
  const parts = text.slice(marked?.[0].length ?? 0).split(/\s*,\s*(?:and\s+)?|\s+and\s+/i);
  const paths = parts.map((part) => namedPath(part, folderWord));
  return paths.length > 0 && paths.every((path) => path !== undefined) ? (paths as Named[]) : undefined;
}

function baseName(path: string): string {
  return path.split("/").at(-1) ?? path;
}

/** Where a copy or a move goes: a named file, or a folder the item keeps its name in. */
function target(phrase: string, preposition: string, rename: boolean): Named | undefined {
  const text = phrase.trim().replace(/^(?:a\s+|the\s+)?(?:new\s+)?/i, "");
  const named = namedPath(text);
  if (named) return named;
  // A bare name without an extension: a new name when renaming, else a folder ("move a.txt to archive").
  const bare = /^["'`]?([\w-][\w.-]*(?:\/[\w.-]+)*)["'`]?$/.exec(text)?.[1];
  if (!bare || bare.includes("..")) return undefined;
  return { path: bare, folder: !rename || /^(?:into|in|inside|under)$/i.test(preposition) };
}

function label(kind: "copy" | "move", from: string, to: string): string {
  return `${kind === "copy" ? "Copy" : "Move"} ${from} to ${to}`;
}

/**
 * The file operations a clause asks for — one per file it names — or undefined when it is not a
 * copy, move, rename or delete of paths. Several files make several operations, each with a
 * clause of its own that names it alone.
 */
export function fileOperations(clause: string): FileOperation[] | undefined {
  const transfer = TRANSFER.exec(clause);
  if (transfer?.[1] && transfer[2] && transfer[3] && transfer[4]) {
    const kind = COPY_VERBS.test(transfer[1].replace(/\s+/g, " ")) ? "copy" : "move";
    const rename = /^rename$/i.test(transfer[1]);
    const sources = pathList(transfer[2]);
    const destination = target(transfer[4], transfer[3], rename);
    if (!sources || !destination) return undefined;
    // Several files cannot all become one file.
    if (sources.length > 1 && !destination.folder) return undefined;
    const operations = sources.map((source): FileOperation => {
      const to = destination.folder ? `${destination.path}/${baseName(source.path)}` : destination.path;
      return { kind, clause: sources.length === 1 ? clause.trim() : label(kind, source.path, to), from: source.path, to, usesPrevious: false };
    });
    return operations;
  }
  const removal = REMOVAL.exec(clause);
  if (removal?.[1]) {
    const paths = pathList(removal[1]);
    if (!paths) return undefined;
    return paths.map((named) => ({
      kind: "delete",
      clause: paths.length === 1 ? clause.trim() : named.folder ? `Delete the folder ${named.path}` : `Delete ${named.path}`,
      path: named.path,
      recursive: named.folder,
      usesPrevious: false,
    }));
  }
  return undefined;
}
