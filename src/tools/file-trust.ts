import { createHash } from "node:crypto";
import type { FileHandle } from "node:fs/promises";
import { lstat, readdir } from "node:fs/promises";
import path from "node:path";
import type { FileIdentity, FileLabelRecord, FileLabelStore, NewFileLabel } from "../core/file-labels.js";
import { heldLabel, joinLabels, type Label, sourceOf, type Source, untrustedLabel } from "../core/provenance.js";
import { findOtherNames, type IdentifiedEntry } from "./file-identities.js";
import type { PathVerdict, WorkspaceTrust } from "./workspace-trust.js";

/**
 * The label of a workspace file's data (docs/trust.md, "Labels follow the data"). A read judges
 * the file it actually opened, never the path it was asked for:
 *
 * - its real path (symlinks followed by the workspace walk) against the config's globs, with case
 *   folded where the file system folds case (found out by looking, per folder, never assumed);
 * - its other names, when it has more than one (a hard link): every one must be trusted, and a
 *   name troupe cannot see (outside the workspace) makes it untrusted;
 * - what troupe recorded when it wrote, copied, moved or extracted the file (the store's file
 *   labels): the same content anywhere, or the same unchanged file under any name, carries the
 *   label of what it was made from. A file troupe wrote from trusted data and nobody changed since
 *   is trusted even where the default would not trust it — unless the config says its path is
 *   untrusted.
 *
 * Everything is decided from the descriptor the tool reads through (its fstat, the digest of its
 * bytes), so a file swapped between the check and the read is not what was judged.
 */

/** What a tool knows of a file it opened: its real path, identity, and (when it read it all) the digest of its bytes. */
export interface FileFacts {
  relative: string;
  identity: FileIdentity;
  links: number;
  size: number;
  mtimeMs: number;
  sha256?: string;
}

export interface FileVerdict {
  label: Label;
  trusted: boolean;
  /** Why, in words, each on its own line: for `troupe trust show` and the approval card. */
  reasons: string[];
  /** The records that decided (newest first). */
  records: FileLabelRecord[];
}

/** The largest file hashed just to judge it (a larger one is judged by its identity and path alone). */
export const MAX_HASHED_BYTES = 64 * 1024 * 1024;

export function sha256Of(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** The facts of an open file: its identity from fstat (bigint, so no inode loses precision). */
export async function factsOf(handle: FileHandle, relative: string, known?: Uint8Array | { sha256: string; bytes: number }): Promise<FileFacts> {
  const info = await handle.stat({ bigint: true });
  const facts: FileFacts = { relative, identity: { device: info.dev.toString(), inode: info.ino.toString() }, links: Number(info.nlink), size: Number(info.size), mtimeMs: Number(info.mtimeMs) };
  // The bytes the tool read, when they are the whole file; else the file read again through the same descriptor.
  if (known instanceof Uint8Array && known.byteLength === facts.size) facts.sha256 = sha256Of(known);
  else if (known !== undefined && !(known instanceof Uint8Array) && known.bytes === facts.size) facts.sha256 = known.sha256;
  else if (facts.size <= MAX_HASHED_BYTES) facts.sha256 = await digestOf(handle);
  return facts;
}

/** The SHA-256 of an open file's bytes, read through its descriptor. */
async function digestOf(handle: FileHandle): Promise<string> {
  const hash = createHash("sha256");
  const buffer = Buffer.alloc(64 * 1024);
  let position = 0;
  for (;;) {
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
    if (bytesRead === 0) break;
    hash.update(buffer.subarray(0, bytesRead));
    position += bytesRead;
  }
  return hash.digest("hex");
}

/** A name with its letters' case swapped, or undefined when it has none to swap. */
function swapCase(name: string): string | undefined {
  const swapped = [...name].map((character) => (character === character.toLowerCase() ? character.toUpperCase() : character.toLowerCase())).join("");
  return swapped === name ? undefined : swapped;
}

/** Whether a record still describes this file: the same content, or the same file unchanged since. */
function describes(record: FileLabelRecord, facts: FileFacts): { content: boolean; file: boolean } {
  const content = record.sha256 !== null && facts.sha256 !== undefined && record.sha256 === facts.sha256;
  const file =
    record.identity !== null &&
    record.identity.device === facts.identity.device &&
    record.identity.inode === facts.identity.inode &&
    (record.size === null || record.size === facts.size) &&
    (record.mtimeMs === null || record.mtimeMs === facts.mtimeMs) &&
    (record.sha256 === null || facts.sha256 === undefined || record.sha256 === facts.sha256);
  return { content, file };
}

/** What a record says, in a line. */
function recordLine(record: FileLabelRecord): string {
  const when = new Date(record.createdAt).toISOString().replace("T", " ").slice(0, 19);
  return `${record.reason} (${record.tool}${record.runId ? `, run ${record.runId}` : ""}, ${when})`;
}

export class FileTrust {
  readonly paths: WorkspaceTrust;
  readonly #store: FileLabelStore | undefined;
  /** Folders found to fold case (or not), by real path. */
  readonly #folding = new Map<string, boolean>();

  constructor(paths: WorkspaceTrust, store?: FileLabelStore) {
    this.paths = paths;
    this.#store = store;
  }

  get recording(): boolean {
    return this.#store !== undefined;
  }

  /** Whether the file system folds case anywhere along this real path (looked at once per folder). */
  async foldsCase(root: string, relative: string): Promise<boolean> {
    const segments = relative.split("/").filter(Boolean);
    let directory = root;
    for (const segment of segments) {
      const known = this.#folding.get(directory);
      const folds = known ?? (await this.#probe(directory, segment));
      if (folds !== undefined && known === undefined) {
        if (this.#folding.size > 4_096) this.#folding.clear();
        this.#folding.set(directory, folds);
      }
      if (folds) return true;
      directory = path.join(directory, segment);
    }
    return false;
  }

  /** Whether a folder folds case, by asking for one of its entries under another case; undefined when the name has no letters to tell by. */
  async #probe(directory: string, name: string): Promise<boolean | undefined> {
    const swapped = swapCase(name);
    if (swapped === undefined) return undefined;
    const other = await lstat(path.join(directory, swapped), { bigint: true }).catch(() => undefined);
    if (!other) return false;
    const own = await lstat(path.join(directory, name), { bigint: true }).catch(() => undefined);
    if (own && own.dev === other.dev && own.ino === other.ino) return true;
    // Two entries whose names differ only in case (a system that keeps case), or one whose inode numbers are per lookup (FUSE): the listing tells.
    const names = await readdir(directory).catch(() => [] as string[]);
    return !names.includes(swapped);
  }

  /** The verdict on a real path alone. */
  async pathVerdict(root: string, relative: string): Promise<PathVerdict> {
    // Only a trusted pattern needs to know whether case folds: untrusted ones fold it always.
    if (this.paths.trusted.empty) return this.paths.verdict(relative);
    return this.paths.verdict(relative, { foldCase: await this.foldsCase(root, relative) });
  }

  /** The label of a file's data, and why (see the module's comment). */
  async judge(root: string, facts: FileFacts, options: { owner?: string | null } = {}): Promise<FileVerdict> {
    const own = sourceOf("workspace", facts.relative);
    const verdict = await this.pathVerdict(root, facts.relative);
    const reasons = [`${facts.relative}: ${verdict.trusted ? "trusted" : "untrusted"} by its path: ${verdict.why}`];
    const untrusted: Label[] = [];
    let trusted = verdict.trusted;
    if (trusted && facts.links > 1) {
      const names = await findOtherNames(root, facts.identity, facts.links);
      for (const name of names.found) {
        const other = await this.pathVerdict(root, name);
        if (!other.trusted) {
          trusted = false;
          untrusted.push(untrustedLabel([sourceOf("workspace", name)]));
          reasons.push(`it is a hard link of ${name}, which is untrusted: ${other.why}`);
        }
      }
      if (names.missing > 0) {
        trusted = false;
        reasons.push(`it has ${facts.links} names (hard links), and ${names.missing} of them ${names.missing === 1 ? "is" : "are"} not in the workspace${names.truncated ? " or could not all be searched for" : ""}: where its data came from cannot be told`);
      }
    }
    const records = (await this.#records(facts)).filter((record) => {
      const match = describes(record, facts);
      return record.label.trust === "untrusted" ? match.content || match.file : match.content && match.file;
    });
    for (const record of records.filter((entry) => entry.label.trust === "untrusted")) {
      trusted = false;
      untrusted.push(record.label);
      reasons.push(`troupe recorded it untrusted: ${recordLine(record)}`);
    }
    // A trusted label vouches only to the runs of whoever made the file: another key's task words are not this one's.
    const upgrade = records.find((entry) => entry.label.trust === "trusted" && entry.owner === (options.owner ?? null));
    if (!trusted && untrusted.length === 0 && upgrade && !verdict.explicit) {
      trusted = true;
      reasons.push(`troupe wrote it from trusted data, and it is unchanged since: ${recordLine(upgrade)}`);
    }
    // Read where the config says untrusted data lands: its content is kept as untrusted, so a copy made anywhere, even outside troupe, is too.
    if (verdict.explicit && this.#store && facts.sha256 !== undefined && !records.some((entry) => entry.label.trust === "untrusted" && entry.sha256 === facts.sha256)) {
      await this.#store.record([
        { workspace: root, path: facts.relative, sha256: facts.sha256, identity: facts.identity, size: facts.size, mtimeMs: facts.mtimeMs, label: untrustedLabel([own]), tool: "(read)", runId: null, owner: null, reason: `read at ${facts.relative}, which is untrusted: ${verdict.why}` },
      ]);
    }
    // Trusted, it is still the workspace's data (private: see the egress check); untrusted, its own path comes first.
    const label = trusted ? heldLabel([own]) : joinLabels(untrustedLabel([own]), ...untrusted);
    return { label, trusted, reasons, records };
  }

  async #records(facts: FileFacts): Promise<FileLabelRecord[]> {
    if (!this.#store) return [];
    return this.#store.find({ ...(facts.sha256 !== undefined ? { sha256: facts.sha256 } : {}), identities: [facts.identity] });
  }

  /**
   * The label of names a listing or a search shows: a name is chosen by whoever put the entry
   * there, so it is trusted only where its path is, and when troupe recorded nothing untrusted
   * about the entry (a file or folder moved or extracted from untrusted data keeps its name).
   */
  async judgeNames(root: string, entries: ReadonlyArray<{ relative: string; identity?: FileIdentity }>): Promise<Label> {
    const sources: Source[] = [];
    let checked = 0;
    for (const entry of entries) {
      if (!(await this.pathVerdict(root, entry.relative)).trusted) sources.push(sourceOf("workspace", entry.relative));
      checked += 1;
      if (sources.length >= 8) break;
    }
    if (sources.length === 0 && this.#store) {
      const identities = entries.flatMap((entry) => (entry.identity ? [entry.identity] : []));
      const records = identities.length > 0 ? await this.#store.find({ identities }) : [];
      for (const record of records) if (record.label.trust === "untrusted" && record.identity) sources.push(sourceOf("workspace", record.path));
    }
    const label = untrustedLabel(sources);
    return label.trust === "untrusted" && checked < entries.length ? { ...label, more: (label.more ?? 0) + 1 } : label;
  }

  /**
   * The labels a move must keep so its entries stay what their old paths made them: each entry
   * untrusted there (by its path, and not a file troupe wrote from trusted data, unchanged) is
   * recorded untrusted by its identity, which the move keeps. What troupe recorded before follows
   * the entries by itself.
   */
  async moved(root: string, entries: readonly IdentifiedEntry[], owner: string | null = null): Promise<Array<{ entry: IdentifiedEntry; label: Label; reason: string }>> {
    const untrusted: Array<{ entry: IdentifiedEntry; verdict: PathVerdict }> = [];
    for (const entry of entries) {
      const verdict = await this.pathVerdict(root, entry.relative);
      if (!verdict.trusted) untrusted.push({ entry, verdict });
    }
    const vouched = new Set<string>();
    const defaults = untrusted.filter(({ verdict, entry }) => !verdict.explicit && !entry.directory);
    if (this.#store && defaults.length > 0) {
      for (const record of await this.#store.find({ identities: defaults.map(({ entry }) => entry.identity) })) {
        const entry = defaults.find(({ entry: candidate }) => describes(record, { ...candidate, links: 1 }).file)?.entry;
        if (entry && record.label.trust === "trusted" && record.owner === owner) vouched.add(entry.relative);
      }
    }
    return untrusted
      .filter(({ entry }) => !vouched.has(entry.relative))
      .map(({ entry, verdict }) => ({ entry, label: untrustedLabel([sourceOf("workspace", entry.relative)]), reason: `moved from ${entry.relative}, which is untrusted: ${verdict.why}` }));
  }

  /** Whether a script that may read any workspace file may read an untrusted one. */
  async mayHoldUntrusted(root: string): Promise<boolean> {
    if (!this.paths.allTrusted) return true;
    return (await this.#store?.anyUntrusted(root)) ?? false;
  }

  /** Keeps the labels of files troupe made (a store that fails is reported by the caller). */
  async record(records: readonly NewFileLabel[]): Promise<void> {
    if (this.#store && records.length > 0) await this.#store.record(records);
  }
}
