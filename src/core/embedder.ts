/** Texts to vectors, as LangChain's `EmbeddingsInterface` has it (OpenAI, Ollama…): what tool discovery ranks by besides BM25. */
export interface Embedder {
  embedDocuments(documents: string[]): Promise<number[][]>;
  embedQuery(document: string): Promise<number[]>;
}
