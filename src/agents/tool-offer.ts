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
  /** An agent with more tools than this is offered the `topK` most relevant (default 15). */
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
 * agent's, under the permissions and the run's allowed tools). The tools the plan named for the
 * subtask, when it named any; otherwise every available tool while they are no more than the
 * threshold, and beyond it the `topK` most relevant to the subtask. When it is offered fewer
 * than it may use, it also gets `find_tools` to ask for more — never a tool it may not use.
 */
export async function offerTools(available: readonly string[], subtask: Pick<PlannedSubtask, "label" | "tools">, args: Record<string, unknown>, discovery: ToolDiscovery | undefined): Promise<OfferedTools> {
  const total = available.length;
  if (subtask.tools !== undefined) {
    const names = subtask.tools.filter((name) => available.includes(name));
    if (names.length === total) return { names, findTools: false };
    return { names, findTools: true, offer: { via: "planned", total, offered: names.map((name) => ({ name, why: "named by the plan" })), found: [] } };
  }
  const threshold = discovery?.threshold ?? LIMITS.toolDiscoveryThreshold;
  if (!discovery || total <= threshold) return { names: [...available], findTools: false };
  const matches = await discovery.index.search(offerQuery(subtask, args), { among: new Set(available), k: discovery.topK, ...(discovery.embedder ? { embedder: discovery.embedder } : {}) });
  return {
    names: matches.map((match) => match.name),
    findTools: true,
    offer: { via: "retrieval", total, offered: matches.map(({ name, why }) => ({ name, why })), found: [] },
  };
}

/** More tools for a worker's `find_tools` query: the most relevant of those it may use and was not offered yet. */
export async function findMoreTools(query: string, available: readonly string[], offered: ReadonlySet<string>, discovery: ToolDiscovery): Promise<string[]> {
  const left = available.filter((name) => !offered.has(name));
  if (left.length === 0) return [];
  const matches = await discovery.index.search(query, { among: new Set(left), k: discovery.topK, ...(discovery.embedder ? { embedder: discovery.embedder } : {}) });
  return matches.map((match) => match.name);
}
