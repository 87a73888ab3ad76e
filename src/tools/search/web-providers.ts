import { fetch } from "undici";
import { ToolError } from "../../core/errors.js";
import type { SearchHit } from "./local-index.js";

/** The online search services troupe speaks to, when a key or a URL is configured. */
export const WEB_PROVIDERS = ["tavily", "brave", "searxng"] as const;
export type WebProvider = (typeof WEB_PROVIDERS)[number];

export interface WebSearchSettings {
  tavilyApiKey?: string;
  tavilyUrl: string;
  braveApiKey?: string;
  braveUrl: string;
  searxngUrl?: string;
  timeoutMs: number;
}

export const DEFAULT_WEB_SEARCH: WebSearchSettings = {
  tavilyUrl: "https://api.tavily.com",
  braveUrl: "https://api.search.brave.com",
  timeoutMs: 10_000,
};

/** The providers that can be used with these settings. */
export function configuredProviders(settings: WebSearchSettings): WebProvider[] {
  const available: WebProvider[] = [];
  if (settings.tavilyApiKey) available.push("tavily");
  if (settings.braveApiKey) available.push("brave");
  if (settings.searxngUrl) available.push("searxng");
  return available;
}

async function getJson(url: string, init: Parameters<typeof fetch>[1], provider: string): Promise<unknown> {
  let response;
  try {
    response = await fetch(url, init);
  } catch (error) {
    throw new ToolError("search_failed", `${provider} could not be reached: ${(error as Error).message}`, { retryable: true });
  }
  const text = await response.text();
  if (!response.ok) {
    throw new ToolError("search_failed", `${provider} answered ${response.status}: ${text.slice(0, 200)}`, { status: response.status, retryable: response.status >= 500 || response.status === 429 });
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new ToolError("search_failed", `${provider} answered with something that is not JSON`);
  }
}

function text(value: unknown): string {
  return typeof value === "string" ? value : "";
}

function joinUrl(base: string, suffix: string): string {
  return `${base.replace(/\/+$/, "")}${suffix}`;
}

/** Searches the web through one provider. */
export async function searchWeb(provider: WebProvider, query: string, limit: number, settings: WebSearchSettings, signal?: AbortSignal): Promise<SearchHit[]> {
  const timeout = AbortSignal.timeout(settings.timeoutMs);
  const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
  switch (provider) {
    case "tavily": {
      const body = (await getJson(
        joinUrl(settings.tavilyUrl, "/search"),
        {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${settings.tavilyApiKey ?? ""}` },
          body: JSON.stringify({ query, max_results: limit, search_depth: "basic" }),
          signal: combined,
        },
        "Tavily",
      )) as { results?: Array<Record<string, unknown>> };
      return (body.results ?? []).slice(0, limit).map((item, index) => ({
        title: text(item.title),
        url: text(item.url),
        source: "tavily",
        snippet: text(item.content),
        score: typeof item.score === "number" ? item.score : 1 / (index + 1),
      }));
    }
    case "brave": {
      const url = new URL(joinUrl(settings.braveUrl, "/res/v1/web/search"));
      url.searchParams.set("q", query);
      url.searchParams.set("count", String(limit));
      const body = (await getJson(
        url.href,
        { headers: { accept: "application/json", "x-subscription-token": settings.braveApiKey ?? "" }, signal: combined },
        "Brave Search",
      )) as { web?: { results?: Array<Record<string, unknown>> } };
      return (body.web?.results ?? []).slice(0, limit).map((item, index) => ({
        title: text(item.title),
        url: text(item.url),
        source: "brave",
        snippet: text(item.description),
        score: 1 / (index + 1),
      }));
    }
    case "searxng": {
      const url = new URL(joinUrl(settings.searxngUrl ?? "", "/search"));
      url.searchParams.set("q", query);
      url.searchParams.set("format", "json");
      const body = (await getJson(url.href, { headers: { accept: "application/json" }, signal: combined }, "SearXNG")) as { results?: Array<Record<string, unknown>> };
      return (body.results ?? []).slice(0, limit).map((item, index) => ({
        title: text(item.title),
        url: text(item.url),
        source: "searxng",
        snippet: text(item.content),
        score: typeof item.score === "number" ? item.score : 1 / (index + 1),
      }));
    }
  }
}
