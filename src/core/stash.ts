import { NotFoundError } from "./errors.js";
import { type Label, readLabel, sourceOf, writeLabel } from "./provenance.js";

/** Where a subtask's result is kept: one entry per run and subtask (a redo replaces it). */
export interface StashKey {
  runId: string;
  subtaskId: string;
}

/** What the graph state keeps of a stashed result: the handle and its size, never the value. */
export interface StashEntry {
  ref: string;
  bytes: number;
}

/**
 * One finished item of a mapped subtask, kept as soon as it finishes so a run that dies in the
 * middle of a map resumes with only the unfinished items. `fingerprint` identifies the subtask's
 * definition and `round` the review round it ran in, so a retry can tell the items it must run
 * again from those it keeps.
 */
export interface MapItemRecord {
  index: number;
  fingerprint: string;
  round: number;
  status: "success" | "error";
  input: unknown;
  output?: unknown;
  error?: string;
  durationMs: number;
  /** Where its output came from (its input's label joined with what the item's work read). */
  label?: Label;
}

/** A stashed value with its provenance label. */
export interface LabelledEntry {
  value: unknown;
  label: Label;
}

/** The label of a row stored before troupe labelled values: untrusted, since nothing says where it came from. */
export const UNLABELLED: Label = Object.freeze({ trust: "untrusted", sources: [sourceOf("unknown", "stored before troupe labelled values")] }) as Label;

/** A stored label column (JSON text or null) as a label: null is a row from before labels, malformed is unreadable — both untrusted. */
export function storedLabel(text: string | null | undefined): Label {
  return text === null || text === undefined ? UNLABELLED : readLabel(text);
}

/** A label as a stored column. */
export function labelColumn(label: Label | undefined): string | null {
  return label === undefined ? null : writeLabel(label);
}

/**
 * The data stash: subtask results live here, outside the graph state, so the state (and every
 * checkpoint) stays small however large the data. Implemented in SQLite by the store; the graph
 * only sees this interface.
 */
export interface Stash {
  /** Keeps a subtask's result with its provenance label (replacing an earlier attempt's) and returns its handle. */
  put(key: StashKey, value: unknown, label: Label): Promise<StashEntry>;
  /** The value behind a handle; a NotFoundError when there is none. */
  get(ref: string): Promise<unknown>;
  /** The value behind a handle and its label; a NotFoundError when there is none. */
  read(ref: string): Promise<LabelledEntry>;
  /** Keeps one finished map item (replacing the same index). Durable when it returns. */
  putItem(key: StashKey, item: MapItemRecord): Promise<void>;
  /** The map items kept for a subtask, by index. */
  items(key: StashKey): Promise<MapItemRecord[]>;
}

/** The handle of a stashed result: `stash:<runId>/<subtaskId>`. */
export function stashRef(key: StashKey): string {
  return `stash:${key.runId}/${key.subtaskId}`;
}

export function parseStashRef(ref: string): StashKey {
  const match = /^stash:(.+)\/([^/]+)$/.exec(ref);
  if (!match) throw new NotFoundError("invalid_stash_ref", `"${ref}" is not a stash reference`, { ref });
  return { runId: match[1] as string, subtaskId: match[2] as string };
}

/** The JSON text a value is stashed as (undefined becomes null) and its size in bytes. */
export function serializeStashValue(value: unknown): { text: string; bytes: number } {
  const text = JSON.stringify(value ?? null) ?? "null";
  return { text, bytes: Buffer.byteLength(text, "utf8") };
}

/**
 * A stash in memory, for graphs built without a store (tests, `troupe graph`). Values are kept
 * as JSON text, as the SQLite stash keeps them, so a reader never shares an object with a writer.
 */
export class MemoryStash implements Stash {
  readonly #values = new Map<string, { text: string; label: string | null }>();
  readonly #items = new Map<string, Map<number, string>>();

  async put(key: StashKey, value: unknown, label: Label): Promise<StashEntry> {
    const ref = stashRef(key);
    const { text, bytes } = serializeStashValue(value);
    this.#values.set(ref, { text, label: labelColumn(label) });
    return { ref, bytes };
  }

  async get(ref: string): Promise<unknown> {
    return (await this.read(ref)).value;
  }

  async read(ref: string): Promise<LabelledEntry> {
    const entry = this.#values.get(stashRef(parseStashRef(ref)));
    if (entry === undefined) throw new NotFoundError("stash_missing", `nothing is stashed under ${ref}`, { ref });
    return { value: JSON.parse(entry.text) as unknown, label: storedLabel(entry.label) };
  }

  async putItem(key: StashKey, item: MapItemRecord): Promise<void> {
    const ref = stashRef(key);
    const items = this.#items.get(ref) ?? new Map<number, string>();
    items.set(item.index, JSON.stringify(item));
    this.#items.set(ref, items);
  }

  async items(key: StashKey): Promise<MapItemRecord[]> {
    const items = this.#items.get(stashRef(key));
    if (!items) return [];
    return [...items.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, text]) => {
        const { label, ...record } = JSON.parse(text) as MapItemRecord;
        return { ...record, label: label === undefined ? UNLABELLED : readLabel(label) };
      });
  }
}
