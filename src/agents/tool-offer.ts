import { LIMITS } from "../core/limits.js";
import type { PlannedSubtask, ToolOffer } from "../core/plan.js";
import type { ToolSpec } from "../core/tool-spec.js";
import type { Embedder, ToolIndex } from "../tools/discovery.js";

/** The worker's own tool for asking for more tools than it was offered. */
export const FIND_TOOLS = "find_tools";

export const FIND_TOOLS_SPEC: ToolSpec = {
  type: "function",
  function: {
    name: FIND_TOOLS,
    description: "Find more of your tools by what they should do; they are offered from your next step.",
    parameters: {
      type: "object",
      properties: { query: { type: "string" } },
      required: ["query"],
      additionalProperties: false,
    },
  },
};

/** How workers find their tools: the index over every tool, and when to use it. */
export interface ToolDiscovery {
  index: ToolIndex;
  /** An agent that may use more than this many tools besides its own is offered the `topK` most relevant of those (default 15). */
  threshold: number;
  topK: number;
  /** Embeddings of the provider, when it has them (fused with BM25). */
  embedder?: Embedder;
}

/** What a worker is offered: the tools, and the record of why (absent when it is offered every tool it may use). */
export interface OfferedTools {
  names: string[];
  offer?: ToolOffer;
  /** Whether find_tools is offered too (there are tools it was not offered). */
  findTools: boolean;
}

/** The query a subtask's tools are found with: its instruction and its arguments' names. */
export function offerQuery(subtask: Pick<PlannedSubtask, "label">, args: Record<string, unknown>): string {
  return [subtask.label, ...Object.keys(args)].join(" ");
}

/**
 * The tools a worker is offered for its subtask, among those it may use (`available`: its
 * agent's, under the permissions and the run's allowed tools). Never fewer than its agent's own
 * tools (`core`: those it names, as opposed to those a pattern grant reaches) and the tools the
 * plan named for the subtask. Beyond those:
 * - when the plan named the subtask's tools, nothing more (and `find_tools` for the rest);
 * - otherwise every other tool it may use while they are no more than the threshold, and beyond
 *   it — a large catalogue: MCP servers, the config's tools — the `topK` most relevant to the
 *   subtask, and `find_tools`. A lexical search can miss; it only ever adds.
 * The offer keeps the order of `available`, so a worker's tool definitions — the start of every
 * request it sends — are the same from one subtask to the next (what a provider caches).
 */
export async function offerTools(available: readonly string[], core: readonly string[], subtask: Pick<PlannedSubtask, "label" | "tools">, args: Record<string, unknown>, discovery: ToolDiscovery | undefined): Promise<OfferedTools> {
  const total = available.length;
  const own = new Set(core.filter((name) => available.includes(name)));
  const planned = new Set((subtask.tools ?? []).filter((name) => available.includes(name)));
  const base = new Set([...own, ...planned]);
  const rest = available.filter((name) => !base.has(name));
  const inOrder = (chosen: ReadonlySet<string>): string[] => available.filter((name) => chosen.has(name));
  const why = (name: string): string => (planned.has(name) ? "named by the plan" : "its agent's own tool");
  if (rest.length === 0) return { names: [...available], findTools: false };
  if (subtask.tools !== undefined) {
    const names = inOrder(base);
    return { names, findTools: true, offer: { via: "planned", total, offered: names.map((name) => ({ name, why: why(name) })), found: [] } };
  }
  const threshold = discovery?.threshold ?? LIMITS.toolDiscoveryThreshold;
  if (!discovery || rest.length <= threshold) return { names: [...available], findTools: false };
  const matches = await discovery.index.search(offerQuery(subtask, args), { among: new Set(rest), k: discovery.topK, ...(discovery.embedder ? { embedder: discovery.embedder } : {}) });
  const found = new Map(matches.map((match) => [match.name, match.why]));
  const names = inOrder(new Set([...base, ...found.keys()]));
  return {
    names,
    findTools: true,
    offer: { via: "retrieval", total, offered: names.map((name) => ({ name, why: found.get(name) ?? why(name) })), found: [] },
  };
}

/** More tools for a worker's `find_tools` query: the most relevant of those it may use and was not offered yet. */
export async function findMoreTools(query: string, available: readonly string[], offered: ReadonlySet<string>, discovery: ToolDiscovery): Promise<string[]> {
  const left = available.filter((name) => !offered.has(name));
  if (left.length === 0) return [];
  const matches = await discovery.index.search(query, { among: new Set(left), k: discovery.topK, ...(discovery.embedder ? { embedder: discovery.embedder } : {}) });
  return matches.map((match) => match.name);
}
