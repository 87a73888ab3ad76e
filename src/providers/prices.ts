import type { ModelPrice } from "../config/config-file.js";

/**
 * List prices in US dollars per million tokens (input, output) of common models, as published
 * by their vendors in 2025. Prices change: the config file's `prices` overrides any of them, and
 * adds models not listed. A model id matches its longest listed prefix, so dated snapshots
 * (`gpt-4o-2024-08-06`, `claude-3-5-haiku-20241022`) take their family's price.
 */
export const BUILTIN_PRICES: Readonly<Record<string, ModelPrice>> = {
  // OpenAI (cached input: what a prompt prefix served from its automatic cache costs)
  "gpt-4o": { input: 2.5, output: 10, cachedInput: 1.25 },
  "gpt-4o-mini": { input: 0.15, output: 0.6, cachedInput: 0.075 },
  "gpt-4.1": { input: 2, output: 8, cachedInput: 0.5 },
  "gpt-4.1-mini": { input: 0.4, output: 1.6, cachedInput: 0.1 },
  "gpt-4.1-nano": { input: 0.1, output: 0.4, cachedInput: 0.025 },
  "gpt-5": { input: 1.25, output: 10, cachedInput: 0.125 },
  "gpt-5-mini": { input: 0.25, output: 2, cachedInput: 0.025 },
  "gpt-5-nano": { input: 0.05, output: 0.4, cachedInput: 0.005 },
  o3: { input: 2, output: 8, cachedInput: 0.5 },
  "o3-mini": { input: 1.1, output: 4.4, cachedInput: 0.55 },
  "o4-mini": { input: 1.1, output: 4.4, cachedInput: 0.275 },
  // Anthropic (cache reads at a tenth of the input price, writes of the 5-minute cache at 1.25 times it)
  "claude-3-haiku": { input: 0.25, output: 1.25, cachedInput: 0.03, cacheWrite: 0.3 },
  "claude-3-5-haiku": { input: 0.8, output: 4, cachedInput: 0.08, cacheWrite: 1 },
  "claude-haiku-4-5": { input: 1, output: 5, cachedInput: 0.1, cacheWrite: 1.25 },
  "claude-3-5-sonnet": { input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75 },
  "claude-3-7-sonnet": { input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75 },
  "claude-sonnet-4": { input: 3, output: 15, cachedInput: 0.3, cacheWrite: 3.75 },
  "claude-opus-4": { input: 15, output: 75, cachedInput: 1.5, cacheWrite: 18.75 },
  "claude-opus-4-5": { input: 5, output: 25, cachedInput: 0.5, cacheWrite: 6.25 },
  // DeepSeek (a cache hit is priced apart)
  "deepseek-chat": { input: 0.27, output: 1.1, cachedInput: 0.07 },
  "deepseek-reasoner": { input: 0.55, output: 2.19, cachedInput: 0.14 },
};

/** Providers whose models run on the user's own machine and cost nothing per token. */
const FREE_PROVIDERS = new Set(["offline", "scripted", "ollama"]);

function longestPrefix(table: Readonly<Record<string, ModelPrice>>, id: string): ModelPrice | undefined {
  let best: { key: string; price: ModelPrice } | undefined;
  for (const [key, price] of Object.entries(table)) {
    if ((id === key || id.startsWith(`${key}-`) || id.startsWith(`${key}@`)) && key.length > (best?.key.length ?? -1)) best = { key, price };
  }
  return best?.price;
}

/**
 * The price of `provider:model`: the config's entry for `provider:model` or `model` (exact or by
 * prefix), else the built-in table, else nothing (cost unknown, counted as 0 and noted).
 */
export function priceFor(provider: string, model: string, overrides: Readonly<Record<string, ModelPrice>> = {}): ModelPrice | undefined {
  const qualified = `${provider}:${model}`;
  const configured = overrides[qualified] ?? overrides[model] ?? longestPrefix(overrides, model);
  if (configured) return configured;
  if (FREE_PROVIDERS.has(provider)) return { input: 0, output: 0 };
  return longestPrefix(BUILTIN_PRICES, model);
}

/** A call's tokens as a price applies to them: the whole prompt (cached and written parts included) and the answer. */
export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  /** Of the prompt, the tokens served from the provider's cache. */
  cachedPromptTokens?: number;
  /** Of the prompt, the tokens written to the cache (Anthropic charges for them). */
  cacheWriteTokens?: number;
}

/**
 * Dollars for a call's tokens: the prompt at the input price, except what the provider served
 * from its cache (at the cached price) and what it wrote to its cache (at the cache-write price),
 * and the answer (reasoning included) at the output price. A price without cached rates charges
 * the input price for both.
 */
export function costOf(price: ModelPrice | undefined, usage: TokenUsage): number {
  if (!price) return 0;
  const cached = Math.min(usage.cachedPromptTokens ?? 0, usage.promptTokens);
  const written = Math.min(usage.cacheWriteTokens ?? 0, usage.promptTokens - cached);
  const fresh = usage.promptTokens - cached - written;
  return (fresh * price.input + cached * (price.cachedInput ?? price.input) + written * (price.cacheWrite ?? price.input) + usage.completionTokens * price.output) / 1_000_000;
}
