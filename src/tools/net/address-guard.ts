import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { isIP, type LookupFunction } from "node:net";
import ipaddr from "ipaddr.js";
import { ToolError } from "../../core/errors.js";

/**
 * Protection against server-side request forgery. Only public unicast addresses may be reached:
 * loopback, private, link-local (cloud metadata at 169.254.169.254), carrier-grade NAT (another
 * metadata range), unique-local, multicast, reserved and unspecified addresses are refused in
 * every spelling — the URL parser canonicalises decimal, hex and octal IPv4, and IPv4-mapped
 * IPv6 is checked as the IPv4 it carries. The check runs where the connection is made: on every
 * DNS answer (all of them) and on the socket's peer address, so redirects and rebinding get no
 * further than a literal address would.
 */

export interface NetworkRules {
  /** Hosts that may be fetched (empty: any public host). `example.com` covers its subdomains. */
  allowHosts: string[];
  /** Hosts that may never be fetched; wins over allowHosts. */
  denyHosts: string[];
  /** Addresses or CIDR ranges allowed despite being private (e.g. `127.0.0.1/32` for a test server). */
  allowAddresses: string[];
}

export const SSRF_CODE = "blocked_address";

/** Names that are internal whatever DNS says. */
const INTERNAL_NAMES = [/^localhost$/i, /\.localhost$/i, /^metadata(\.google\.internal)?$/i, /\.internal$/i, /\.local$/i];

function parseRange(text: string): [ipaddr.IPv4 | ipaddr.IPv6, number] {
  if (text.includes("/")) return ipaddr.parseCIDR(text);
  const address = ipaddr.parse(text);
  return [address, address.kind() === "ipv4" ? 32 : 128];
}

/**
 * The address as IPv4 when it is IPv6 carrying one: IPv4-mapped (`::ffff:a.b.c.d`) or the
 * deprecated IPv4-compatible form (`::a.b.c.d`, ::/96 — ipaddr.js calls it unicast, and a
 * stack that still routes it reaches the IPv4 host: `[::127.0.0.1]`, `::a9fe:a9fe`).
 */
function normalise(address: string): ipaddr.IPv4 | ipaddr.IPv6 {
  const parsed = ipaddr.parse(address.replace(/^\[|\]$/g, "").replace(/%.*$/, ""));
  if (parsed.kind() !== "ipv6") return parsed;
  const ipv6 = parsed as ipaddr.IPv6;
  if (ipv6.isIPv4MappedAddress()) return ipv6.toIPv4Address();
  const parts = ipv6.parts;
  // :: and ::1 keep their own ranges (unspecified, loopback); every other ::/96 address is the IPv4 in its last 32 bits.
  if (parts.slice(0, 6).every((part) => part === 0) && !(parts[6] === 0 && (parts[7] ?? 0) <= 1)) {
    const high = parts[6] ?? 0;
    const low = parts[7] ?? 0;
    return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
  }
  return parsed;
}

/** Why an address may not be reached, or undefined when it may. */
export function blockedAddress(address: string, rules: Pick<NetworkRules, "allowAddresses">): string | undefined {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = normalise(address);
  } catch {
    return `"${address}" is not an IP address`;
  }
  for (const allowed of rules.allowAddresses) {
    try {
      const [range, bits] = parseRange(allowed);
      if (range.kind() === parsed.kind() && parsed.match(range, bits)) return undefined;
    } catch {
      // an invalid entry is rejected when the configuration is read
    }
  }
  const range = parsed.range();
  return range === "unicast" ? undefined : `${address} is a ${range} address`;
}

function hostMatches(pattern: string, host: string): boolean {
  const wanted = pattern.toLowerCase().replace(/\.$/, "");
  if (wanted.startsWith("*.")) return host.endsWith(wanted.slice(1));
  return host === wanted || host.endsWith(`.${wanted}`);
}

/** Checks a URL before it is requested: the scheme, the allow and deny lists, internal names and literal addresses. */
export function checkUrl(url: URL, rules: NetworkRules): void {
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ToolError("invalid_url", `only http and https URLs can be fetched, not ${url.protocol}`, { url: url.href });
  }
  const host = url.hostname.toLowerCase().replace(/^\[|\]$/g, "").replace(/\.$/, "");
  if (rules.denyHosts.some((pattern) => hostMatches(pattern, host))) throw new ToolError("host_denied", `${host} is on the deny list`, { url: url.href });
  if (rules.allowHosts.length > 0 && !rules.allowHosts.some((pattern) => hostMatches(pattern, host))) {
    throw new ToolError("host_denied", `${host} is not on the allow list`, { url: url.href });
  }
  if (isIP(host)) {
    const reason = blockedAddress(host, rules);
    if (reason) throw new ToolError(SSRF_CODE, `refused: ${reason}`, { url: url.href });
    return;
  }
  // Whatever addresses are allowed: an allowed range is for a literal address (a test server at
  // 127.0.0.1), never a way to reach the metadata service or another host by an internal name.
  if (INTERNAL_NAMES.some((pattern) => pattern.test(host))) {
    throw new ToolError(SSRF_CODE, `refused: ${host} names an internal host (allowAddresses admits addresses, not internal names)`, { url: url.href });
  }
}

/** A DNS lookup that fails when any answer is an address that may not be reached. */
export function guardedLookup(rules: Pick<NetworkRules, "allowAddresses">): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) {
        callback(error, "", 4);
        return;
      }
      for (const entry of addresses) {
        const reason = blockedAddress(entry.address, rules);
        if (reason) {
          const blocked = Object.assign(new Error(`refused: ${hostname} resolves to ${reason}`), { code: SSRF_CODE });
          callback(blocked, "", 4);
          return;
        }
      }
      if (options.all) (callback as unknown as (error: null, addresses: LookupAddress[]) => void)(null, addresses);
      else {
        const first = addresses[0];
        if (!first) callback(Object.assign(new Error(`${hostname} has no address`), { code: "ENOTFOUND" }), "", 4);
        else callback(null, first.address, first.family);
      }
    });
  };
}
