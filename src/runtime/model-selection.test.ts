import { describe, expect, it } from "vitest";
import { parseEnv } from "../config/env.js";
import { choiceId } from "../providers/registry.js";
import { callPolicyOf, createModels, registryFor, resolveSelection } from "./model-selection.js";

const keys = { OPENAI_API_KEY: "sk", ANTHROPIC_API_KEY: "sk-ant" };

describe("model selection", () => {
  it("takes flags over the environment over the config file over offline", () => {
    const config = { provider: "anthropic", model: "claude-sonnet-4-5" };
    const registry = registryFor(config);
    const pick = (env: Record<string, string>, provider?: string, model?: string) =>
      resolveSelection(registry, { env: parseEnv(env), config, provider, model });
    expect(pick({})).toMatchObject({ selection: { main: { provider: "anthropic", model: "claude-sonnet-4-5" } }, source: "config" });
    expect(pick({ TROUPE_PROVIDER: "openai" })).toMatchObject({ selection: { main: { provider: "openai", model: "gpt-4.1-mini" } }, source: "env" });
    expect(pick({ TROUPE_PROVIDER: "openai", TROUPE_MODEL: "gpt-4o" }, "ollama:qwen2.5:7b")).toMatchObject({ selection: { main: { provider: "ollama", model: "qwen2.5:7b" } }, source: "option" });
    expect(pick({}, "openai", "o3-mini").selection.main).toEqual({ provider: "openai", model: "o3-mini" });
    expect(resolveSelection(registryFor({}), { env: parseEnv({}), config: {} }).source).toBe("default");
  });

  it("gives a role its own model (a bare model name is the main provider's) and builds each role's chain", () => {
    const config = { provider: "openai:gpt-4o-mini", roles: { critic: "anthropic:claude-sonnet-4-5" }, fallbacks: ["anthropic", "offline"] };
    const { models } = createModels(registryFor(config), { env: parseEnv({ ...keys, TROUPE_PLANNER_MODEL: "gpt-4.1" }), config });
    expect(choiceId(models.choice.planner)).toBe("openai:gpt-4.1");
    expect(choiceId(models.choice.critic)).toBe("anthropic:claude-sonnet-4-5");
    expect(models.chains?.worker.map((candidate) => choiceId(candidate.choice))).toEqual(["openai:gpt-4o-mini", "anthropic:claude-haiku-4-5", "offline:rules-v1"]);
    expect(models.chains?.planner[0]?.structuredMethod).toBe("jsonSchema");
    expect(models.chains?.critic[0]?.structuredMethod).toBe("functionCalling");
    // One model object per provider:model, shared by the roles that use it.
    expect(models.worker).toBe(models.synthesizer);
  });

  it("makes an OpenAI-compatible endpoint named in the config, with its key variable and structured method", () => {
    const config = { provider: "deepseek", providers: { deepseek: { type: "openai-compatible" as const, baseUrl: "https://api.deepseek.com/v1", apiKeyEnv: "DEEPSEEK_API_KEY", defaultModel: "deepseek-chat" } } };
    expect(() => createModels(registryFor(config), { env: parseEnv({}), config })).toThrow('provider "deepseek" needs DEEPSEEK_API_KEY; set it in the environment');
    const { models } = createModels(registryFor(config), { env: parseEnv({ DEEPSEEK_API_KEY: "sk-ds" }), config });
    expect(choiceId(models.choice.worker)).toBe("deepseek:deepseek-chat");
    expect(models.chains?.worker[0]?.price).toEqual({ input: 0.27, output: 1.1, cachedInput: 0.07 });
  });

  it("reads OLLAMA_HOST as Ollama does and checks it", () => {
    const config = {};
    const { models } = createModels(registryFor(config), { env: parseEnv({ TROUPE_PROVIDER: "ollama:qwen2.5", OLLAMA_HOST: "127.0.0.1:11500" }), config });
    expect((models.worker as unknown as { baseUrl: string }).baseUrl).toBe("http://127.0.0.1:11500");
    expect(() => createModels(registryFor(config), { env: parseEnv({ TROUPE_PROVIDER: "ollama", OLLAMA_HOST: "ftp://host" }), config })).toThrow(/OLLAMA_HOST must be an http/);
  });

  it("takes the timeout and retries from the environment over the config file", () => {
    expect(callPolicyOf(parseEnv({ TROUPE_MAX_RETRIES: "1" }), { maxRetries: 5, timeoutMs: 1000 })).toMatchObject({ maxRetries: 1, timeoutMs: 1000 });
    expect(callPolicyOf(parseEnv({}), {})).toMatchObject({ maxRetries: 3, timeoutMs: 60_000 });
  });
});
