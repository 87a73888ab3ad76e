import { Embeddings, type EmbeddingsParams } from "@langchain/core/embeddings";

/** FNV-1a, 32 bits. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index += 1) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/**
 * A deterministic embeddings model for tests and benchmarks: each word's character trigrams are
 * hashed into `dims` buckets (signed), and the vector is normalised. Words that share most of
 * their letters ("colour" and "color", "favourite" and "favorite") land close together, which
 * is enough to tell semantic retrieval from a word match; it knows nothing of meaning.
 */
export class HashingEmbeddings extends Embeddings {
  readonly dims: number;
  /** Texts embedded so far (documents and queries), for tests that count calls. */
  calls = 0;

  constructor(fields: EmbeddingsParams & { dims?: number } = {}) {
    super(fields);
    this.dims = fields.dims ?? 64;
  }

  /** The vector of one text. */
  vector(text: string): number[] {
    const vector = new Array<number>(this.dims).fill(0);
    for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
      const padded = ` ${word} `;
      for (let index = 0; index + 3 <= padded.length; index += 1) {
        const hash = fnv1a(padded.slice(index, index + 3));
        vector[hash % this.dims] = (vector[hash % this.dims] ?? 0) + ((hash >>> 16) & 1 ? 1 : -1);
      }
    }
    const norm = Math.sqrt(vector.reduce((sum, value) => sum + value * value, 0)) || 1;
    return vector.map((value) => value / norm);
  }

  async embedDocuments(documents: string[]): Promise<number[][]> {
    this.calls += documents.length;
    return documents.map((document) => this.vector(document));
  }

  async embedQuery(query: string): Promise<number[]> {
    this.calls += 1;
    return this.vector(query);
  }
}
