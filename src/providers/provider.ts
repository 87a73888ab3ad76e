import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import type { Env } from "../config/env.js";

/** The roles a model can be chosen for; planner and critic may use a stronger model than workers. */
export const MODEL_ROLES = ["planner", "worker", "critic", "synthesizer"] as const;
export type ModelRole = (typeof MODEL_ROLES)[number];

export interface CreateModelOptions {
  model: string;
  role: ModelRole;
  env: Env;
}

/** A source of chat models. One file per provider; selected by id (`provider` or `provider:model`). */
export interface ProviderDefinition {
  id: string;
  description: string;
  defaultModel: string;
  /** Environment variables that must be set before a model can be created. */
  requiredEnv?: (env: Env) => string[];
  createModel(options: CreateModelOptions): BaseChatModel;
}

export function defineProvider(definition: ProviderDefinition): ProviderDefinition {
  return definition;
}
