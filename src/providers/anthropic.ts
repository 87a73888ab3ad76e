import { ChatAnthropic } from "@langchain/anthropic";
import { envValue, parseBaseUrl } from "./base-url.js";
import { defineProvider } from "./provider.js";

/**
 * Anthropic's Messages API through `@langchain/anthropic`. Structured answers use a forced tool
 * call, which every Claude model supports, with strict tool use (`strict: false` in the
 * provider's settings for models before Claude 4.5); `structuredOutput: "jsonSchema"` in the
 * config uses JSON outputs on the models that have them. ANTHROPIC_BASE_URL points it at a proxy.
 */
export const anthropicProvider = defineProvider({
  id: "anthropic",
  description: "Anthropic Claude (ANTHROPIC_API_KEY; ANTHROPIC_BASE_URL for a proxy)",
  defaultModel: "claude-haiku-4-5",
  structuredMethod: "functionCalling",
  // Strict tool use (Claude 4.5 and later; `strict: false` for older models). JSON outputs are constrained anyway.
  strict: { functionCalling: true },
  // Its strict grammar refuses numeric, length and count bounds: they move into descriptions.
  strictUnsupported: ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "minItems", "maxItems", "uniqueItems", "pattern"],
  streams: true,
  requiredEnv: (_env, settings) => [settings.apiKeyEnv ?? "ANTHROPIC_API_KEY"],
  validate: (env, settings) => {
    if (settings.baseUrl) parseBaseUrl(settings.baseUrl, "providers.anthropic.baseUrl");
    else if (env.ANTHROPIC_BASE_URL) parseBaseUrl(env.ANTHROPIC_BASE_URL, "ANTHROPIC_BASE_URL");
  },
  createModel: ({ model, env, settings, timeoutMs }) => {
    const baseUrl = settings.baseUrl ?? env.ANTHROPIC_BASE_URL;
    return new ChatAnthropic({
      model,
      apiKey: envValue(env, settings.apiKeyEnv ?? "ANTHROPIC_API_KEY"),
      ...(baseUrl ? { anthropicApiUrl: parseBaseUrl(baseUrl, "ANTHROPIC_BASE_URL") } : {}),
      maxTokens: 4096,
      maxRetries: 0,
      clientOptions: { timeout: timeoutMs, maxRetries: 0, ...(settings.headers ? { defaultHeaders: settings.headers } : {}) },
    });
  },
});
