import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { TroupeError } from "../../core/errors.js";
import { asTroupeError, statusFor } from "../error-handler.js";

/**
 * The Agent Protocol's error answers: its `ErrorResponse` shape, `{ code, message, metadata }`,
 * with troupe's stable codes and statuses (the catalogue's) — for the routes under /langgraph and
 * whatever a hook refuses there (the Host check, the key, the rate limit, overload).
 */
export function sendProtocolError(reply: FastifyReply, error: TroupeError): FastifyReply {
  const status = statusFor(error);
  const retryAfter = error.data.retryAfterSeconds;
  if (typeof retryAfter === "number") reply.header("retry-after", String(Math.max(1, Math.ceil(retryAfter))));
  if (status === 401) reply.header("www-authenticate", 'Bearer realm="troupe"');
  const metadata = Object.keys(error.data).length > 0 ? error.data : null;
  return reply.code(status).type("application/json; charset=utf-8").send({ code: error.code, message: error.message, metadata });
}

/** Installs the protocol's error and not-found answers on its scope. */
export function installProtocolErrors(scope: FastifyInstance): void {
  scope.setErrorHandler((error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const troupeError = asTroupeError(error);
    if (statusFor(troupeError) >= 500 && troupeError.code === "internal_error") request.log.error({ err: error }, "request failed");
    else request.log.info({ code: troupeError.code }, troupeError.message);
    if (reply.sent || reply.raw.headersSent) return;
    return sendProtocolError(reply, troupeError);
  });
  scope.setNotFoundHandler((request, reply) =>
    sendProtocolError(reply, new TroupeError("route_not_found", `troupe's Agent Protocol has no route ${request.method} ${request.url.split("?")[0]} (docs/agent-chat-ui.md lists the routes it serves)`)),
  );
}
