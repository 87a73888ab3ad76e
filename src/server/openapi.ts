import { z } from "zod";
import { ErrorEnvelope } from "./envelope.js";

/** One documented route: its request parts and answers as zod schemas. */
export interface RouteDoc {
  method: "get" | "post" | "delete" | "put" | "patch";
  /** The path in OpenAPI form, e.g. /api/v1/tasks/{id}. */
  path: string;
  /** A stable, unique name for the operation (camelCase): generated clients name their methods by it. */
  operationId?: string;
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
  /** The body of an error answer, when it is not troupe's envelope (a protocol's own, e.g. JSON-RPC). */
  errors?: { description: string; schema: z.ZodType };
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

/**
 * The API's routes, collected as they are registered, rendered as an OpenAPI 3.1 document whose
 * schemas are generated from the same zod schemas that parse the requests.
 */
export class ApiDocs {
  readonly #routes: RouteDoc[] = [];

  add(route: RouteDoc): void {
    this.#routes.push(route);
  }

  document(info: { title: string; version: string; description: string }): Record<string, unknown> {
    const paths: Record<string, Record<string, unknown>> = {};
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
      const errors = route.errors ?? { description: "an error", schema: ErrorEnvelope };
      responses.default = { description: errors.description, content: { "application/json": { schema: schemaOf(errors.schema, "output") } } };
      paths[route.path] ??= {};
      (paths[route.path] as Record<string, unknown>)[route.method] = {
        ...(route.operationId ? { operationId: route.operationId } : {}),
        summary: route.summary,
        ...(route.description ? { description: route.description } : {}),
        tags: route.tags,
        ...(parameters.length > 0 ? { parameters } : {}),
        ...(route.body ? { requestBody: { required: true, content: { "application/json": { schema: schemaOf(route.body, "input") } } } } : {}),
        responses,
        ...(route.auth === false ? { security: [] } : route.security ? { security: route.security } : {}),
      };
    }
    return {
      openapi: "3.1.0",
      info,
      servers: [{ url: "/" }],
      components: {
        securitySchemes: {
          apiKey: { type: "http", scheme: "bearer", description: "a key from TROUPE_API_KEYS" },
          apiKeyHeader: { type: "apiKey", in: "header", name: "X-Api-Key", description: "a key from TROUPE_API_KEYS, as LangGraph's SDK sends it (the Agent Protocol under /langgraph)" },
        },
      },
      security: [{ apiKey: [] }],
      paths,
    };
  }
}
