import type { ModelPrice } from "../config/config-file.js";

/**
 * List prices in US dollars per million tokens (input, output) of common models, as published
 * by their vendors in 2025. Prices change: the config file's `prices` overrides any of them, and
 * adds models not listed. A model id matches its longest listed prefix, so dated snapshots
 * (`gpt-4o-2024-08-06`, `claude-3-5-haiku-20241022`) take their family's price.
 */
export const BUILTIN_PRICES: Readonly<Record<string, ModelPrice>> = {
  // OpenAI
  "gpt-4o": { input: 2.5, output: 10 },
  "gpt-4o-mini": { input: 0.15, output: 0.6 },
  "gpt-4.1": { input: 2, output: 8 },
  "gpt-4.1-mini": { input: 0.4, output: 1.6 },
  "gpt-4.1-nano": { input: 0.1, output: 0.4 },
  "gpt-5": { input: 1.25, output: 10 },
  "gpt-5-mini": { input: 0.25, output: 2 },
  "gpt-5-nano": { input: 0.05, output: 0.4 },
  o3: { input: 2, output: 8 },
  "o3-mini": { input: 1.1, output: 4.4 },
  "o4-mini": { input: 1.1, output: 4.4 },
  // Anthropic
  "claude-3-haiku": { input: 0.25, output: 1.25 },
  "claude-3-5-haiku": { input: 0.8, output: 4 },
  "claude-haiku-4-5": { input: 1, output: 5 },
  "claude-3-5-sonnet": { input: 3, output: 15 },
  "claude-3-7-sonnet": { input: 3, output: 15 },
  "claude-sonnet-4": { input: 3, output: 15 },
  "claude-opus-4": { input: 15, output: 75 },
  "claude-opus-4-5": { input: 5, output: 25 },
  // DeepSeek
  "deepseek-chat": { input: 0.27, output: 1.1 },
  "deepseek-reasoner": { input: 0.55, output: 2.19 },
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

/** Dollars for a call's tokens. */
export function costOf(price: ModelPrice | undefined, promptTokens: number, completionTokens: number): number {
  if (!price) return 0;
  return (promptTokens * price.input + completionTokens * price.output) / 1_000_000;
}
