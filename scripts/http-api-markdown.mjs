// Renders the OpenAPI document the server serves at /openapi.json as docs/http-api.md: a section
// per tag, a heading per route, its parameters, body fields and answers in tables. Deterministic
// (document order, no dates) so the lint check can compare it with the file.

/** A short type for a JSON Schema: `string (1–5000)`, `integer 1–50`, `"a" | "b"`, `string[]`. */
function typeOf(schema) {
  if (!schema || typeof schema !== "object") return "any";
  if ("const" in schema) return JSON.stringify(schema.const);
  if (Array.isArray(schema.enum)) return schema.enum.map((value) => JSON.stringify(value)).join(" | ");
  if (Array.isArray(schema.anyOf) || Array.isArray(schema.oneOf)) {
    const parts = [...new Set((schema.anyOf ?? schema.oneOf).map(typeOf))];
    return parts.join(" | ");
  }
  const type = Array.isArray(schema.type) ? schema.type.join(" | ") : schema.type;
  if (type === "array") return `${wrap(typeOf(schema.items))}[]${bounds(schema.minItems, schema.maxItems, " items")}`;
  if (type === "string") return `string${bounds(schema.minLength, schema.maxLength, " chars")}${schema.format ? ` (${schema.format})` : ""}`;
  if (type === "integer" || type === "number") return `${type}${bounds(schema.minimum ?? schema.exclusiveMinimum, schema.maximum ?? schema.exclusiveMaximum, "")}`;
  if (type === "object" || schema.properties) return "object";
  return type ?? "any";
}

function wrap(text) {
  return text.includes(" ") ? `(${text})` : text;
}

function bounds(min, max, unit) {
  if (min === undefined && max === undefined) return "";
  if (min !== undefined && max !== undefined) return ` ${min}–${max}${unit}`;
  return min !== undefined ? ` ≥ ${min}${unit}` : ` ≤ ${max}${unit}`;
}

/** One table cell: pipes escaped, newlines folded. */
function cell(text) {
  return String(text ?? "").replace(/\|/g, "\\|").replace(/\s*\n\s*/g, " ");
}

function fieldRows(schema) {
  const properties = schema?.properties ?? {};
  const required = new Set(schema?.required ?? []);
  return Object.entries(properties).map(([name, property]) => `| \`${name}\` | ${cell(typeOf(property))} | ${required.has(name) ? "yes" : ""} | ${cell(property.description)} |`);
}

/** The `data` of a success envelope, or the schema itself when the answer is not an envelope. */
function payloadOf(schema) {
  if (schema?.properties?.code && schema.properties.data) return { schema: schema.properties.data, enveloped: true };
  return { schema, enveloped: false };
}

function renderRoute(method, path, operation) {
  const summary = cell(operation.summary);
  const lines = [`### \`${method.toUpperCase()} ${path}\``, "", /[.!?]$/.test(summary) ? summary : `${summary}.`, "", `Operation id: \`${operation.operationId}\`.`];
  if (operation.description) lines.push("", operation.description);
  lines.push("", Array.isArray(operation.security) && operation.security.length === 0 ? "Open: no API key needed." : "Needs an API key when keys are required.");
  const parameters = operation.parameters ?? [];
  if (parameters.length > 0) {
    lines.push("", "| parameter | in | type | required | meaning |", "| --- | --- | --- | --- | --- |");
    for (const parameter of parameters) {
      lines.push(`| \`${parameter.name}\` | ${parameter.in} | ${cell(typeOf(parameter.schema))} | ${parameter.required ? "yes" : ""} | ${cell(parameter.description ?? parameter.schema?.description)} |`);
    }
  }
  const body = operation.requestBody?.content?.["application/json"]?.schema;
  if (body) {
    const rows = fieldRows(body);
    lines.push("", "Body (JSON):");
    if (rows.length > 0) lines.push("", "| field | type | required | meaning |", "| --- | --- | --- | --- |", ...rows);
    else lines.push(" " + cell(typeOf(body)) + (body.description ? ` — ${cell(body.description)}` : ""));
    if (body.additionalProperties === false) lines.push("", "Unknown fields are refused (400 `unknown_field`).");
  }
  lines.push("", "| answer | meaning |", "| --- | --- |");
  for (const [status, response] of Object.entries(operation.responses ?? {})) {
    if (status === "default") continue;
    const codes = response["x-error-codes"];
    if (Array.isArray(codes)) {
      // An error in troupe's envelope: what the status means, and the codes it comes with (their remedies are in errors.md).
      lines.push(`| ${status} | ${cell(response.description.split(". ")[0])} — ${codes.map((code) => `\`${code}\``).join(", ")} |`);
      continue;
    }
    const [contentType, content] = Object.entries(response.content ?? {})[0] ?? [];
    let shape = "";
    if (content?.schema) {
      const { schema, enveloped } = payloadOf(content.schema);
      const fields = Object.keys(schema?.properties ?? {});
      shape = fields.length > 0 ? ` — ${enveloped ? "`data`: " : ""}\`{ ${fields.join(", ")} }\`` : enveloped ? ` — \`data\`: ${cell(typeOf(schema))}` : "";
    } else if (contentType && contentType !== "application/json") {
      shape = ` (${contentType})`;
    }
    lines.push(`| ${status} | ${cell(response.description)}${shape} |`);
  }
  const fallback = operation.responses?.default;
  lines.push(`| other | ${fallback?.content?.["application/json"]?.schema?.$ref === "#/components/schemas/Error" ? "an error envelope `{ code, message, data }` (see [errors](#errors))" : cell(fallback?.description ?? "an error")} |`);
  return lines.join("\n");
}

/** docs/http-api.md from the OpenAPI document. */
export function renderHttpApi(document) {
  const byTag = new Map();
  for (const [path, methods] of Object.entries(document.paths ?? {})) {
    for (const [method, operation] of Object.entries(methods)) {
      const tag = operation.tags?.[0] ?? "other";
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag).push(renderRoute(method, path, operation));
    }
  }
  const out = [
    "# HTTP API reference",
    "",
    "<!-- Generated by `npm run docs:api` from the OpenAPI document the server serves at /openapi.json. Do not edit by hand: `npm run lint` fails when this file is not current. -->",
    "",
    `${document.info?.description ?? ""}`,
    "",
    "This page lists every route of the OpenAPI document (OpenAPI " + document.openapi + "), its schemas generated from the same zod schemas that parse the requests. How the service behaves around them — keys, limits, durability, the console, and the routes outside the document (`/mcp`, A2A, `/health/live`, `/health/ready`, the console's files) — is in [http-service.md](http-service.md).",
    "",
    "## Contents",
    "",
    ...[...byTag.keys()].map((tag) => `- [${tag}](#${tag.toLowerCase().replace(/[^a-z0-9]+/g, "-")})`),
    "",
  ];
  for (const [tag, routes] of byTag) out.push(`## ${tag}`, "", routes.join("\n\n"), "");
  out.push(
    "## Errors",
    "",
    "Every answer under `/api/v1` is an envelope `{ code, message, data }`: `code` is `\"ok\"` or a stable error code (`task_too_long`, `unknown_field`, `unauthorized`, `rate_limited`, …), `message` one line for a person, and `data` names the field and lists every problem.",
    "",
    "Each route's table lists the error statuses it can answer and the codes each comes with (in the OpenAPI document: the shared `Error` schema, the codes as `x-error-codes`, each code's remedy in the status's description); [errors.md](errors.md) gives every code's status and remedy. A code `<field>_<problem>` (`task_required`, `limit_out_of_range`) is a request field's problem. The protocol endpoints answer their errors in the protocol's own shape (`JsonRpcError`, `A2AError`), except the key, rate-limit and overload answers of the A2A routes, which are troupe's envelope.",
    "",
  );
  return out.join("\n");
}
