import type { BaseChatModel } from "@langchain/core/language_models/chat_models";
import { MODEL_ROLES, type ModelRole } from "../providers/provider.js";
import type { ModelChoice, ModelSet } from "../providers/registry.js";

/** The same model for every role (planner, worker, critic, synthesizer). */
export function modelSetOf(model: BaseChatModel, choice: ModelChoice = { provider: "scripted", model: "script" }): ModelSet {
  const models = Object.fromEntries(MODEL_ROLES.map((role) => [role, model])) as Record<ModelRole, BaseChatModel>;
  const choices = Object.fromEntries(MODEL_ROLES.map((role) => [role, choice])) as Record<ModelRole, ModelChoice>;
  return { ...models, choice: choices };
}
