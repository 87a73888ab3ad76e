import { ChatAnthropic } from "@langchain/anthropic";
import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { envValue, parseBaseUrl } from "./base-url.js";
import { defineProvider } from "./provider.js";

/** The output limit when the config sets none: what an answer may take (thinking comes on top). */
const DEFAULT_MAX_TOKENS = 4096;

/**
 * Anthropic's Messages API through `@langchain/anthropic`. Structured answers use a forced tool
 * call, which every Claude model supports, with strict tool use (`strict: false` in the
 * provider's settings for models before Claude 4.5); `structuredOutput: "jsonSchema"` in the
 * config uses JSON outputs on the models that have them. ANTHROPIC_BASE_URL points it at a proxy.
 * Prompts are cached (`cache_control`): a breakpoint on the system prompt, and the request's
 * top-level one on its last block (`promptCaching: false` turns both off). `thinkingBudget`
 * turns extended thinking on: thinking blocks come back in the answer and are sent back with
 * tool results, and structured answers are asked for without forcing the tool (the API refuses
 * a forced tool while thinking).
 */
export const anthropicProvider = defineProvider({
  id: "anthropic",
  description: "Anthropic Claude (ANTHROPIC_API_KEY; ANTHROPIC_BASE_URL for a proxy)",
  defaultModel: "claude-haiku-4-5",
  structuredMethod: "functionCalling",
  // Claude writes the compact plan wire reliably, in a third of the JSON plan's tokens (and a strict grammar of the JSON plan grows with the tools).
  planWire: "compact",
  // Strict tool use (Claude 4.5 and later; `strict: false` for older models). JSON outputs are constrained anyway.
  strict: { functionCalling: true },
  // Its strict grammar refuses numeric, length and count bounds: they move into descriptions.
  strictUnsupported: ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "minItems", "maxItems", "uniqueItems", "pattern"],
  streams: true,
  outputLimit: (settings) => settings.maxTokens ?? DEFAULT_MAX_TOKENS,
  // An object on top of the model with another limit, so its client and anything wrapped around it stay.
  withOutputLimit: (model: BaseChatModel, maxTokens: number) => {
    const limited = Object.create(model) as BaseChatModel & { maxTokens: number; thinking?: { type: string; budget_tokens?: number } };
    const thinking = (model as unknown as { thinking?: { type: string; budget_tokens?: number } }).thinking;
    limited.maxTokens = maxTokens + (thinking?.type === "enabled" ? (thinking.budget_tokens ?? 0) : 0);
    return limited;
  },
  promptCaching: (settings) => (settings.promptCaching === false ? undefined : "anthropic"),
  thinks: (settings) => settings.thinkingBudget !== undefined,
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
      // Thinking tokens count against max_tokens: the answer keeps its own room on top of them.
      maxTokens: (settings.maxTokens ?? DEFAULT_MAX_TOKENS) + (settings.thinkingBudget ?? 0),
      maxRetries: 0,
      clientOptions: { timeout: timeoutMs, maxRetries: 0, ...(settings.headers ? { defaultHeaders: settings.headers } : {}) },
      ...(settings.thinkingBudget !== undefined ? { thinking: { type: "enabled", budget_tokens: settings.thinkingBudget } } : {}),
      ...(settings.streaming === false ? { disableStreaming: true } : {}),
      // Automatic caching: a breakpoint on the last block of every request, advancing as a worker's conversation grows.
      ...(settings.promptCaching === false ? {} : { invocationKwargs: { cache_control: { type: "ephemeral" } } }),
    });
  },
});
