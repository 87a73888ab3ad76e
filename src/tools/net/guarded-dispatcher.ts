import { isIP } from "node:net";
import { Agent, buildConnector } from "undici";
import { blockedAddress, guardedLookup, type NetworkRules, SSRF_CODE } from "./address-guard.js";

/**
 * An undici dispatcher that enforces the address rules when it connects: literal addresses are
 * checked before the socket opens, names through a DNS lookup that refuses private answers, and
 * the connected socket's peer address once more before a byte of the request is written.
 */
export function createGuardedDispatcher(rules: NetworkRules, connectTimeoutMs = 10_000): Agent {
  const connector = buildConnector({ lookup: guardedLookup(rules), timeout: connectTimeoutMs });
  return new Agent({
    connect: (options, callback) => {
      const host = options.hostname.replace(/^\[|\]$/g, "");
      if (isIP(host)) {
        const reason = blockedAddress(host, rules);
        if (reason) {
          callback(Object.assign(new Error(`refused: ${reason}`), { code: SSRF_CODE }), null);
          return;
        }
      }
      connector(options, (error, socket) => {
        if (error || !socket) {
          callback(error ?? new Error("connection failed"), null);
          return;
        }
        const peer = socket.remoteAddress;
        const reason = peer ? blockedAddress(peer, rules) : "the peer address is unknown";
        if (reason) {
          socket.destroy();
          callback(Object.assign(new Error(`refused: ${reason}`), { code: SSRF_CODE }), null);
          return;
        }
        callback(null, socket);
      });
    },
    keepAliveTimeout: 4_000,
  });
}
