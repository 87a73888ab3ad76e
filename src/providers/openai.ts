import { OpenAIEmbeddings } from "@langchain/openai";
import { envValue, parseBaseUrl } from "./base-url.js";
import { createChatOpenAI, withOpenAIOutputLimit } from "./openai-client.js";
import { defineProvider } from "./provider.js";

/**
 * OpenAI through `@langchain/openai`. Plans and verdicts use the JSON-schema response format in
 * strict mode (`strict: false` in the provider's settings turns it off);
 * OPENAI_BASE_URL points it at a proxy. troupe does the retries itself (one policy for every
 * provider), so the client's own are off. Reasoning models (o-series, gpt-5) get no
 * temperature, `max_completion_tokens` and the `developer` role from the client, and
 * `reasoning_effort` from `providers.openai.reasoningEffort`; their reasoning tokens are counted
 * from the usage. OpenAI caches prompt prefixes by itself; troupe keeps each prompt's stable
 * part first and reads `cached_tokens` from the usage.
 */
export const openaiProvider = defineProvider({
  id: "openai",
  description: "OpenAI (OPENAI_API_KEY; OPENAI_BASE_URL for a proxy)",
  defaultModel: "gpt-4.1-mini",
  structuredMethod: "jsonSchema",
  // Its models write the compact plan wire reliably, in a third of the JSON plan's tokens.
  planWire: "compact",
  // Strict structured outputs: the JSON-schema response format and tool parameters both take `strict: true`.
  strict: { jsonSchema: true, functionCalling: true },
  streams: true,
  outputLimit: (settings) => settings.maxTokens,
  withOutputLimit: withOpenAIOutputLimit,
  requiredEnv: (_env, settings) => [settings.apiKeyEnv ?? "OPENAI_API_KEY"],
  validate: (env, settings) => {
    if (settings.baseUrl) parseBaseUrl(settings.baseUrl, "providers.openai.baseUrl");
    else if (env.OPENAI_BASE_URL) parseBaseUrl(env.OPENAI_BASE_URL, "OPENAI_BASE_URL");
  },
  createModel: ({ model, env, settings, timeoutMs }) => {
    const baseUrl = settings.baseUrl ?? env.OPENAI_BASE_URL;
    return createChatOpenAI({
      model,
      apiKey: envValue(env, settings.apiKeyEnv ?? "OPENAI_API_KEY"),
      configuration: {
        ...(baseUrl ? { baseURL: parseBaseUrl(baseUrl, "OPENAI_BASE_URL") } : {}),
        ...(settings.headers ? { defaultHeaders: settings.headers } : {}),
      },
      maxRetries: 0,
      timeout: timeoutMs,
      streamUsage: true,
      ...(settings.maxTokens !== undefined ? { maxTokens: settings.maxTokens } : {}),
      ...(settings.reasoningEffort !== undefined ? { reasoning: { effort: settings.reasoningEffort } } : {}),
      ...(settings.streaming === false ? { disableStreaming: true } : {}),
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
