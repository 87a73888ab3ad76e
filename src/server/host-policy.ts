import { isIP } from "node:net";
import { networkInterfaces } from "node:os";
import { TroupeError } from "../core/errors.js";
import { normalHostName, parseAllowedHosts, parseHostHeader } from "../core/host-names.js";
import type { ServerFileConfig } from "../config/config-file.js";
import { isLoopback, type ServerConfig } from "./config.js";

/**
 * Which names a request may give troupe in its `Host` header, and which pages may change
 * something: the defence against DNS rebinding and cross-site requests. A page of another site
 * can make the user's browser send requests to troupe on loopback (its DNS name re-pointed at
 * 127.0.0.1): the browser then sends that site's name as the Host, and its origin as the Origin.
 *
 * - Host: in the strict mode (troupe on a loopback address, or names configured), a request
 *   whose Host names anything but this server is refused (421 host_not_allowed) before any route
 *   sees it. The names of this server: `localhost`, `127.0.0.1`, `[::1]`, the address troupe
 *   listens on, on a wildcard address (0.0.0.0, ::) the machine's own addresses (what container
 *   probes and load balancers send), the host of TROUPE_PUBLIC_URL, and the configured names
 *   (`--allowed-hosts`: exact names, `.example.com` for a domain and its subdomains, or `*`).
 *   Ports are not compared: a browser reaches troupe's port only when the name leads there.
 *   X-Forwarded-Host is never read (a page may set it). On any other address with no names
 *   configured every Host is taken: API keys are required there, and a page cannot send them.
 * - Origin: a request that may change something (any method but GET, HEAD and OPTIONS; every
 *   method at /mcp) and carries an Origin must come from troupe's own origin (the Origin's host
 *   and port are the Host's), from a configured name, or from TROUPE_PUBLIC_URL's origin; else
 *   403 origin_not_allowed. `Origin: null` (a sandboxed frame, a file) is refused.
 */

const LOOPBACK_NAMES = ["localhost", "127.0.0.1", "[::1]"];
const WILDCARDS = new Set(["0.0.0.0", "::", "[::]", ""]);
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);
/** How long the machine's own addresses are trusted before they are read again (DHCP, new interfaces). */
const ADDRESSES_KEPT_MS = 30_000;
/** Host headers remembered as naming this server (any more and the memory starts again). */
const NAMED_HEADERS_KEPT = 64;

export interface HostPolicyOptions {
  /** The address troupe listens on (`--host`). */
  listen: string;
  /** Names configured for troupe (parsed by `parseAllowedHosts`). */
  allowed: readonly string[];
  /** TROUPE_PUBLIC_URL: its host is troupe's, its origin may change things. */
  publicUrl?: string | undefined;
}

/** The machine's own addresses, as Host headers give them. */
function ownAddresses(): Set<string> {
  const addresses = new Set<string>();
  for (const list of Object.values(networkInterfaces())) {
    for (const entry of list ?? []) {
      const hostname = normalHostName(entry.family === "IPv6" ? `[${entry.address.split("%")[0]}]` : entry.address);
      if (hostname) addresses.add(hostname);
    }
  }
  return addresses;
}

const defaultPort = (protocol: string): string => (protocol === "https:" ? "443" : "80");

export class HostPolicy {
  /** Whether the Host is checked (loopback, or names configured); otherwise API keys guard the server. */
  readonly strict: boolean;
  readonly #names = new Set<string>();
  /** Host headers seen naming one of the configured names or domains, as sent. */
  readonly #namedHeaders = new Set<string>();
  readonly #domains: string[] = [];
  readonly #any: boolean;
  /** Names an Origin may have besides troupe's own: the configured ones (not the defaults: another port of localhost is another site). */
  readonly #originNames = new Set<string>();
  readonly #originDomains: string[] = [];
  readonly #publicOrigin: string | undefined;
  readonly #wildcard: boolean;
  #addresses: { set: Set<string>; at: number } | undefined;

  constructor(options: HostPolicyOptions) {
    this.#any = options.allowed.includes("*");
    this.strict = isLoopback(options.listen) || options.allowed.length > 0;
    this.#wildcard = WILDCARDS.has(options.listen.trim());
    for (const name of LOOPBACK_NAMES) this.#names.add(name);
    const listen = this.#wildcard ? undefined : normalHostName(isIP(options.listen) === 6 ? `[${options.listen}]` : options.listen);
    if (listen) this.#names.add(listen);
    for (const entry of options.allowed) {
      if (entry === "*") continue;
      if (entry.startsWith(".")) {
        this.#domains.push(entry.slice(1));
        this.#originDomains.push(entry.slice(1));
      } else {
        this.#names.add(entry);
        this.#originNames.add(entry);
      }
    }
    if (options.publicUrl) {
      const url = new URL(options.publicUrl);
      const hostname = normalHostName(url.hostname);
      if (hostname) this.#names.add(hostname);
      this.#publicOrigin = `${url.protocol}//${hostname}:${url.port || defaultPort(url.protocol)}`;
    }
  }

  /** The names accepted, for the start-up log. */
  describe(): string {
    if (!this.strict) return "any (API keys are required on this address; set --allowed-hosts to name the server)";
    if (this.#any) return "any (--allowed-hosts *)";
    return [...this.#names, ...this.#domains.map((domain) => `.${domain}`), ...(this.#wildcard ? ["this machine's addresses"] : [])].join(", ");
  }

  #matches(hostname: string, names: Set<string>, domains: readonly string[]): boolean {
    return names.has(hostname) || domains.some((domain) => hostname === domain || hostname.endsWith(`.${domain}`));
  }

  #isOwnAddress(hostname: string): boolean {
    if (!this.#wildcard || isIP(hostname.replace(/^\[|\]$/g, "")) === 0) return false;
    const now = Date.now();
    const age = this.#addresses ? now - this.#addresses.at : Infinity;
    // Read again when stale, or (at most once a second) when an address is not known: an interface may have come up.
    if (age > ADDRESSES_KEPT_MS || (age > 1_000 && !this.#addresses?.set.has(hostname))) this.#addresses = { set: ownAddresses(), at: now };
    return this.#addresses?.set.has(hostname) ?? false;
  }

  /** Whether a Host header names this server. */
  hostAllowed(header: string | undefined): boolean {
    if (!this.strict || this.#any) return true;
    // Every request asks, nearly always with the same few headers: parsing one (a URL) showed in the request path's profile.
    if (header !== undefined && this.#namedHeaders.has(header)) return true;
    const parsed = parseHostHeader(header);
    if (!parsed) return false;
    if (this.#matches(parsed.hostname, this.#names, this.#domains)) {
      // Only a match of the configured names is kept (this machine's addresses are read again now and then).
      if (this.#namedHeaders.size >= NAMED_HEADERS_KEPT) this.#namedHeaders.clear();
      this.#namedHeaders.add(header as string);
      return true;
    }
    return this.#isOwnAddress(parsed.hostname);
  }

  /** Whether a page of this Origin may change something through a request that came with this Host. */
  originAllowed(origin: string, host: string | undefined): boolean {
    if (this.#any) return true;
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      return false;
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") return false;
    const hostname = normalHostName(url.hostname);
    if (!hostname) return false;
    const port = url.port || defaultPort(url.protocol);
    const parsed = parseHostHeader(host);
    if (parsed && parsed.hostname === hostname && (parsed.port ?? defaultPort(url.protocol)) === port) return true;
    if (this.#publicOrigin === `${url.protocol}//${hostname}:${port}`) return true;
    return this.#matches(hostname, this.#originNames, this.#originDomains);
  }

  /**
   * Refuses a request that does not name this server, or a change asked by another site's page.
   * `changes`: the request may change something whatever its method (/mcp).
   */
  check(request: { method: string; headers: Record<string, string | string[] | undefined> }, changes = false): void {
    const header = (name: string): string | undefined => {
      const value = request.headers[name];
      return Array.isArray(value) ? value[0] : value;
    };
    const host = header("host");
    if (!this.hostAllowed(host)) {
      const shown = host === undefined ? "no Host header" : `Host ${JSON.stringify(host.slice(0, 200))}`;
      throw new TroupeError(
        "host_not_allowed",
        `${shown} does not name this server: a page of another site (DNS rebinding) may not use troupe; reach it as ${this.describe()}, or add the name to --allowed-hosts (TROUPE_ALLOWED_HOSTS)`,
        { host: host?.slice(0, 200) ?? null },
      );
    }
    const origin = header("origin");
    if (origin !== undefined && (changes || !SAFE_METHODS.has(request.method)) && !this.originAllowed(origin, host)) {
      throw new TroupeError(
        "origin_not_allowed",
        `requests from ${JSON.stringify(origin.slice(0, 200))} are refused: a page of another site may not change anything here (add its name to --allowed-hosts to allow it)`,
        { origin: origin.slice(0, 200) },
      );
    }
  }
}

/** The policy of a server's settings: `--allowed-hosts` (TROUPE_ALLOWED_HOSTS) when given, else the config file's `server.allowedHosts`. */
export function hostPolicyOf(config: Pick<ServerConfig, "host" | "allowedHosts" | "publicUrl">, file: ServerFileConfig | undefined): HostPolicy {
  const allowed =
    config.allowedHosts !== undefined
      ? parseAllowedHosts(config.allowedHosts.split(","), "--allowed-hosts (TROUPE_ALLOWED_HOSTS)")
      : parseAllowedHosts(file?.allowedHosts ?? [], "server.allowedHosts");
  return new HostPolicy({ listen: config.host, allowed, publicUrl: config.publicUrl });
}
