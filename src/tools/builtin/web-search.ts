import path from "node:path";
import { z } from "zod";
import { ToolError } from "../../core/errors.js";
import { joinLabels, type Label, LabelledValue, sourceOf, untrustedLabel } from "../../core/provenance.js";
import { defineTool, type ToolContext, type ToolDefinition } from "../define-tool.js";
import { judgePath } from "./file-labelling.js";
import { type IndexedFolder, LocalSearchIndex, type SearchHit } from "../search/local-index.js";
import { configuredProviders, DEFAULT_WEB_SEARCH, searchWeb, WEB_PROVIDERS, type WebSearchSettings } from "../search/web-providers.js";

/**
 * The label of local search hits: a workspace file's by the file (its path, what troupe recorded
 * of its data), a knowledge folder's as search results (untrusted: documents gathered from
 * anywhere). Titles, paths and snippets are all the files' own.
 */
async function localHitsLabel(context: ToolContext, results: readonly SearchHit[]): Promise<Label> {
  const labels: Label[] = [];
  for (const hit of results) {
    if (hit.source === "workspace" && hit.path !== undefined) labels.push((await judgePath(context, hit.path))?.label ?? untrustedLabel([sourceOf("workspace", hit.path)]));
    else labels.push(untrustedLabel([sourceOf("search", `local ${hit.source}: ${hit.path ?? hit.title}`)]));
  }
  return joinLabels(...labels);
}

/** Settings of web_search; the config file can change them (`tools.search`). */
export interface WebSearchOptions extends WebSearchSettings {
  /** Knowledge folders searched offline (default `knowledge`, relative to where troupe runs). */
  knowledge: string[];
  /** Search the workspace too (default true). */
  includeWorkspace: boolean;
  /** The provider used when a call names none: `local`, or an online one (default: the first configured, else local). */
  provider?: "local" | (typeof WEB_PROVIDERS)[number];
}

export const DEFAULT_SEARCH: WebSearchOptions = { ...DEFAULT_WEB_SEARCH, knowledge: ["knowledge"], includeWorkspace: true };

export const WebSearchArgs = z.object({
  query: z.string().trim().min(1).max(500).describe("what to look for"),
  maxResults: z.number().int().min(1).max(20).default(5),
  provider: z.enum(["local", ...WEB_PROVIDERS]).optional().describe("local: the knowledge folder and workspace (offline); or an online provider when one is configured"),
});

export interface WebSearchValue {
  query: string;
  provider: string;
  results: SearchHit[];
}

/** Searches offline (MiniSearch over the knowledge folder and the workspace) or online (Tavily, Brave, SearXNG) when configured. */
export function createWebSearchTool(options: Partial<WebSearchOptions> = {}): ToolDefinition<typeof WebSearchArgs> {
  const settings: WebSearchOptions = { ...DEFAULT_SEARCH, ...options };
  const index = new LocalSearchIndex();
  const online = configuredProviders(settings);
  const fallback = settings.provider ?? online[0] ?? "local";
  return defineTool({
    name: "web_search",
    description:
      online.length > 0
        ? `Search the web (${online.join(", ")}) or, with provider "local", the local knowledge folder and workspace. Returns titles, URLs or paths, and snippets.`
        : "Search the local knowledge folder and the workspace (offline full-text search). Returns titles, paths and snippets.",
    schema: WebSearchArgs,
    permission: "READ",
    // An online search sends its query to the provider; a local one reads files.
    powers: online.length > 0 ? ["workspace.read", "network.read"] : ["workspace.read"],
    powersFor: (args) => ((args.provider ?? fallback) === "local" ? ["workspace.read"] : ["network.read"]),
    idempotent: true,
    // Online results are cached for a while; local files can change at any moment, so never.
    cacheTtlMs: (args) => ((args.provider ?? fallback) === "local" ? 0 : 5 * 60_000),
    timeoutMs: settings.timeoutMs + 1_000,
    async execute({ query, maxResults, provider = fallback }, context): Promise<WebSearchValue | LabelledValue> {
      if (provider === "local") {
        const folders: IndexedFolder[] = settings.knowledge.map((folder) => ({ directory: path.resolve(folder), source: "knowledge" }));
        if (settings.includeWorkspace) folders.push({ directory: context.workspace, source: "workspace" });
        const results = await index.search(folders, query, maxResults);
        return context.fileTrust ? new LabelledValue({ query, provider, results }, await localHitsLabel(context, results)) : { query, provider, results };
      }
      if (!online.includes(provider)) {
        throw new ToolError("provider_not_configured", `${provider} is not configured (set its key or URL in troupe.config.json or the environment); available: local${online.length ? `, ${online.join(", ")}` : ""}`);
      }
      return { query, provider, results: await searchWeb(provider, query, maxResults, settings, context.signal) };
    },
    summarize: (value) => {
      const found = value as WebSearchValue;
      const titles = found.results.slice(0, 5).map((hit) => hit.title || hit.path || hit.url);
      return `${found.results.length} result(s) for "${found.query}" (${found.provider})${titles.length ? `: ${titles.join("; ")}` : ""}`;
    },
  });
}
