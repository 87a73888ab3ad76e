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
 * The onRequest hook that names the caller: `Authorization: Bearer <key>` (or, where
 * `apiKeyHeader` is set — the Agent Protocol, whose clients send it so — `X-Api-Key: <key>`)
 * checked against the configured keys (digests compared in constant time, every key compared),
 * or the local principal when the API is open.
 */
export function createAuthHook(policy: AuthPolicy, options: { apiKeyHeader?: boolean } = {}) {
  return async (request: FastifyRequest): Promise<void> => {
    if (!policy.required) {
      request.principal = LOCAL_PRINCIPAL;
      return;
    }
    const header = request.headers.authorization;
    const apiKey = options.apiKeyHeader ? request.headers["x-api-key"] : undefined;
    // The key is the rest of the header (a key may hold inner spaces); HTTP trims its ends.
    const match = header ? /^Bearer[ \t]+(.*[^ \t])[ \t]*$/i.exec(header) : null;
    const given = typeof apiKey === "string" && apiKey.trim() !== "" ? apiKey.trim() : match?.[1];
    if (given === undefined) {
      throw new TroupeError("unauthorized", options.apiKeyHeader ? "an API key is required: send the header X-Api-Key: <key> (or Authorization: Bearer <key>)" : "an API key is required: send the header Authorization: Bearer <key>");
    }
    const digest = digestOf(given);
    let found: Principal | undefined;
    for (const key of policy.keys) {
      if (timingSafeEqual(key.digest, digest) && found === undefined) found = key.principal;
    }
    if (!found) throw new TroupeError("invalid_api_key", "the API key is not valid");
    request.principal = found;
  };
}
