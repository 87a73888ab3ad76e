import express, { type NextFunction, type Request, type Response } from "express";

/** The largest A2A request body read (a JSON-RPC request, an HTTP+JSON body). */
const A2A_BODY_LIMIT = "100kb";

type Envelope = { jsonrpc?: unknown; id?: unknown; method?: unknown; params?: unknown };

/** What is wrong with a JSON-RPC 2.0 request object, if anything (JSON-RPC 2.0 §4: an Invalid Request). */
function envelopeProblem(body: unknown): string | undefined {
  if (Array.isArray(body)) return "a batch (a JSON array) is not taken: send one JSON-RPC request object at a time";
  if (typeof body !== "object" || body === null) return "the body must be a JSON-RPC 2.0 request object";
  const request = body as Envelope;
  if (request.jsonrpc !== "2.0") return `jsonrpc must be "2.0"`;
  if ("id" in request && request.id !== null && typeof request.id !== "string" && !(typeof request.id === "number" && Number.isInteger(request.id))) {
    return "id must be a string, an integer or null";
  }
  if (typeof request.method !== "string" || request.method === "") return "method is required: the A2A method's name (SendMessage, GetTask, … or message/send, tasks/get, … in A2A 0.3)";
  return undefined;
}

/** The request's id, when it is one JSON-RPC allows (else null, as the answer to an invalid request has). */
function idOf(body: unknown): string | number | null {
  const id = typeof body === "object" && body !== null && !Array.isArray(body) ? (body as Envelope).id : undefined;
  return typeof id === "string" || (typeof id === "number" && Number.isInteger(id)) ? id : null;
}

// Not strict: a JSON value that is not an object or an array (`1`, `"x"`) is an Invalid Request, not a parse error.
const parseJson = express.json({ limit: A2A_BODY_LIMIT, type: () => true, strict: false });

/**
 * Checks the JSON-RPC envelope before the SDK's handler sees it: a request that is not one — a
 * batch, a missing or wrong `jsonrpc`, an id of another type, no method — is answered
 * `-32600 Invalid Request` as JSON-RPC 2.0 requires (the SDK answers these `-32602`), with the
 * request's id when it has a valid one. The body is read here (JSON, whatever the content type
 * says, up to the limit) unless it names another content type, which the SDK refuses itself;
 * the SDK's own parser then finds it read.
 */
export function jsonRpcEnvelope(request: Request, response: Response, next: NextFunction): void {
  const type = request.header("content-type");
  if (request.method !== "POST" || (type !== undefined && type.split(";", 1)[0]?.trim().toLowerCase() !== "application/json")) {
    next();
    return;
  }
  parseJson(request, response, (error?: unknown) => {
    if (error) {
      next(error);
      return;
    }
    const problem = envelopeProblem(request.body);
    if (problem === undefined) {
      next();
      return;
    }
    response.status(200).json({ jsonrpc: "2.0", id: idOf(request.body), error: { code: -32600, message: `Invalid Request: ${problem}` } });
  });
}
