/**
 * Context windows in tokens of common models, as their vendors publish them (2025). A model id
 * matches its longest listed prefix; `providers.<id>.contextWindow` in the config file sets one
 * troupe does not know. A worker whose prompt would pass its model's window compacts its
 * history first.
 */
const CONTEXT_WINDOWS: Readonly<Record<string, number>> = {
  "gpt-4o": 128_000,
  "gpt-4.1": 1_047_576,
  "gpt-5": 400_000,
  o1: 200_000,
  o3: 200_000,
  "o4-mini": 200_000,
  claude: 200_000,
  "deepseek-chat": 128_000,
  "deepseek-reasoner": 128_000,
};

/** The window of a model, by its longest listed prefix; undefined when unknown. */
export function contextWindowOf(model: string): number | undefined {
  let best: { key: string; tokens: number } | undefined;
  for (const [key, tokens] of Object.entries(CONTEXT_WINDOWS)) {
    if (model.startsWith(key) && key.length > (best?.key.length ?? -1)) best = { key, tokens };
  }
  return best?.tokens;
}
