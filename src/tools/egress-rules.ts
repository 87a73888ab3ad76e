/**
 * Where a call sends data out of the machine, and the destinations the config names for it
 * (`trust.egress`): a URL prefix (`https://api.example.com/v1/`), an MCP server (`mcp:tracker`)
 * or a remote agent (`agent:partner`). Data read from the workspace, memory or another tool may
 * go to such a destination without a person approving (src/tools/egress.ts).
 */

/** Where a call sends its arguments: a URL (http_fetch), an MCP server, or a remote A2A agent. */
export interface Destination {
  kind: "url" | "mcp" | "agent";
  /** The URL, the server's name, or the agent's name. */
  name: string;
}

export const EGRESS_LIMITS = { destinations: 64, chars: 1_000 } as const;

const NAME = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/;

/** A destination as written in the config, parsed; a string for what is wrong with it. */
function parseDestination(text: string): Destination | string {
  if (text.length > EGRESS_LIMITS.chars) return `a destination is longer than ${EGRESS_LIMITS.chars} characters`;
  const named = /^(mcp|agent):(.*)$/.exec(text);
  if (named) {
    const name = named[2] ?? "";
    return NAME.test(name) ? { kind: named[1] as "mcp" | "agent", name } : `"${text}": ${named[1]}: takes a server or agent name (letters, digits, _ . -)`;
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return `"${text}" is neither an http(s) URL prefix nor mcp:<server> or agent:<name>`;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return `"${text}": only http and https URLs`;
  if (url.username !== "" || url.password !== "") return `"${text}": a destination holds no credentials`;
  if (url.search !== "" || url.hash !== "") return `"${text}": a destination is a URL prefix, without a query or fragment`;
  return { kind: "url", name: url.href };
}

/** Why a config destination cannot be used, or undefined when it can. */
export function destinationProblem(text: string): string | undefined {
  const parsed = parseDestination(text);
  return typeof parsed === "string" ? parsed : undefined;
}

/** Whether `candidate` (a URL) is at or below `prefix` (a URL prefix): same scheme, host and port, and a path under the prefix's at a segment boundary. */
function underPrefix(prefix: URL, candidate: string): boolean {
  let url: URL;
  try {
    url = new URL(candidate);
  } catch {
    return false;
  }
  if (url.protocol !== prefix.protocol || url.host !== prefix.host) return false;
  const path = prefix.pathname;
  if (path === "/" || url.pathname === path) return true;
  return url.pathname.startsWith(path.endsWith("/") ? path : `${path}/`);
}

/** The config's egress destinations, matched against where a call sends its data. */
export class EgressRules {
  readonly #urls: URL[] = [];
  readonly #names = new Set<string>();

  /** Throws an Error naming the first unusable destination (the config check reports it first). */
  constructor(destinations: readonly string[] = []) {
    if (destinations.length > EGRESS_LIMITS.destinations) throw new Error(`at most ${EGRESS_LIMITS.destinations} egress destinations`);
    for (const text of destinations) {
      const parsed = parseDestination(text);
      if (typeof parsed === "string") throw new Error(parsed);
      if (parsed.kind === "url") this.#urls.push(new URL(parsed.name));
      else this.#names.add(`${parsed.kind}:${parsed.name}`);
    }
  }

  /** Whether the config names this destination. */
  names(destination: Destination): boolean {
    if (destination.kind === "url") return this.#urls.some((prefix) => underPrefix(prefix, destination.name));
    return this.#names.has(`${destination.kind}:${destination.name}`);
  }
}

/** A destination in words: `http://host/path`, `the MCP server tracker`, `the remote agent partner`. */
export function describeDestination(destination: Destination): string {
  switch (destination.kind) {
    case "url":
      return destination.name;
    case "mcp":
      return `the MCP server ${destination.name}`;
    case "agent":
      return `the remote agent ${destination.name}`;
  }
}
