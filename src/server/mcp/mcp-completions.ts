import type { TemplateValueSource } from "../../core/task-template.js";
import { threadNameOfRun } from "../../core/thread-key.js";
import type { Principal } from "../config.js";
import type { RunFeed } from "../run-follow.js";

/** A prefix longer than any name troupe has completes to nothing, at once. */
export const MAX_COMPLETION_PREFIX = 256;
/** The most values one completion answers with (MCP's own bound; the SDK says `hasMore` past it). */
const MAX_VALUES = 100;
/** How far back completions of threads and runs look: the key's latest runs. */
const SCAN_RUNS = 500;

/** The values that start with `prefix` (case aside), in their order, each once; none for an over-long prefix. */
export function startingWith(values: Iterable<string>, prefix: string, limit = MAX_VALUES + 1): string[] {
  if (prefix.length > MAX_COMPLETION_PREFIX) return [];
  const wanted = prefix.toLowerCase();
  const found = new Set<string>();
  for (const value of values) {
    if (found.size >= limit) break;
    if (value.toLowerCase().startsWith(wanted)) found.add(value);
  }
  return [...found];
}

/**
 * Completion of a comma-separated list (`file_read, calc`): the last item is completed, the items
 * before it kept as written and not offered again.
 */
export function completeListItem(value: string, names: Iterable<string>): string[] {
  if (value.length > MAX_COMPLETION_PREFIX * 4) return [];
  const items = value.split(",");
  const last = (items.pop() ?? "").trimStart();
  const kept = items.map((item) => item.trim()).filter((item) => item !== "");
  const head = kept.length > 0 ? `${kept.join(", ")}, ` : "";
  const taken = new Set(kept);
  return startingWith(
    [...names].filter((name) => !taken.has(name)),
    last,
  ).map((name) => `${head}${name}`);
}

/**
 * What troupe can complete for one session: the caller's own threads and runs (its key's, newest
 * first, from its latest 500 runs), the agents, the tools. Another key's threads and runs are never
 * offered.
 */
export class Completions {
  readonly #feed: RunFeed;
  readonly #principal: Principal;

  constructor(feed: RunFeed, principal: Principal) {
    this.#feed = feed;
    this.#principal = principal;
  }

  /** The key's latest runs (the store's owner filter: another key's are never read). */
  async #recentRuns(prefix: string) {
    if (prefix.length > MAX_COMPLETION_PREFIX) return [];
    return this.#feed.tasks.troupe.store.runs.list({ owner: this.#principal.id, limit: SCAN_RUNS });
  }

  async threads(prefix: string): Promise<string[]> {
    return startingWith(
      (await this.#recentRuns(prefix)).map((run) => threadNameOfRun(run)),
      prefix,
    );
  }

  async runs(prefix: string): Promise<string[]> {
    return startingWith(
      (await this.#recentRuns(prefix)).map((run) => run.id),
      prefix,
    );
  }

  agents(prefix: string): string[] {
    return startingWith(this.#feed.tasks.troupe.agents.names(), prefix);
  }

  toolNames(): string[] {
    return this.#feed.tasks.troupe.tools.names();
  }

  tools(prefix: string): string[] {
    return startingWith(this.toolNames(), prefix);
  }

  async of(source: TemplateValueSource, prefix: string): Promise<string[]> {
    switch (source) {
      case "threads":
        return this.threads(prefix);
      case "runs":
        return this.runs(prefix);
      case "agents":
        return this.agents(prefix);
      case "tools":
        return this.tools(prefix);
    }
  }
}
