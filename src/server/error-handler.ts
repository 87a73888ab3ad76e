import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { type ErrorKind, isTroupeError, TroupeError } from "../core/errors.js";

/** The one place errors become HTTP statuses: by kind, with a few codes that need their own. */
const STATUS_BY_KIND: Record<ErrorKind, number> = {
  input: 400,
  config: 500,
  model: 502,
  tool: 422,
  denied: 403,
  not_found: 404,
  conflict: 409,
  system: 500,
};

const STATUS_BY_CODE: Record<string, number> = {
  unauthorized: 401,
  invalid_api_key: 401,
  rate_limited: 429,
  overloaded: 503,
  shutting_down: 503,
  not_ready: 503,
  database_unavailable: 503,
  body_too_large: 413,
  unsupported_media_type: 415,
  idempotency_key_reused: 422,
  method_not_allowed: 405,
  timeout: 504,
};

/** Fastify's own request errors, as troupe errors with stable codes. */
const FASTIFY_CODES: Record<string, [code: string, message: string]> = {
  FST_ERR_CTP_BODY_TOO_LARGE: ["body_too_large", "the request body is larger than the limit"],
  FST_ERR_CTP_INVALID_MEDIA_TYPE: ["unsupported_media_type", "send the body as application/json"],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: ["invalid_body", "the Content-Length does not match the body"],
  FST_ERR_CTP_EMPTY_JSON_BODY: ["invalid_json", "the body is empty; send a JSON object"],
  FST_ERR_CTP_INVALID_JSON_BODY: ["invalid_json", "the body is not valid JSON"],
};

export function statusFor(error: TroupeError): number {
  return STATUS_BY_CODE[error.code] ?? STATUS_BY_KIND[error.kind];
}

/** Any thrown value as a troupe error; faults of the server itself keep their detail out of the answer. */
export function asTroupeError(error: unknown): TroupeError {
  if (isTroupeError(error)) return error;
  const fastifyError = error as Partial<FastifyError> & { message?: string };
  const known = fastifyError.code ? FASTIFY_CODES[fastifyError.code] : undefined;
  if (known) return new TroupeError("input", known[0], known[1]);
  if (error instanceof SyntaxError || (fastifyError.statusCode === 400 && /JSON/i.test(fastifyError.message ?? ""))) {
    return new TroupeError("input", "invalid_json", `the body is not valid JSON: ${fastifyError.message ?? ""}`.trim());
  }
  const status = fastifyError.statusCode;
  if (typeof status === "number" && status >= 400 && status < 500) {
    return new TroupeError("input", "bad_request", fastifyError.message ?? "bad request");
  }
  return new TroupeError("system", "internal_error", "the server failed to handle the request; see its log", {}, { cause: error });
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
    sendError(reply, new TroupeError("not_found", "route_not_found", `no route ${request.method} ${request.url.split("?")[0]}`)),
  );
}
