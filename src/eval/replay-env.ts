import { loadConfig } from "../config/config-file.js";
import type { Env } from "../config/env.js";
import { registryFor, resolveSelection } from "../runtime/model-selection.js";

/** What a missing key is set to for a replay; no request is ever sent with it. */
export const REPLAY_PLACEHOLDER_KEY = "troupe-replay-no-key";

/**
 * The environment for `--replay`: the API key variables the chosen providers need and that are
 * unset get a placeholder, since a replay never calls a provider (the cassettes answer). A suite
 * recorded with a real provider so replays in CI without its key. Other settings a provider
 * needs (a base URL) must be given as when it was recorded. On any problem the environment is
 * returned as it is, and the engine reports the problem as usual.
 */
export async function replayEnv(env: Env, choice: { provider?: string; model?: string }): Promise<Env> {
  try {
    const { config } = await loadConfig(process.cwd(), env.TROUPE_CONFIG);
    const registry = registryFor(config);
    const { selection } = resolveSelection(registry, { env, config, provider: choice.provider, model: choice.model });
    const chosen = [selection.main, ...Object.values(selection.roles ?? {}), ...(selection.fallbacks ?? [])];
    const filled: Record<string, unknown> = { ...env };
    for (const { provider } of chosen) {
      const definition = registry.get(provider);
      for (const name of definition.requiredEnv?.(env, config.providers?.[provider] ?? {}) ?? []) {
        const value = filled[name];
        if (/KEY$/.test(name) && (typeof value !== "string" || value.trim() === "")) filled[name] = REPLAY_PLACEHOLDER_KEY;
      }
    }
    return filled as Env;
  } catch {
    return env;
  }
}
