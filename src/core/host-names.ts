import { isIP } from "node:net";
import { ConfigError } from "./errors.js";

/**
 * Host names as troupe's server compares them (its defence against DNS rebinding: see
 * server/host-policy.ts), and the allowed-hosts setting (`--allowed-hosts`, TROUPE_ALLOWED_HOSTS,
 * the config file's `server.allowedHosts`).
 */

/** A Host header: a name or IPv4 address, or an IPv6 address in brackets, and an optional port. */
const HOST_HEADER = /^(\[[0-9A-Fa-f:.]+\]|[^\s:/?#@[\]\\%]+)(?::(\d{1,5}))?$/;

/** A host name as browsers compare it: lower case, IDN as punycode, IPv4 in dotted form, one trailing dot dropped; undefined when it is none. */
export function normalHostName(name: string): string | undefined {
  let hostname: string;
  try {
    hostname = new URL(`http://${name}/`).hostname;
  } catch {
    return undefined;
  }
  if (hostname.endsWith(".") && !hostname.endsWith("..")) hostname = hostname.slice(0, -1);
  return hostname === "" ? undefined : hostname;
}

/** A Host header's name and port; undefined when it is not a well-formed Host. */
export function parseHostHeader(value: string | undefined): { hostname: string; port: string | undefined } | undefined {
  if (value === undefined) return undefined;
  const match = HOST_HEADER.exec(value.trim());
  if (!match) return undefined;
  const hostname = normalHostName(match[1] as string);
  return hostname === undefined ? undefined : { hostname, port: match[2] };
}

/** An allowed-hosts entry: `*`, `.example.com` (the domain and its subdomains) or one name; a port or a path is refused. */
export function parseAllowedHost(entry: string, where: string): string {
  const trimmed = entry.trim();
  if (trimmed === "*") return "*";
  const domain = trimmed.startsWith(".");
  const name = domain ? trimmed.slice(1) : trimmed;
  const parsed = parseHostHeader(name);
  if (!parsed || name.length > 253) throw new ConfigError("invalid_server_config", `${where}: "${entry}" is not a host name (give names like troupe.example.com, .example.com for a domain, or *)`, { entry });
  if (parsed.port !== undefined) throw new ConfigError("invalid_server_config", `${where}: "${entry}" has a port; give the name alone (ports are not compared)`, { entry });
  if (domain && isIP(parsed.hostname.replace(/^\[|\]$/g, "")) !== 0) throw new ConfigError("invalid_server_config", `${where}: "${entry}" is an address; only a domain may start with "."`, { entry });
  return domain ? `.${parsed.hostname}` : parsed.hostname;
}

/** The entries of `--allowed-hosts` / TROUPE_ALLOWED_HOSTS (comma-separated) or the config file's `server.allowedHosts`. */
export function parseAllowedHosts(entries: readonly string[], where: string): string[] {
  return entries.filter((entry) => entry.trim().length > 0).map((entry) => parseAllowedHost(entry, where));
}

