import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { PlanWire, ProviderSettings, StructuredMethod } from "../config/config-file.js";
import type { Env } from "../config/env.js";
import type { Embedder } from "../core/embedder.js";
import type { AnswerFormat } from "../core/run.js";

/** The roles a model can be chosen for; planner and critic may use a stronger model than workers. */
export const MODEL_ROLES = ["planner", "worker", "critic", "synthesizer"] as const;
export type ModelRole = (typeof MODEL_ROLES)[number];

export interface CreateModelOptions {
  model: string;
  role: ModelRole;
  env: Env;
  /** This provider's settings from the config file (base URL, key variable, headers). */
  settings: ProviderSettings;
  /** Per-call timeout; troupe also enforces it itself, so it holds for every provider. */
  timeoutMs: number;
}

/** A source of chat models. One file per provider; selected by id (`provider` or `provider:model`). */
export interface ProviderDefinition {
  id: string;
  description: string;
  /** The model used when none is named; a provider without one needs a model named. */
  defaultModel?: string;
  /** Environment variables that must be set before a model can be created. */
  requiredEnv?: (env: Env, settings: ProviderSettings) => string[];
  /** Checks the settings (a base URL, say) before any model is made; throws a ConfigError. */
  validate?: (env: Env, settings: ProviderSettings) => void;
  /** How this provider gives machine-read answers natively (default: a forced tool call). */
  structuredMethod?: StructuredMethod;
  /** How its planner writes a plan unless the config says (default: `compact`; `json` where the models need constrained decoding to keep to a format). */
  planWire?: PlanWire;
  /**
   * The structured methods that can ask for strict schema adherence, and whether they do unless
   * the config's `strict` says otherwise (a method not listed never does).
   */
  strict?: Partial<Record<StructuredMethod, boolean>>;
  /** JSON-schema keywords its strict mode refuses; they are moved into descriptions when strict. */
  strictUnsupported?: readonly string[];
  /** Whether its models stream tokens (troupe's own models answer in one piece). */
  streams?: boolean;
  /**
   * How its answers are meant to be read: `markdown` (the default: a language model's, rendered
   * as Markdown) or `text` (the offline model's, written by rules, where `14*3` is arithmetic and
   * not emphasis).
   */
  answerFormat?: AnswerFormat;
  /** Whether its models can write a typed answer, JSON against an output schema (default true; the offline model cannot). */
  typedAnswers?: boolean;
  /** The output limit its models answer within, by default and with these settings (undefined: the server's own). */
  outputLimit?: (settings: ProviderSettings) => number | undefined;
  /** A model like `model` with another output limit (for an answer cut off at the limit, asked again with more room). */
  withOutputLimit?: (model: BaseChatModel, maxTokens: number) => BaseChatModel;
  /** `anthropic`: requests mark prompt-cache breakpoints (`cache_control`); otherwise the provider caches prompt prefixes by itself. */
  promptCaching?: (settings: ProviderSettings) => "anthropic" | undefined;
  /** Whether its models think before answering (Anthropic extended thinking), which rules out forcing a tool call. */
  thinks?: (settings: ProviderSettings) => boolean;
  createModel(options: CreateModelOptions): BaseChatModel;
  /**
   * An embeddings model of this provider: the one `model` names (long-term memory's semantic
   * search), or without it the provider's default one (tool discovery ranks by it besides BM25);
   * undefined when it has none.
   */
  createEmbeddings?(options: Omit<CreateModelOptions, "model" | "role"> & { model?: string }): Embedder | undefined;
}

export function defineProvider(definition: ProviderDefinition): ProviderDefinition {
  return definition;
}
