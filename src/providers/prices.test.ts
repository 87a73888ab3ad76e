import { describe, expect, it } from "vitest";
import { costOf, priceFor } from "./prices.js";

describe("priceFor", () => {
  it("matches a model's longest listed prefix, so snapshots and aliases take their family's price", () => {
    expect(priceFor("openai", "gpt-4o-mini")).toEqual({ input: 0.15, output: 0.6 });
    expect(priceFor("openai", "gpt-4o-2024-08-06")).toEqual({ input: 2.5, output: 10 });
    expect(priceFor("anthropic", "claude-3-5-haiku-latest")).toEqual({ input: 0.8, output: 4 });
    expect(priceFor("anthropic", "claude-opus-4-5-20251101")).toEqual({ input: 5, output: 25 });
    expect(priceFor("openai", "gpt-3.5-turbo")).toBeUndefined();
  });

  it("takes the config's prices first (provider:model, model, prefix) and counts local models as free", () => {
    const overrides = { "deepseek:deepseek-chat": { input: 1, output: 2 }, "kimi-k2": { input: 0.6, output: 2.5 } };
    expect(priceFor("deepseek", "deepseek-chat", overrides)).toEqual({ input: 1, output: 2 });
    expect(priceFor("openai-compatible", "deepseek-chat", overrides)).toEqual({ input: 0.27, output: 1.1 });
    expect(priceFor("moonshot", "kimi-k2-0905-preview", overrides)).toEqual({ input: 0.6, output: 2.5 });
    expect(priceFor("ollama", "llama3.1")).toEqual({ input: 0, output: 0 });
    expect(priceFor("openai-compatible", "qwen2.5-7b")).toBeUndefined();
  });

  it("prices a call per million tokens", () => {
    expect(costOf({ input: 2.5, output: 10 }, 1_000_000, 500_000)).toBe(7.5);
    expect(costOf(undefined, 1000, 1000)).toBe(0);
  });
});
