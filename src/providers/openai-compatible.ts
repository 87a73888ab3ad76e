import { OpenAIEmbeddings } from "@langchain/openai";
import { ConfigError } from "../core/errors.js";
import { envValue, parseBaseUrl } from "./base-url.js";
import { RefusalAwareCompletions, withOpenAIOutputLimit } from "./openai-client.js";
import { defineProvider, type ProviderDefinition } from "./provider.js";

/** Local servers take no key, but the OpenAI client insists on one. */
const NO_KEY = "not-needed";

/**
 * Any server that speaks the OpenAI Chat Completions API — vLLM, llama.cpp's server, LM Studio,
 * DeepSeek, Moonshot Kimi, Zhipu GLM, Qwen — at a base URL. `id` is `openai-compatible` (base URL
 * in OPENAI_COMPATIBLE_BASE_URL, optional key in OPENAI_COMPATIBLE_API_KEY), or a name given in
 * the config file (`providers.deepseek = { type: "openai-compatible", baseUrl, apiKeyEnv }`).
 * Structured answers default to a forced tool call, which these servers support more widely than
 * the JSON-schema response format; `structuredOutput` in the config changes it. With
 * `jsonSchema` the request asks for strict adherence, as OpenAI's does (`strict: false` for a
 * server that refuses it); `strict: true` also makes the forced tool strict.
 */
export function openAICompatibleProvider(id = "openai-compatible"): ProviderDefinition {
  const builtin = id === "openai-compatible";
  const baseUrlOf = (env: Record<string, unknown>, baseUrl: string | undefined): { value: string | undefined; source: string } =>
    baseUrl !== undefined
      ? { value: baseUrl, source: `providers.${id}.baseUrl` }
      : { value: builtin ? envValue(env, "OPENAI_COMPATIBLE_BASE_URL") : undefined, source: "OPENAI_COMPATIBLE_BASE_URL" };
  return defineProvider({
    id,
    description: builtin ? "any OpenAI-compatible server at OPENAI_COMPATIBLE_BASE_URL (vLLM, llama.cpp, LM Studio, DeepSeek, Kimi, GLM, Qwen)" : `OpenAI-compatible endpoint "${id}" from the config file`,
    structuredMethod: "functionCalling",
    // Open models behind these servers keep to a plan's format under constrained decoding (tool calls, a JSON-schema response format).
    planWire: "json",
    // A JSON-schema response format asks for strict adherence; strict tools only when the config says so.
    strict: { jsonSchema: true, functionCalling: false },
    streams: true,
    outputLimit: (settings) => settings.maxTokens,
    withOutputLimit: withOpenAIOutputLimit,
    // A key is required only where the config names its variable; local servers need none.
    requiredEnv: (_env, settings) => (settings.apiKeyEnv ? [settings.apiKeyEnv] : []),
    validate: (env, settings) => {
      const { value, source } = baseUrlOf(env, settings.baseUrl);
      if (value === undefined) {
        throw new ConfigError(
          "missing_env",
          builtin ? `provider "${id}" needs OPENAI_COMPATIBLE_BASE_URL (e.g. http://127.0.0.1:8000/v1); set it in the environment` : `provider "${id}" needs providers.${id}.baseUrl in the config file`,
          { variable: builtin ? "OPENAI_COMPATIBLE_BASE_URL" : `providers.${id}.baseUrl` },
        );
      }
      parseBaseUrl(value, source);
    },
    createModel: ({ model, env, settings, timeoutMs }) => {
      const { value, source } = baseUrlOf(env, settings.baseUrl);
      const apiKey = envValue(env, settings.apiKeyEnv ?? (builtin ? "OPENAI_COMPATIBLE_API_KEY" : "")) ?? NO_KEY;
      return new RefusalAwareCompletions({
        model,
        apiKey,
        configuration: { baseURL: parseBaseUrl(value ?? "", source), ...(settings.headers ? { defaultHeaders: settings.headers } : {}) },
        maxRetries: 0,
        timeout: timeoutMs,
        streamUsage: true,
        ...(settings.maxTokens !== undefined ? { maxTokens: settings.maxTokens } : {}),
        ...(settings.reasoningEffort !== undefined ? { reasoning: { effort: settings.reasoningEffort } } : {}),
        ...(settings.streaming === false ? { disableStreaming: true } : {}),
      });
    },
    // The model named, or the settings' embeddingModel (such servers have no default one).
    createEmbeddings: ({ model, env, settings, timeoutMs }) => {
      const chosen = model ?? settings.embeddingModel ?? undefined;
      if (!chosen) return undefined;
      const { value, source } = baseUrlOf(env, settings.baseUrl);
      return new OpenAIEmbeddings({
        model: chosen,
        apiKey: envValue(env, settings.apiKeyEnv ?? (builtin ? "OPENAI_COMPATIBLE_API_KEY" : "")) ?? NO_KEY,
        configuration: { baseURL: parseBaseUrl(value ?? "", source), ...(settings.headers ? { defaultHeaders: settings.headers } : {}) },
        maxRetries: 1,
        timeout: timeoutMs,
      });
    },
  });
}

export const openaiCompatibleProvider = openAICompatibleProvider();
