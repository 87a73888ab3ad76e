import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { Env } from "../config/env.js";
import { ConfigError } from "../core/errors.js";
import { offlineProvider } from "./offline/index.js";
import { MODEL_ROLES, type ModelRole, type ProviderDefinition } from "./provider.js";

export interface ModelChoice {
  provider: string;
  model: string;
}

/** The chat model for each role of a run. */
export type ModelSet = Record<ModelRole, BaseChatModel> & { choice: Record<ModelRole, ModelChoice> };

/** Providers by id; a duplicate id is an error, an unknown id a clear ConfigError. */
export class ProviderRegistry {
  readonly #providers = new Map<string, ProviderDefinition>();

  register(provider: ProviderDefinition): this {
    if (this.#providers.has(provider.id)) throw new Error(`a provider named "${provider.id}" is already registered`);
    this.#providers.set(provider.id, provider);
    return this;
  }

  ids(): string[] {
    return [...this.#providers.keys()];
  }

  get(id: string): ProviderDefinition {
    const provider = this.#providers.get(id);
    if (!provider) {
      throw new ConfigError("unknown_provider", `unknown provider "${id}" (known: ${this.ids().join(", ")})`, { provider: id });
    }
    return provider;
  }

  /** Splits `provider:model` (or a bare provider id) and checks the provider exists. */
  resolve(spec: string, model?: string): ModelChoice {
    const [id = "", inlineModel] = spec.includes(":") ? [spec.slice(0, spec.indexOf(":")), spec.slice(spec.indexOf(":") + 1)] : [spec];
    const provider = this.get(id.trim());
    return { provider: provider.id, model: model?.trim() || inlineModel?.trim() || provider.defaultModel };
  }

  /** Checks the provider's required environment; a missing variable is named in the error. */
  check(choice: ModelChoice, env: Env): void {
    const provider = this.get(choice.provider);
    for (const name of provider.requiredEnv?.(env) ?? []) {
      const value = (env as Record<string, unknown>)[name];
      if (typeof value !== "string" || value.trim() === "") {
        throw new ConfigError("missing_env", `provider "${provider.id}" needs ${name}; set it in the environment`, { variable: name });
      }
    }
  }

  /** One model per role (the same choice for every role unless `perRole` says otherwise). */
  createModelSet(choice: ModelChoice, env: Env, perRole: Partial<Record<ModelRole, ModelChoice>> = {}): ModelSet {
    const models = {} as Record<ModelRole, BaseChatModel>;
    const choices = {} as Record<ModelRole, ModelChoice>;
    const cache = new Map<string, BaseChatModel>();
    for (const role of MODEL_ROLES) {
      const roleChoice = perRole[role] ?? choice;
      this.check(roleChoice, env);
      const key = `${roleChoice.provider}:${roleChoice.model}`;
      let model = cache.get(key);
      if (!model) {
        model = this.get(roleChoice.provider).createModel({ model: roleChoice.model, role, env });
        cache.set(key, model);
      }
      models[role] = model;
      choices[role] = roleChoice;
    }
    return { ...models, choice: choices };
  }
}

/** A registry with the providers troupe ships. */
export function createProviderRegistry(extra: ProviderDefinition[] = []): ProviderRegistry {
  const registry = new ProviderRegistry().register(offlineProvider);
  for (const provider of extra) registry.register(provider);
  return registry;
}
