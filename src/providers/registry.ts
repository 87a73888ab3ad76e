import { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { ModelPrice, PlanWire, ProviderSettings, StructuredMethod } from "../config/config-file.js";
import type { Env } from "../config/env.js";
import { ConfigError } from "../core/errors.js";
import { anthropicProvider } from "./anthropic.js";
import { type CallPolicy, DEFAULT_CALL_POLICY } from "./call-policy.js";
import { offlineProvider } from "./offline/index.js";
import { OfflineChatModel } from "./offline/offline-chat-model.js";
import { ollamaProvider } from "./ollama.js";
import { openaiProvider } from "./openai.js";
import { openAICompatibleProvider, openaiCompatibleProvider } from "./openai-compatible.js";
import { contextWindowOf } from "./context-windows.js";
import { priceFor } from "./prices.js";
import type { Embedder } from "../core/embedder.js";
import type { AnswerFormat } from "../core/run.js";
import { MODEL_ROLES, type ModelRole, type ProviderDefinition } from "./provider.js";

export interface ModelChoice {
  provider: string;
  model: string;
}

/** `provider:model`. */
export function choiceId(choice: ModelChoice): string {
  return `${choice.provider}:${choice.model}`;
}

/** One model of a role's chain, with what troupe needs to know to call and bill it. */
export interface ModelCandidate {
  choice: ModelChoice;
  model: BaseChatModel;
  structuredMethod: StructuredMethod;
  /** How its planner writes a plan: a step a line of text (`compact`), or strict structured output (`json`). */
  planWire?: PlanWire;
  /** Whether structured requests ask for strict schema adherence (OpenAI `strict: true`, Anthropic strict tools). */
  strict?: boolean;
  /** JSON-schema keywords the provider's strict mode refuses (moved into descriptions when strict). */
  strictUnsupported?: readonly string[];
  /** Whether it streams tokens (the synthesizer's answer then streams to the user). */
  streams: boolean;
  /** How its answers are meant to be read (absent: Markdown). */
  answerFormat?: AnswerFormat;
  /** False when it writes no typed answers (JSON against an output schema). */
  typedAnswers?: false;
  /** Undefined when the price is unknown (its cost is counted as 0). */
  price: ModelPrice | undefined;
  /** The output limit its answers are made within, when troupe knows it. */
  maxOutputTokens?: number;
  /** The same model with a larger output limit, when its provider can make one (an answer cut off is asked again with more room). */
  withOutputLimit?: (maxTokens: number) => BaseChatModel;
  /** `anthropic`: its requests mark prompt-cache breakpoints. */
  promptCaching?: "anthropic";
  /** It thinks before answering (Anthropic extended thinking): structured answers cannot force a tool call. */
  thinks?: boolean;
  /** Its context window in tokens, when known. */
  contextWindow?: number;
}

/** The chat model for each role of a run. */
export type ModelSet = Record<ModelRole, BaseChatModel> & {
  choice: Record<ModelRole, ModelChoice>;
  /** Each role's model followed by its fallbacks; absent for a set made by hand (the role's model alone). */
  chains?: Record<ModelRole, ModelCandidate[]>;
  /** Chains of other models, by `provider:model`: an agent's or a voter's own model, followed by the fallbacks. */
  extra?: Record<string, ModelCandidate[]>;
  /** Text embeddings of the main provider, when it has them (tool discovery uses them). */
  embeddings?: Embedder;
  policy?: CallPolicy;
};

/** What a role calls: its models in order, and how to call them. */
export interface ModelRoute {
  role: ModelRole;
  candidates: ModelCandidate[];
  policy: CallPolicy;
}

/**
 * Whether a chat model can stream, by LangChain's own rule: it implements `_streamResponseChunks`
 * and streaming is not turned off (otherwise `stream()` yields the whole answer as one chunk).
 */
export function canStream(model: BaseChatModel): boolean {
  return model._streamResponseChunks !== BaseChatModel.prototype._streamResponseChunks && model.disableStreaming !== true;
}

/** A set made by hand has no chain: the role's model alone (the offline model with its traits). */
function handMadeCandidate(models: ModelSet, role: ModelRole): ModelCandidate {
  const model = models[role];
  const offline = model instanceof OfflineChatModel ? { answerFormat: "text" as const, typedAnswers: false as const } : {};
  return { choice: models.choice[role], model, structuredMethod: "functionCalling", planWire: "compact", streams: canStream(model), price: { input: 0, output: 0 }, ...offline };
}

/** The route of one role: its chain, or, for a set made by hand, its one model (streaming when the model can). */
export function routeFor(models: ModelSet, role: ModelRole): ModelRoute {
  const chain = models.chains?.[role];
  const candidates = chain ?? [handMadeCandidate(models, role)];
  return { role, candidates, policy: models.policy ?? DEFAULT_CALL_POLICY };
}

/**
 * The route of a model named by `provider:model` (an agent's or a voter's own), from the set's
 * extra chains; a set without that chain (one made by hand, a test's) gives `role`'s route.
 */
export function routeForModel(models: ModelSet, model: string | undefined, role: ModelRole): ModelRoute {
  const chain = model !== undefined ? models.extra?.[model] : undefined;
  if (!chain) return routeFor(models, role);
  return { role, candidates: chain, policy: models.policy ?? DEFAULT_CALL_POLICY };
}

/** Which models a run uses: the main choice, a choice per role, and the fallback chain. */
export interface ModelSelection {
  main: ModelChoice;
  roles?: Partial<Record<ModelRole, ModelChoice>>;
  fallbacks?: ModelChoice[];
  /** Other models to make (agents' and voters' own), each with the fallbacks after it. */
  extra?: ModelChoice[];
}

export interface ModelSetOptions {
  settings?: Readonly<Record<string, ProviderSettings>>;
  prices?: Readonly<Record<string, ModelPrice>>;
  policy?: CallPolicy;
}

/** Providers by id; a duplicate id is an error, an unknown id a clear ConfigError. */
export class ProviderRegistry {
  readonly #providers = new Map<string, ProviderDefinition>();

  register(provider: ProviderDefinition): this {
    if (this.#providers.has(provider.id)) throw new Error(`a provider named "${provider.id}" is already registered`);
    this.#providers.set(provider.id, provider);
    return this;
  }

  has(id: string): boolean {
    return this.#providers.has(id);
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

  /**
   * Reads `provider:model`, a bare provider id (its default model), or — when `mainProvider` is
   * given — a bare model name of that provider. `model` overrides the model.
   */
  resolve(spec: string, model?: string, mainProvider?: string): ModelChoice {
    const trimmed = spec.trim();
    const colon = trimmed.indexOf(":");
    let id = colon >= 0 ? trimmed.slice(0, colon).trim() : trimmed;
    let inlineModel = colon >= 0 ? trimmed.slice(colon + 1).trim() : undefined;
    if (colon < 0 && mainProvider !== undefined && !this.#providers.has(id)) {
      inlineModel = id;
      id = mainProvider;
    }
    const provider = this.get(id);
    const chosen = model?.trim() || inlineModel || provider.defaultModel;
    if (!chosen) {
      throw new ConfigError("missing_model", `provider "${provider.id}" needs a model: use ${provider.id}:<model>, --model or TROUPE_MODEL`, { provider: provider.id });
    }
    return { provider: provider.id, model: chosen };
  }

  /** Checks the provider's settings and required environment; a missing variable is named in the error. */
  check(choice: ModelChoice, env: Env, settings: ProviderSettings = {}): void {
    const provider = this.get(choice.provider);
    provider.validate?.(env, settings);
    for (const name of provider.requiredEnv?.(env, settings) ?? []) {
      const value = (env as Record<string, unknown>)[name];
      if (typeof value !== "string" || value.trim() === "") {
        throw new ConfigError("missing_env", `provider "${provider.id}" needs ${name}; set it in the environment`, { variable: name });
      }
    }
  }

  /**
   * The embeddings model named by `provider:model` (long-term memory's semantic search), checked
   * like a chat model's provider; a provider without embeddings, or a spec without a model, is a
   * ConfigError naming the setting.
   */
  createEmbeddings(spec: string, env: Env, options: { settings?: Readonly<Record<string, ProviderSettings>>; timeoutMs?: number; source?: string } = {}): { embeddings: Embedder; model: string } {
    const source = options.source ?? "memory.embeddings";
    const colon = spec.indexOf(":");
    const id = (colon >= 0 ? spec.slice(0, colon) : spec).trim();
    const model = colon >= 0 ? spec.slice(colon + 1).trim() : "";
    if (!model) throw new ConfigError("invalid_config", `${source}: name the embeddings model as provider:model (e.g. openai:text-embedding-3-small), not "${spec}"`, { setting: source });
    const provider = this.get(id);
    if (!provider.createEmbeddings) throw new ConfigError("invalid_config", `${source}: provider "${id}" has no embeddings models`, { setting: source, provider: id });
    const settings = options.settings?.[id] ?? {};
    this.check({ provider: id, model }, env, settings);
    const embeddings = provider.createEmbeddings({ model, env, settings, timeoutMs: options.timeoutMs ?? DEFAULT_CALL_POLICY.timeoutMs });
    if (!embeddings) throw new ConfigError("invalid_config", `${source}: provider "${id}" has no embeddings model ${model}`, { setting: source, provider: id });
    return { embeddings, model: `${id}:${model}` };
  }

  /**
   * One chain per role: the role's model (or the main one), then the fallbacks. Every provider
   * named is checked first, so a missing key anywhere in the chain fails before the run starts.
   * Models are shared between roles that use the same `provider:model`.
   */
  createModelSet(selection: ModelSelection | ModelChoice, env: Env, options: ModelSetOptions = {}): ModelSet {
    const { main, roles = {}, fallbacks = [], extra = [] } = "main" in selection ? selection : { main: selection };
    const settingsOf = (id: string): ProviderSettings => options.settings?.[id] ?? {};
    const cache = new Map<string, ModelCandidate>();
    const policy = options.policy ?? DEFAULT_CALL_POLICY;
    const candidate = (choice: ModelChoice, role: ModelRole): ModelCandidate => {
      const key = choiceId(choice);
      let made = cache.get(key);
      if (!made) {
        const provider = this.get(choice.provider);
        const settings = settingsOf(provider.id);
        this.check(choice, env, settings);
        const structuredMethod = settings.structuredOutput ?? provider.structuredMethod ?? "functionCalling";
        const strictDefault = provider.strict?.[structuredMethod];
        const model = provider.createModel({ model: choice.model, role, env, settings, timeoutMs: policy.timeoutMs });
        const maxOutputTokens = provider.outputLimit?.(settings);
        const limit = provider.withOutputLimit;
        const caching = provider.promptCaching?.(settings);
        const contextWindow = settings.contextWindow ?? contextWindowOf(choice.model);
        made = {
          choice,
          model,
          structuredMethod,
          planWire: settings.planWire ?? provider.planWire ?? "compact",
          strict: strictDefault !== undefined && (settings.strict ?? strictDefault),
          ...(provider.strictUnsupported ? { strictUnsupported: provider.strictUnsupported } : {}),
          streams: (provider.streams ?? false) && settings.streaming !== false,
          ...(provider.answerFormat ? { answerFormat: provider.answerFormat } : {}),
          ...(provider.typedAnswers === false ? { typedAnswers: false as const } : {}),
          price: priceFor(choice.provider, choice.model, options.prices),
          ...(maxOutputTokens !== undefined ? { maxOutputTokens } : {}),
          ...(limit ? { withOutputLimit: (maxTokens: number) => limit(model, maxTokens) } : {}),
          ...(caching ? { promptCaching: caching } : {}),
          ...(provider.thinks?.(settings) ? { thinks: true } : {}),
          ...(contextWindow !== undefined ? { contextWindow } : {}),
        };
        cache.set(key, made);
      }
      return made;
    };
    const chains = {} as Record<ModelRole, ModelCandidate[]>;
    for (const role of MODEL_ROLES) {
      const primary = candidate(roles[role] ?? main, role);
      const chain = [primary];
      for (const fallback of fallbacks) {
        const next = candidate(fallback, role);
        if (!chain.includes(next)) chain.push(next);
      }
      chains[role] = chain;
    }
    const models = Object.fromEntries(MODEL_ROLES.map((role) => [role, chains[role][0]?.model])) as Record<ModelRole, BaseChatModel>;
    const choice = Object.fromEntries(MODEL_ROLES.map((role) => [role, chains[role][0]?.choice])) as Record<ModelRole, ModelChoice>;
    const extraChains: Record<string, ModelCandidate[]> = {};
    for (const other of extra) {
      const chain = [candidate(other, "worker")];
      for (const fallback of fallbacks) {
        const next = candidate(fallback, "worker");
        if (!chain.includes(next)) chain.push(next);
      }
      extraChains[choiceId(other)] = chain;
    }
    const provider = this.get(main.provider);
    const embeddings = provider.createEmbeddings?.({ env, settings: settingsOf(provider.id), timeoutMs: policy.timeoutMs });
    return { ...models, choice, chains, ...(extra.length > 0 ? { extra: extraChains } : {}), ...(embeddings ? { embeddings } : {}), policy };
  }
}

/** A provider for each endpoint the config file defines with a `type`, under its own id. */
export function providersFromSettings(settings: Readonly<Record<string, ProviderSettings>>): ProviderDefinition[] {
  const byType: Record<string, ProviderDefinition> = { openai: openaiProvider, anthropic: anthropicProvider, ollama: ollamaProvider };
  const made: ProviderDefinition[] = [];
  for (const [id, entry] of Object.entries(settings)) {
    if (!entry.type || BUILTIN_PROVIDER_IDS.includes(id)) continue;
    const base = entry.type === "openai-compatible" ? openAICompatibleProvider(id) : { ...(byType[entry.type] as ProviderDefinition), id };
    made.push({ ...base, defaultModel: entry.defaultModel ?? base.defaultModel });
  }
  return made;
}

const BUILTIN_PROVIDERS: ProviderDefinition[] = [offlineProvider, openaiProvider, anthropicProvider, ollamaProvider, openaiCompatibleProvider];
const BUILTIN_PROVIDER_IDS = BUILTIN_PROVIDERS.map((provider) => provider.id);

/**
 * A registry with the providers troupe ships, the endpoints the config file defines, and any
 * extra ones; a `defaultModel` in the settings of a shipped provider replaces its default.
 */
export function createProviderRegistry(extra: ProviderDefinition[] = [], settings: Readonly<Record<string, ProviderSettings>> = {}): ProviderRegistry {
  const registry = new ProviderRegistry();
  for (const provider of BUILTIN_PROVIDERS) {
    const defaultModel = settings[provider.id]?.defaultModel;
    registry.register(defaultModel ? { ...provider, defaultModel } : provider);
  }
  for (const provider of [...providersFromSettings(settings), ...extra]) registry.register(provider);
  return registry;
}
