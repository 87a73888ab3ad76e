import { timingSafeEqual } from "node:crypto";
import type { FastifyRequest } from "fastify";
import { TroupeError } from "../core/errors.js";
import { digestOf, LOCAL_PRINCIPAL, type Principal } from "./api-keys.js";
import type { AuthPolicy } from "./config.js";

declare module "fastify" {
  interface FastifyRequest {
    /** Who is calling (set by the auth hook on every route but /health and the console's files). */
    principal: Principal;
    /** The trace the request belongs to (its traceparent's, or a new one). */
    traceId: string;
  }
}

/**
 * The onRequest hook that names the caller: `Authorization: Bearer <key>` checked against the
 * configured keys (digests compared in constant time, every key compared), or the local
 * principal when the API is open.
 */
export function createAuthHook(policy: AuthPolicy) {
  return async (request: FastifyRequest): Promise<void> => {
    if (!policy.required) {
      request.principal = LOCAL_PRINCIPAL;
      return;
    }
    const header = request.headers.authorization;
    // The key is the rest of the header (a key may hold inner spaces); HTTP trims its ends.
    const match = header ? /^Bearer[ \t]+(.*[^ \t])[ \t]*$/i.exec(header) : null;
    if (!match) {
      throw new TroupeError("unauthorized", "an API key is required: send the header Authorization: Bearer <key>");
    }
    const digest = digestOf(match[1] as string);
    let found: Principal | undefined;
    for (const key of policy.keys) {
      if (timingSafeEqual(key.digest, digest) && found === undefined) found = key.principal;
    }
    if (!found) throw new TroupeError("invalid_api_key", "the API key is not valid");
    request.principal = found;
  };
}
