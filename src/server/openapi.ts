import { z } from "zod";
import { type CatalogueCode, errorEntry } from "../core/error-codes.js";
import { ErrorEnvelope } from "./envelope.js";

/** One documented route: its request parts and answers as zod schemas. */
export interface RouteDoc {
  method: "get" | "post" | "delete" | "put" | "patch";
  /** The path in OpenAPI form, e.g. /api/v1/tasks/{id}. */
  path: string;
  /** A stable, unique name for the operation (camelCase): generated clients name their methods by it. */
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  /** Whether the route needs an API key when keys are required. */
  auth?: boolean;
  body?: z.ZodType;
  query?: z.ZodType;
  params?: z.ZodType;
  headers?: Array<{ name: string; description: string; required?: boolean }>;
  /** Each content type the answer may come as (the same schema), e.g. JSON or an SSE stream. */
  responses: Record<number, { description: string; schema?: z.ZodType; contentType?: string | string[] }>;
  /**
   * The error codes the route answers besides the ones every route like it answers (those come
   * from what it takes and where it is: a key, a body, the API's rate limit); the catalogue
   * (`core/error-codes.ts`) gives each its status.
   */
  errors?: readonly CatalogueCode[];
  /**
   * A protocol's own error body (JSON-RPC's, A2A HTTP+JSON's), named for the document's
   * components, with the statuses it comes with and what each means; troupe's own layers (the
   * key, the rate limit, overload) still answer those in troupe's envelope.
   */
  protocolErrors?: { name: string; description: string; schema: z.ZodType; statuses: Record<number, string> };
  /** How a caller may send its key, when not only as a bearer token (the Agent Protocol takes X-Api-Key too). */
  security?: Array<Record<string, string[]>>;
}

type JsonSchema = Record<string, unknown>;

function schemaOf(schema: z.ZodType, io: "input" | "output"): JsonSchema {
  const json = z.toJSONSchema(schema, { io, unrepresentable: "any" }) as JsonSchema;
  delete json.$schema;
  return json;
}

/** Query or path parameters from an object schema. */
function parametersOf(schema: z.ZodType, where: "query" | "path"): JsonSchema[] {
  const json = schemaOf(schema, "input") as { properties?: Record<string, JsonSchema>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, property]) => ({
    name,
    in: where,
    required: where === "path" || (json.required ?? []).includes(name),
    schema: property,
    ...(typeof property.description === "string" ? { description: property.description } : {}),
  }));
}

/** Routes under the API's rate limit and overload protection: the API (its health check aside) and the protocols. */
function isProtected(path: string): boolean {
  return (path.startsWith("/api/v1/") && path !== "/api/v1/health") || path === "/mcp" || path.startsWith("/a2a/");
}

/** The codes a route answers because of what it takes and where it is. */
function commonCodes(route: RouteDoc): Array<CatalogueCode | "field"> {
  const codes: Array<CatalogueCode | "field"> = [];
  if (route.auth !== false) codes.push("unauthorized", "invalid_api_key");
  // Fastify reads the body of any POST or DELETE that has one, whether the route takes one or not.
  if (route.method !== "get") codes.push("invalid_json");
  if (route.body) codes.push("invalid_body", "unknown_field");
  if (route.body || route.query || route.params) codes.push("field");
  if (route.method !== "get") codes.push("body_too_large", "unsupported_media_type");
  if (isProtected(route.path)) codes.push("rate_limited", "overloaded");
  if (route.path.startsWith("/api/") && route.path !== "/api/v1/health") codes.push("shutting_down");
  codes.push("internal_error");
  return codes;
}

const STATUS_TITLES: Record<number, string> = {
  400: "the request is not one the route takes",
  401: "no API key, or one that is not valid (when the server requires keys)",
  403: "the key may not do this",
  404: "not found (another key's is not found either)",
  409: "it conflicts with the state of what it names",
  413: "the body is larger than the server's limit",
  415: "the body is not JSON",
  422: "refused as it stands",
  429: "over the key's rate limit; retry after Retry-After seconds",
  500: "the server failed; its log says why",
  502: "the model failed",
  503: "unavailable for now (overloaded, stopping, or not ready); retry after Retry-After seconds",
  504: "it took too long",
};

/** A status's description: what it means, and each code it comes with and what to do about it. */
function describeStatus(status: number, codes: Array<CatalogueCode | "field">): string {
  const lines = codes.map((code) =>
    code === "field" ? "`<field>_<problem>` (e.g. `task_required`, `limit_out_of_range`): a field of the request is missing or out of range; data.field names it" : `\`${code}\`: ${errorEntry(code).remedy}`,
  );
  return `${STATUS_TITLES[status] ?? "an error"}. ${lines.join(" · ")}`;
}

const ERROR_REF = { $ref: "#/components/schemas/Error" };

/**
 * The API's routes, collected as they are registered, rendered as an OpenAPI 3.1 document whose
 * schemas are generated from the same zod schemas that parse the requests. Every operation has
 * an `operationId` and documents its 4xx/5xx answers: troupe's envelope `{ code, message, data }`
 * (the shared `Error` schema) with the codes each status comes with, or a protocol's own error
 * body where the protocol answers itself.
 */
export class ApiDocs {
  readonly #routes: RouteDoc[] = [];

  add(route: RouteDoc): void {
    if (this.#routes.some((known) => known.operationId === route.operationId)) throw new Error(`operationId ${route.operationId} is documented twice`);
    this.#routes.push(route);
  }

  /** The 4xx/5xx statuses a route documents, each with the codes it comes with (the catalogue's statuses). */
  static errorStatuses(route: RouteDoc): Map<number, Array<CatalogueCode | "field">> {
    const statuses = new Map<number, Array<CatalogueCode | "field">>();
    for (const code of [...commonCodes(route), ...(route.errors ?? [])]) {
      const status = code === "field" ? 400 : errorEntry(code).status;
      const known = statuses.get(status) ?? [];
      if (!known.includes(code)) known.push(code);
      statuses.set(status, known);
    }
    return new Map([...statuses].sort(([a], [b]) => a - b));
  }

  document(info: { title: string; version: string; description: string }): Record<string, unknown> {
    const paths: Record<string, Record<string, unknown>> = {};
    const schemas: Record<string, unknown> = { Error: schemaOf(ErrorEnvelope, "output") };
    for (const route of this.#routes) {
      const parameters = [
        ...(route.params ? parametersOf(route.params, "path") : []),
        ...(route.query ? parametersOf(route.query, "query") : []),
        ...(route.headers ?? []).map((header) => ({ name: header.name, in: "header", required: header.required ?? false, description: header.description, schema: { type: "string" } })),
      ];
      const responses: Record<string, unknown> = {};
      for (const [status, response] of Object.entries(route.responses)) {
        const contentTypes = [response.contentType ?? "application/json"].flat();
        const schema = response.schema ? schemaOf(response.schema, "output") : undefined;
        responses[status] = {
          description: response.description,
          ...(schema ? { content: Object.fromEntries(contentTypes.map((contentType) => [contentType, { schema }])) } : {}),
        };
      }
      const protocol = route.protocolErrors;
      if (protocol) schemas[protocol.name] ??= schemaOf(protocol.schema, "output");
      const protocolRef = protocol ? { $ref: `#/components/schemas/${protocol.name}` } : undefined;
      for (const [status, codes] of ApiDocs.errorStatuses(route)) {
        if (responses[status] || protocol?.statuses[status]) continue;
        responses[status] = {
          description: describeStatus(status, codes),
          content: { "application/json": { schema: ERROR_REF } },
          "x-error-codes": codes.map((code) => (code === "field" ? "<field>_<problem>" : code)),
        };
      }
      for (const [status, description] of Object.entries(protocol?.statuses ?? {})) {
        responses[status] ??= { description, content: { "application/json": { schema: protocolRef } } };
      }
      responses.default = protocol
        ? { description: protocol.description, content: { "application/json": { schema: protocolRef } } }
        : { description: "an error: troupe's envelope, code naming it", content: { "application/json": { schema: ERROR_REF } } };
      paths[route.path] ??= {};
      (paths[route.path] as Record<string, unknown>)[route.method] = {
        operationId: route.operationId,
        summary: route.summary,
        ...(route.description ? { description: route.description } : {}),
        tags: route.tags,
        ...(parameters.length > 0 ? { parameters } : {}),
        ...(route.body ? { requestBody: { required: true, content: { "application/json": { schema: schemaOf(route.body, "input") } } } } : {}),
        responses: Object.fromEntries(Object.entries(responses).sort(([a], [b]) => (a === "default" ? 1 : b === "default" ? -1 : Number(a) - Number(b)))),
        ...(route.auth === false ? { security: [] } : route.security ? { security: route.security } : {}),
      };
    }
    return {
      openapi: "3.1.0",
      info: { ...info, license: { name: "MIT", identifier: "MIT" } },
      servers: [{ url: "/" }],
      components: {
        securitySchemes: {
          apiKey: { type: "http", scheme: "bearer", description: "a key from TROUPE_API_KEYS" },
          apiKeyHeader: { type: "apiKey", in: "header", name: "X-Api-Key", description: "a key from TROUPE_API_KEYS, as LangGraph's SDK sends it (the Agent Protocol under /langgraph)" },
        },
        schemas,
      },
      security: [{ apiKey: [] }],
      paths,
    };
  }
}
