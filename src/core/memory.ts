import { z } from "zod";
import { Label, readLabel, sourceOf, TRUSTED } from "./provenance.js";

/**
 * Long-term memory: facts kept across threads, one namespace per principal (an API key's name on
 * the server, the local user for the CLI), so one principal never reads another's. The store
 * behind it is a LangGraph `BaseStore` (SQLite now); this is the interface the tools, the graph,
 * the CLI and the HTTP routes use. Everything here is async, whatever the database.
 */

/** Limits of the long-term store (the config file's `memory` section can change the first two). */
export const MEMORY_LIMITS = {
  /** Bytes of one fact's text (UTF-8). */
  itemMaxBytes: 4_096,
  /** Facts one namespace may hold; saving one more is refused with `memory_full`. */
  maxItemsPerNamespace: 10_000,
  /** Characters of a subject (what a fact is about). */
  subjectMaxChars: 200,
  /** Characters of a search query. */
  queryMaxChars: 1_000,
  /** Results one search returns at most. */
  searchMaxResults: 50,
  /** How long a fact may be kept, in seconds (ten years). */
  ttlMaxSeconds: 10 * 365 * 24 * 3_600,
  /** Prompt tokens the memories given to the planner may take (default). */
  recallTokenBudget: 400,
  /** Memories given to the planner at most. */
  recallMaxItems: 5,
} as const;

/** How a search found its results: by words (FTS5 / BM25), by meaning (embeddings), or both fused. */
export const RETRIEVALS = ["lexical", "semantic", "hybrid"] as const;
export type Retrieval = (typeof RETRIEVALS)[number];

/** The first label of every troupe memory namespace. */
export const MEMORY_ROOT = "memories";

/** A fact as it is kept and shown. `id` is its key within its namespace. */
export interface MemoryItem {
  id: string;
  text: string;
  /** What the fact is about ("the capital of Atlantis"); saving the same subject again updates it. */
  subject: string | null;
  /** The run that saved it (null when a person saved it directly). */
  sourceRun: string | null;
  createdAt: number;
  updatedAt: number;
  /** When it stops being returned (ms since the epoch); null: kept until forgotten. */
  expiresAt: number | null;
  /** Where the fact came from: untrusted when it was saved from untrusted content (it then reaches a planner only as marked data). */
  label: Label;
}

/** A search result: the fact and its relevance (higher is better; comparable within one search). */
export interface MemoryHit extends MemoryItem {
  score: number;
}

export interface MemorySearchResult {
  items: MemoryHit[];
  /** Which retrieval answered: lexical without an embeddings model, hybrid with one. */
  retrieval: Retrieval;
  /** Why semantic retrieval was not used although an embeddings model is configured (its call failed). */
  note?: string;
}

/** A fact to save. */
export const MemoryInput = z
  .object({
    text: z
      .string({ error: "text must be a string" })
      .transform((text) => text.replace(/\r\n?/g, "\n").trim())
      .pipe(z.string().min(1, { error: "the fact is empty" })),
    subject: z
      .string()
      .transform((text) => text.replace(/\s+/g, " ").trim())
      .pipe(z.string().min(1, { error: "the subject is empty" }).max(MEMORY_LIMITS.subjectMaxChars, { error: `the subject is longer than ${MEMORY_LIMITS.subjectMaxChars} characters` }))
      .optional(),
    sourceRun: z.string().max(200).nullable().optional(),
    /** Seconds until the fact expires; absent: it is kept until forgotten. */
    ttlSeconds: z
      .number()
      .int({ error: "ttl_seconds must be a whole number" })
      .min(1, { error: "ttl_seconds must be at least 1" })
      .max(MEMORY_LIMITS.ttlMaxSeconds, { error: `ttl_seconds must be at most ${MEMORY_LIMITS.ttlMaxSeconds}` })
      .optional(),
    /** Its provenance (default: trusted — a person saving a fact directly). */
    label: Label.optional(),
  })
  .strict();
export type MemoryInput = z.input<typeof MemoryInput>;

/** The value a fact is stored as in the `BaseStore` (its item's `value`). */
export const MemoryValue = z.object({
  text: z.string(),
  subject: z.string().nullable().default(null),
  sourceRun: z.string().nullable().default(null),
  expiresAt: z.number().nullable().default(null),
  /** The fact's provenance label; absent on facts saved before labels (see `factLabel`). */
  label: z.unknown().optional(),
});
export type MemoryValue = z.infer<typeof MemoryValue>;

/** The label of a fact saved by a run before troupe labelled memory: nothing says what that run had read, so it is untrusted. */
export const UNLABELLED_FACT: Label = Object.freeze({ trust: "untrusted", sources: [sourceOf("memory", "saved by a run before troupe labelled memory")] }) as Label;

/** A stored fact's label: its own (an unreadable one is untrusted); without one, trusted only when a person saved it directly. */
export function factLabel(value: Pick<MemoryValue, "label" | "sourceRun">): Label {
  if (value.label !== undefined) return readLabel(value.label);
  return value.sourceRun === null ? TRUSTED : UNLABELLED_FACT;
}

/** Facts one principal can reach: its namespace only. */
export interface Memory {
  /** Saves a fact (a fact with the same subject is updated in place); `created` is false for an update. */
  save(namespace: readonly string[], input: MemoryInput): Promise<{ item: MemoryItem; created: boolean }>;
  /** A fact by id; null when there is none (or it expired). */
  get(namespace: readonly string[], id: string): Promise<MemoryItem | null>;
  /** The facts most relevant to a query, best first. */
  search(namespace: readonly string[], query: string, options?: { limit?: number }): Promise<MemorySearchResult>;
  /** Facts, most recently updated first. */
  list(namespace: readonly string[], options?: { limit?: number; offset?: number }): Promise<{ items: MemoryItem[]; total: number }>;
  /** Removes a fact; false when there was none. */
  forget(namespace: readonly string[], id: string): Promise<boolean>;
}

/** Who owns a namespace: the local user (the CLI) or an API principal (the server). */
export type MemoryOwner = { kind: "user"; name: string } | { kind: "key"; name: string };

/**
 * A namespace label for a name: LangGraph labels may not contain "." or ":" (nor be empty), so
 * those and "%" are percent-encoded — distinct names stay distinct labels.
 */
export function namespaceLabel(name: string): string {
  const encoded = name.replace(/[%.:\0]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`);
  return encoded === "" ? "%" : encoded;
}

/** The namespace of an owner's facts: `["memories", "user" | "key", <name>]`. */
export function memoryNamespace(owner: MemoryOwner): string[] {
  return [MEMORY_ROOT, owner.kind, namespaceLabel(owner.name)];
}

/**
 * The namespace of an eval case's run: its own, empty when the case starts, so a case neither
 * sees the user's facts nor leaves facts for another case (and a replayed case's prompts match
 * the recorded ones).
 */
export function evalCaseNamespace(evalId: string, threadId: string): string[] {
  return [MEMORY_ROOT, "eval", namespaceLabel(evalId), namespaceLabel(threadId)];
}

/** A fact's id as users type it: `m-` and 12 hexadecimal digits. */
export const MemoryId = z.string().regex(/^m-[0-9a-f]{12}$/, { error: "a memory id is m- followed by 12 hexadecimal digits" });

/** The text of a fact as a prompt shows it: "id: text". */
export function memoryLine(item: Pick<MemoryItem, "id" | "text">): string {
  return `${item.id}: ${item.text}`;
}

/**
 * A recalled fact as the planner's prompt shows it: "id: text" — or, for a fact saved from
 * untrusted content, only its id, size and sources, marked as data: the planner never reads
 * untrusted text, and a worker that needs the fact takes it by id (memory_search).
 */
export function plannerMemoryLine(item: { id: string; text: string; untrusted?: string }): string {
  if (item.untrusted === undefined) return memoryLine(item);
  // Not even the sources' names: a URL or a file name is chosen by whoever wrote the data.
  return `${item.id}: [untrusted data, ${item.text.length} characters: not shown; a memory worker can read it with memory_search "${item.id}"]`;
}
