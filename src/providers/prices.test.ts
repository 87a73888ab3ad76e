import { describe, expect, it } from "vitest";
import { costOf, priceFor } from "./prices.js";

describe("priceFor", () => {
  it("matches a model's longest listed prefix, so snapshots and aliases take their family's price", () => {
    expect(priceFor("openai", "gpt-4o-mini")).toEqual({ input: 0.15, output: 0.6, cachedInput: 0.075 });
    expect(priceFor("openai", "gpt-4o-2024-08-06")).toEqual({ input: 2.5, output: 10, cachedInput: 1.25 });
    expect(priceFor("anthropic", "claude-3-5-haiku-latest")).toEqual({ input: 0.8, output: 4, cachedInput: 0.08, cacheWrite: 1 });
    expect(priceFor("anthropic", "claude-opus-4-5-20251101")).toEqual({ input: 5, output: 25, cachedInput: 0.5, cacheWrite: 6.25 });
    expect(priceFor("openai", "gpt-3.5-turbo")).toBeUndefined();
  });

  it("takes the config's prices first (provider:model, model, prefix) and counts local models as free", () => {
    const overrides = { "deepseek:deepseek-chat": { input: 1, output: 2 }, "kimi-k2": { input: 0.6, output: 2.5 } };
    expect(priceFor("deepseek", "deepseek-chat", overrides)).toEqual({ input: 1, output: 2 });
    expect(priceFor("openai-compatible", "deepseek-chat", overrides)).toEqual({ input: 0.27, output: 1.1, cachedInput: 0.07 });
    expect(priceFor("moonshot", "kimi-k2-0905-preview", overrides)).toEqual({ input: 0.6, output: 2.5 });
    expect(priceFor("ollama", "llama3.1")).toEqual({ input: 0, output: 0 });
    expect(priceFor("openai-compatible", "qwen2.5-7b")).toBeUndefined();
  });

  it("prices a call per million tokens", () => {
    expect(costOf({ input: 2.5, output: 10 }, { promptTokens: 1_000_000, completionTokens: 500_000 })).toBe(7.5);
    expect(costOf(undefined, { promptTokens: 1000, completionTokens: 1000 })).toBe(0);
  });

  it("prices cached prompt tokens at the cached rate and cache writes at the write rate", () => {
    // OpenAI: 600k of a 1M-token prompt from its cache, at half price.
    expect(costOf({ input: 2.5, output: 10, cachedInput: 1.25 }, { promptTokens: 1_000_000, completionTokens: 0, cachedPromptTokens: 600_000 })).toBeCloseTo(0.4 * 2.5 + 0.6 * 1.25, 10);
    // Anthropic: 500k read at a tenth, 200k written at 1.25 times, 300k fresh.
    const haiku = priceFor("anthropic", "claude-haiku-4-5");
    expect(costOf(haiku, { promptTokens: 1_000_000, completionTokens: 100_000, cachedPromptTokens: 500_000, cacheWriteTokens: 200_000 })).toBeCloseTo(0.3 * 1 + 0.5 * 0.1 + 0.2 * 1.25 + 0.1 * 5, 10);
    // Without a cached rate, cached tokens cost the input price; more than the prompt is never counted.
    expect(costOf({ input: 1, output: 1 }, { promptTokens: 1_000_000, completionTokens: 0, cachedPromptTokens: 2_000_000 })).toBe(1);
  });
});
