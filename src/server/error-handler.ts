import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { type CatalogueCode, errorEntry } from "../core/error-codes.js";
import { isTroupeError, TroupeError } from "../core/errors.js";

/** Fastify's own request errors, as troupe errors with stable codes. */
const FASTIFY_CODES: Record<string, [code: CatalogueCode, message: string]> = {
  FST_ERR_CTP_BODY_TOO_LARGE: ["body_too_large", "the request body is larger than the limit"],
  FST_ERR_CTP_INVALID_MEDIA_TYPE: ["unsupported_media_type", "send the body as application/json"],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: ["invalid_body", "the Content-Length does not match the body"],
  FST_ERR_CTP_EMPTY_JSON_BODY: ["invalid_json", "the body is empty; send a JSON object"],
  FST_ERR_CTP_INVALID_JSON_BODY: ["invalid_json", "the body is not valid JSON"],
};

/** The one place errors become HTTP statuses: the catalogue's (`core/error-codes.ts`). */
export function statusFor(error: TroupeError): number {
  return errorEntry(error.code).status;
}

/** Any thrown value as a troupe error; faults of the server itself keep their detail out of the answer. */
export function asTroupeError(error: unknown): TroupeError {
  if (isTroupeError(error)) return error;
  const fastifyError = error as Partial<FastifyError> & { message?: string };
  const known = fastifyError.code ? FASTIFY_CODES[fastifyError.code] : undefined;
  if (known) return new TroupeError(known[0], known[1]);
  if (error instanceof SyntaxError || (fastifyError.statusCode === 400 && /JSON/i.test(fastifyError.message ?? ""))) {
    return new TroupeError("invalid_json", `the body is not valid JSON: ${fastifyError.message ?? ""}`.trim());
  }
  const status = fastifyError.statusCode;
  if (typeof status === "number" && status >= 400 && status < 500) {
    return new TroupeError("bad_request", fastifyError.message ?? "bad request");
  }
  return new TroupeError("internal_error", "the server failed to handle the request; see its log", {}, { cause: error });
}

/** Sends an error in the envelope, with Retry-After and WWW-Authenticate where they belong. */
export function sendError(reply: FastifyReply, error: TroupeError): FastifyReply {
  const status = statusFor(error);
  const retryAfter = error.data.retryAfterSeconds;
  if (typeof retryAfter === "number") reply.header("retry-after", String(Math.max(1, Math.ceil(retryAfter))));
  if (status === 401) reply.header("www-authenticate", 'Bearer realm="troupe"');
  const data = Object.keys(error.data).length > 0 ? error.data : null;
  return reply.code(status).type("application/json; charset=utf-8").send({ code: error.code, message: error.message, data });
}

/** Installs the error and not-found handlers (every route's errors pass through here). */
export function installErrorHandler(app: FastifyInstance): void {
  app.setErrorHandler((error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const troupeError = asTroupeError(error);
    if (statusFor(troupeError) >= 500 && troupeError.code === "internal_error") {
      request.log.error({ err: error }, "request failed");
    } else {
      request.log.info({ code: troupeError.code }, troupeError.message);
    }
    if (reply.sent || reply.raw.headersSent) return;
    return sendError(reply, troupeError);
  });
  app.setNotFoundHandler((request, reply) =>
    sendError(reply, new TroupeError("route_not_found", `no route ${request.method} ${request.url.split("?")[0]}`)),
  );
}
