import MiniSearch from "minisearch";
import type { Embedder } from "../core/embedder.js";
import type { ToolSpec } from "../core/tool-spec.js";

export type { Embedder } from "../core/embedder.js";

/**
 * Tools found by retrieval: when an agent may use more tools than a threshold (several MCP
 * servers, say), each worker call is offered only the tools most relevant to its subtask, and
 * `find_tools` to ask for more. Relevance is BM25 (MiniSearch) over each tool's name, its
 * description and its argument names, fused with embedding similarity when the provider has
 * embeddings (reciprocal rank fusion, so neither scale has to match the other).
 */

/** A tool found for a query: its score and why, in words for the trace. */
export interface ToolMatch {
  name: string;
  score: number;
  why: string;
}

export interface ToolSearchOptions {
  /** The tools that may be returned (the agent's, under its permissions); the rest are never returned. */
  among: ReadonlySet<string>;
  k: number;
  /** Tools not to return (already offered). */
  exclude?: ReadonlySet<string>;
  /** Adds embedding similarity to the ranking when given. */
  embedder?: Embedder;
}

interface ToolDocument {
  id: string;
  name: string;
  description: string;
  args: string;
}

const STOP_WORDS = new Set(
  "a an and are as at be by for from in into is it its of on or that the this to with without your you their them then than do does each every all any some which what when where who how".split(" "),
);

/** Splits names and text into words: `calendar.create_event`, `createEvent` and `create-event` each give create, event. */
export function toolTerms(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word.length > 0);
}

/** A word reduced to a rough stem, so `events`, `event` and `listing`, `list` meet; stop words dropped. */
export function stem(word: string): string | null {
  let term = word.toLowerCase();
  if (term.length < 2 || STOP_WORDS.has(term)) return null;
  if (term.length > 4 && term.endsWith("ies")) term = `${term.slice(0, -3)}y`;
  else if (term.length > 4 && /(?:ss|sh|ch|x)es$/.test(term)) term = term.slice(0, -2);
  else if (term.length > 3 && term.endsWith("s") && !term.endsWith("ss") && !term.endsWith("us")) term = term.slice(0, -1);
  if (term.length > 5 && term.endsWith("ing")) term = term.slice(0, -3);
  else if (term.length > 4 && term.endsWith("ed")) term = term.slice(0, -2);
  if (term.length > 3 && /(.)\1$/.test(term) && !/(?:ss|ll)$/.test(term)) term = term.slice(0, -1);
  if (term.length > 4 && term.endsWith("e")) term = term.slice(0, -1);
  return term;
}

/** The argument names of a tool's JSON schema (top level and one level down). */
function argumentNames(parameters: Record<string, unknown>): string[] {
  const names: string[] = [];
  const properties = (parameters.properties ?? {}) as Record<string, Record<string, unknown>>;
  for (const [name, property] of Object.entries(properties)) {
    names.push(name);
    const inner = (property.properties ?? (property.items as Record<string, unknown> | undefined)?.properties ?? {}) as Record<string, unknown>;
    names.push(...Object.keys(inner));
  }
  return names;
}

/** What an embedding of a tool is made from. */
function documentText(document: ToolDocument): string {
  return `${document.name}: ${document.description} (arguments: ${document.args})`;
}

function cosine(a: readonly number[], b: readonly number[]): number {
  let dot = 0;
  let left = 0;
  let right = 0;
  for (let index = 0; index < Math.min(a.length, b.length); index += 1) {
    const x = a[index] as number;
    const y = b[index] as number;
    dot += x * y;
    left += x * x;
    right += y * y;
  }
  return left > 0 && right > 0 ? dot / Math.sqrt(left * right) : 0;
}

/** Reciprocal rank fusion's constant: ranks past the first few weigh little either way. */
const FUSION_K = 60;

/**
 * A search index over a set of tools (their model-facing specs), built once; embeddings of the
 * tools are made once per embedder, on its first search.
 */
export class ToolIndex {
  readonly #documents = new Map<string, ToolDocument>();
  readonly #search: MiniSearch<ToolDocument>;
  readonly #vectors = new WeakMap<Embedder, Promise<Map<string, number[]>>>();

  constructor(specs: readonly ToolSpec[]) {
    this.#search = new MiniSearch<ToolDocument>({
      fields: ["name", "description", "args"],
      storeFields: ["name"],
      tokenize: toolTerms,
      processTerm: stem,
      searchOptions: { boost: { name: 2, args: 1.5 }, prefix: (term) => term.length >= 5, fuzzy: (term) => (term.length >= 6 ? 0.2 : false), combineWith: "OR" },
    });
    for (const spec of specs) {
      const { name, description, parameters } = spec.function;
      const document = { id: name, name, description, args: argumentNames(parameters).join(" ") };
      this.#documents.set(name, document);
    }
    this.#search.addAll([...this.#documents.values()]);
  }

  get size(): number {
    return this.#documents.size;
  }

  /** The most relevant tools for a query, best first, at most `k`, only among `among`. */
  async search(query: string, options: ToolSearchOptions): Promise<ToolMatch[]> {
    const allowed = (name: string): boolean => options.among.has(name) && !(options.exclude?.has(name) ?? false);
    const bm25 = this.#search
      .search(query)
      .filter((hit) => allowed(String(hit.id)))
      .map((hit) => ({ name: String(hit.id), score: hit.score, terms: hit.terms }));
    const lexical = (note = ""): ToolMatch[] => bm25.slice(0, options.k).map((hit) => ({ name: hit.name, score: round(hit.score), why: `BM25 ${round(hit.score)} on ${hit.terms.join(", ")}${note}` }));
    if (!options.embedder) return lexical();
    let similar: Array<{ name: string; similarity: number }>;
    try {
      const vectors = await this.#vectorsFor(options.embedder);
      const queryVector = await options.embedder.embedQuery(query);
      similar = [...vectors.entries()]
        .filter(([name]) => allowed(name))
        .map(([name, vector]) => ({ name, similarity: cosine(queryVector, vector) }))
        .sort((a, b) => b.similarity - a.similarity);
    } catch (error) {
      // Embeddings are a help, not a need: without them the ranking is BM25's, and says so.
      return lexical(` (embeddings unavailable: ${String((error as Error).message ?? error).slice(0, 80)})`);
    }
    const fused = new Map<string, { score: number; why: string[] }>();
    bm25.forEach((hit, rank) => {
      fused.set(hit.name, { score: 1 / (FUSION_K + rank + 1), why: [`BM25 ${round(hit.score)} on ${hit.terms.join(", ")}`] });
    });
    similar.forEach((hit, rank) => {
      const entry = fused.get(hit.name) ?? { score: 0, why: [] };
      entry.score += 1 / (FUSION_K + rank + 1);
      entry.why.push(`embedding similarity ${round(hit.similarity)}`);
      fused.set(hit.name, entry);
    });
    return [...fused.entries()]
      .sort((a, b) => b[1].score - a[1].score || a[0].localeCompare(b[0]))
      .slice(0, options.k)
      .map(([name, entry]) => ({ name, score: Math.round(entry.score * 100_000) / 100_000, why: entry.why.join("; ") }));
  }

  #vectorsFor(embedder: Embedder): Promise<Map<string, number[]>> {
    let vectors = this.#vectors.get(embedder);
    if (!vectors) {
      const documents = [...this.#documents.values()];
      vectors = embedder.embedDocuments(documents.map(documentText)).then((made) => new Map(documents.map((document, index) => [document.name, made[index] ?? []])));
      // A failed embedding call is not kept: the next search tries again.
      vectors.catch(() => this.#vectors.delete(embedder));
      this.#vectors.set(embedder, vectors);
    }
    return vectors;
  }
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}
