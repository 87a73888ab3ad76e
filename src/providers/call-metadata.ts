import { MODEL_ROLES, type ModelRole } from "./provider.js";
import type { ModelChoice } from "./registry.js";

/**
 * What a model call says about itself to LangChain's callbacks (the `metadata` of its runnable
 * config): the role asking, the subtask it works for, and the model actually called (after any
 * fallback). Observers read this instead of guessing from LangGraph's node and task names.
 */
export interface ModelCallMetadata {
  role: ModelRole;
  provider: string;
  model: string;
  subtaskId?: string;
}

const KEYS = { role: "troupe_role", provider: "troupe_provider", model: "troupe_model", subtaskId: "troupe_subtask_id" } as const;

/** The config metadata of one call. */
export function modelCallMetadata(role: ModelRole, choice: ModelChoice, subtaskId?: string): Record<string, string> {
  return { [KEYS.role]: role, [KEYS.provider]: choice.provider, [KEYS.model]: choice.model, ...(subtaskId ? { [KEYS.subtaskId]: subtaskId } : {}) };
}

/** The call's metadata as a callback sees it; undefined for a model call troupe did not make. */
export function readModelCallMetadata(metadata: Record<string, unknown> | undefined): ModelCallMetadata | undefined {
  const role = metadata?.[KEYS.role];
  const provider = metadata?.[KEYS.provider];
  const model = metadata?.[KEYS.model];
  if (typeof role !== "string" || !(MODEL_ROLES as readonly string[]).includes(role) || typeof provider !== "string" || typeof model !== "string") return undefined;
  const subtaskId = metadata?.[KEYS.subtaskId];
  return { role: role as ModelRole, provider, model, ...(typeof subtaskId === "string" ? { subtaskId } : {}) };
}
