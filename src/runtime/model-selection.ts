import type { TroupeConfig } from "../config/config-file.js";
import type { Env } from "../config/env.js";
import { type CallPolicy, DEFAULT_CALL_POLICY } from "../providers/call-policy.js";
import { MODEL_ROLES, type ModelRole, type ProviderDefinition } from "../providers/provider.js";
import { choiceId, createProviderRegistry, type ModelChoice, type ModelSelection, type ModelSet, type ProviderRegistry } from "../providers/registry.js";

/** Where the provider choice came from, so the CLI can say when it fell back to `offline`. */
export type ProviderSource = "option" | "env" | "config" | "default" | "injected";

const ROLE_VARIABLES: Record<ModelRole, keyof Env> = {
  planner: "TROUPE_PLANNER_MODEL",
  worker: "TROUPE_WORKER_MODEL",
  critic: "TROUPE_CRITIC_MODEL",
  synthesizer: "TROUPE_SYNTHESIZER_MODEL",
};

export interface SelectionInput {
  env: Env;
  config: TroupeConfig;
  /** `--provider`: `provider` or `provider:model`. */
  provider?: string;
  /** `--model`. */
  model?: string;
}

/**
 * Which models a run uses, without creating any: flags first, then the environment, then the
 * config file, then `offline`. A role's own model (TROUPE_PLANNER_MODEL…, `roles` in the config)
 * may be `provider:model` or a model of the main provider. Every id is checked, so an unknown
 * provider, a missing model or a malformed setting fails here.
 */
export function resolveSelection(registry: ProviderRegistry, input: SelectionInput): { selection: ModelSelection; source: ProviderSource } {
  const { env, config } = input;
  const spec = input.provider ?? env.TROUPE_PROVIDER ?? config.provider ?? "offline";
  const source: ProviderSource = input.provider ? "option" : env.TROUPE_PROVIDER ? "env" : config.provider ? "config" : "default";
  const inlineModel = spec.includes(":");
  let model = input.model;
  // A model in the environment or the config file does not override one named with --provider p:m.
  if (model === undefined && !(inlineModel && source === "option")) model = env.TROUPE_MODEL;
  if (model === undefined && !inlineModel && source === "config") model = config.model;
  const main = registry.resolve(spec, model);
  const roles: Partial<Record<ModelRole, ModelChoice>> = {};
  for (const role of MODEL_ROLES) {
    const roleSpec = (env[ROLE_VARIABLES[role]] as string | undefined) ?? config.roles?.[role];
    if (roleSpec !== undefined) roles[role] = registry.resolve(roleSpec, undefined, main.provider);
  }
  const fallbackSpecs = env.TROUPE_FALLBACKS !== undefined ? env.TROUPE_FALLBACKS.split(",").map((item) => item.trim()).filter(Boolean) : (config.fallbacks ?? []);
  const fallbacks = fallbackSpecs.map((item) => registry.resolve(item));
  return { selection: { main, roles, fallbacks }, source };
}

/** The call policy from the environment and the config file (default: 60 s timeout, 3 retries). */
export function callPolicyOf(env: Env, config: TroupeConfig): CallPolicy {
  return {
    ...DEFAULT_CALL_POLICY,
    timeoutMs: env.TROUPE_TIMEOUT_MS ?? config.timeoutMs ?? DEFAULT_CALL_POLICY.timeoutMs,
    maxRetries: env.TROUPE_MAX_RETRIES ?? config.maxRetries ?? DEFAULT_CALL_POLICY.maxRetries,
  };
}

/** The registry for a config (its endpoints and default models) plus any extra providers. */
export function registryFor(config: TroupeConfig, extra: ProviderDefinition[] = []): ProviderRegistry {
  return createProviderRegistry(extra, config.providers ?? {});
}

/** Resolves, checks and creates the models of a troupe instance. */
export function createModels(
  registry: ProviderRegistry,
  input: SelectionInput & { policy?: Partial<CallPolicy>; extra?: readonly string[] },
): { models: ModelSet; source: ProviderSource; resolved: Record<string, string> } {
  const { selection, source } = resolveSelection(registry, input);
  // Models of their own (agents', voters'): `provider:model`, or a model of the main provider.
  const resolved: Record<string, string> = {};
  const extra = (input.extra ?? []).map((spec) => {
    const choice = registry.resolve(spec, undefined, selection.main.provider);
    resolved[spec] = choiceId(choice);
    return choice;
  });
  if (extra.length > 0) selection.extra = extra;
  const policy = { ...callPolicyOf(input.env, input.config), ...input.policy };
  const models = registry.createModelSet(selection, input.env, { settings: input.config.providers ?? {}, prices: input.config.prices ?? {}, policy });
  return { models, source, resolved };
}
