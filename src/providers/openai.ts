import { ChatOpenAI, OpenAIEmbeddings } from "@langchain/openai";
import { envValue, parseBaseUrl } from "./base-url.js";
import { defineProvider } from "./provider.js";

/**
 * OpenAI through `@langchain/openai`. Plans and verdicts use the JSON-schema response format in
 * strict mode (`strict: false` in the provider's settings turns it off);
 * OPENAI_BASE_URL points it at a proxy. troupe does the retries itself (one policy for every
 * provider), so the client's own are off.
 */
export const openaiProvider = defineProvider({
  id: "openai",
  description: "OpenAI (OPENAI_API_KEY; OPENAI_BASE_URL for a proxy)",
  defaultModel: "gpt-4.1-mini",
  structuredMethod: "jsonSchema",
  // Strict structured outputs: the JSON-schema response format and tool parameters both take `strict: true`.
  strict: { jsonSchema: true, functionCalling: true },
  streams: true,
  requiredEnv: (_env, settings) => [settings.apiKeyEnv ?? "OPENAI_API_KEY"],
  validate: (env, settings) => {
    if (settings.baseUrl) parseBaseUrl(settings.baseUrl, "providers.openai.baseUrl");
    else if (env.OPENAI_BASE_URL) parseBaseUrl(env.OPENAI_BASE_URL, "OPENAI_BASE_URL");
  },
  createModel: ({ model, env, settings, timeoutMs }) => {
    const baseUrl = settings.baseUrl ?? env.OPENAI_BASE_URL;
    return new ChatOpenAI({
      model,
      apiKey: envValue(env, settings.apiKeyEnv ?? "OPENAI_API_KEY"),
      configuration: {
        ...(baseUrl ? { baseURL: parseBaseUrl(baseUrl, "OPENAI_BASE_URL") } : {}),
        ...(settings.headers ? { defaultHeaders: settings.headers } : {}),
      },
      maxRetries: 0,
      timeout: timeoutMs,
      streamUsage: true,
    });
  },
  // The model named (long-term memory's), or the default one that ranks tools for discovery besides BM25
  // (`embeddingModel: null` in the settings turns that off).
  createEmbeddings: ({ model, env, settings, timeoutMs }) => {
    const chosen = model ?? (settings.embeddingModel === null ? undefined : (settings.embeddingModel ?? "text-embedding-3-small"));
    if (!chosen) return undefined;
    const baseUrl = settings.baseUrl ?? env.OPENAI_BASE_URL;
    return new OpenAIEmbeddings({
      model: chosen,
      apiKey: envValue(env, settings.apiKeyEnv ?? "OPENAI_API_KEY"),
      configuration: {
        ...(baseUrl ? { baseURL: parseBaseUrl(baseUrl, "OPENAI_BASE_URL") } : {}),
        ...(settings.headers ? { defaultHeaders: settings.headers } : {}),
      },
      maxRetries: 1,
      timeout: timeoutMs,
    });
  },
});
