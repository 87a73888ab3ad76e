import { ChatOllama, OllamaEmbeddings } from "@langchain/ollama";
import { parseBaseUrl } from "./base-url.js";
import { defineProvider } from "./provider.js";

const DEFAULT_HOST = "http://127.0.0.1:11434";

/** OLLAMA_HOST as Ollama itself reads it: `host:port` without a scheme means http. */
function ollamaUrl(value: string, source: string): string {
  return parseBaseUrl(/^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `http://${value}`, source);
}

/**
 * Local models served by Ollama, through `@langchain/ollama`. No key; OLLAMA_HOST (default
 * 127.0.0.1:11434) says where. Structured answers use Ollama's JSON-schema `format`.
 */
export const ollamaProvider = defineProvider({
  id: "ollama",
  description: "local models served by Ollama (OLLAMA_HOST, default 127.0.0.1:11434)",
  defaultModel: "llama3.1",
  structuredMethod: "jsonSchema",
  // Local models keep to a plan's format under constrained decoding (Ollama's JSON-schema `format`), not from a prompt alone.
  planWire: "json",
  streams: true,
  validate: (env, settings) => {
    if (settings.baseUrl) ollamaUrl(settings.baseUrl, "providers.ollama.baseUrl");
    else if (env.OLLAMA_HOST) ollamaUrl(env.OLLAMA_HOST, "OLLAMA_HOST");
  },
  createModel: ({ model, env, settings }) => {
    const source = settings.baseUrl ? "providers.ollama.baseUrl" : "OLLAMA_HOST";
    return new ChatOllama({
      model,
      baseUrl: ollamaUrl(settings.baseUrl ?? env.OLLAMA_HOST ?? DEFAULT_HOST, source),
      maxRetries: 0,
      ...(settings.headers ? { headers: settings.headers } : {}),
    });
  },
  // Ollama serves embeddings from a model of its own (e.g. nomic-embed-text): the one named, or the settings' embeddingModel.
  createEmbeddings: ({ model, env, settings }) => {
    const chosen = model ?? settings.embeddingModel ?? undefined;
    if (!chosen) return undefined;
    const source = settings.baseUrl ? "providers.ollama.baseUrl" : "OLLAMA_HOST";
    return new OllamaEmbeddings({ model: chosen, baseUrl: ollamaUrl(settings.baseUrl ?? env.OLLAMA_HOST ?? DEFAULT_HOST, source), maxRetries: 1, ...(settings.headers ? { headers: settings.headers } : {}) });
  },
});
