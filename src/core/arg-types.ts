import { parseJsonPath, type Segment } from "./json-path-syntax.js";

/**
 * What the plan check knows about a referenced value before anything runs: the JSON schema of
 * the part of an earlier result a reference selects, from the schema of that step's tool's value
 * (its output schema) and the reference's path — and a stand-in value of that schema, so the
 * argument can be checked against the tool that takes it. Schemas can come from users (an MCP
 * server's output schema): every walk here is bounded in depth and properties, and reads only
 * `type`, `properties`, `items`, `enum`, `const`, `anyOf`/`oneOf` — nothing that can recurse
 * without end or cost more than the schema's size.
 */

export type JsonSchema = Record<string, unknown>;

const MAX_DEPTH = 6;
const MAX_PROPERTIES = 32;

function isSchema(value: unknown): value is JsonSchema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The schema of a map's report (`{ overallStatus, results: [{ status, input, output, error }] }`) around its items' value schema. */
export function mapReportSchema(item: JsonSchema | undefined): JsonSchema {
  return {
    type: "object",
    properties: {
      overallStatus: { type: "string", enum: ["ALL_SUCCESS", "PARTIAL_SUCCESS", "ALL_FAILURE"] },
      results: {
        type: "array",
        items: { type: "object", properties: { status: { type: "string", enum: ["success", "error"] }, input: {}, ...(item ? { output: item } : {}), error: { type: "string" } } },
      },
    },
  };
}

/** The one schema a node stands for: its first branch when it is a union, itself otherwise. */
function single(schema: JsonSchema): JsonSchema {
  const branches = (Array.isArray(schema.anyOf) ? schema.anyOf : Array.isArray(schema.oneOf) ? schema.oneOf : undefined) as unknown[] | undefined;
  if (branches === undefined) return schema;
  // A nullable value (`anyOf: [T, null]`) is its T.
  const typed = branches.filter(isSchema).filter((branch) => branch.type !== "null");
  return typed.length === 1 ? (typed[0] as JsonSchema) : schema;
}

function typesOf(schema: JsonSchema): string[] {
  if (typeof schema.type === "string") return [schema.type];
  return Array.isArray(schema.type) ? schema.type.filter((type): type is string => typeof type === "string") : [];
}

/** The schema of what one selector takes from a value of `schema`, and whether it selects many; undefined when unknown. */
function step(schema: JsonSchema, segment: Segment): { schema: JsonSchema; many: boolean } | undefined {
  if (segment.descendant || segment.selectors.length !== 1) return undefined;
  const selector = segment.selectors[0];
  const node = single(schema);
  const types = typesOf(node);
  if (selector?.kind === "name") {
    const properties = isSchema(node.properties) ? node.properties : undefined;
    const property = properties?.[selector.name];
    return isSchema(property) ? { schema: property, many: false } : undefined;
  }
  const items = isSchema(node.items) ? node.items : undefined;
  if (!types.includes("array") || !items) return undefined;
  if (selector?.kind === "index") return { schema: items, many: false };
  if (selector?.kind === "wildcard" || selector?.kind === "slice" || selector?.kind === "filter") return { schema: items, many: true };
  return undefined;
}

/**
 * The schema of what `path` selects from a value of `schema`: a list of it when the path selects
 * many (a wildcard, a filter, a slice); undefined when the schema does not say (no output schema,
 * a property it does not declare, recursive descent, a union of selectors).
 */
export function referencedSchema(schema: JsonSchema | undefined, path: string): JsonSchema | undefined {
  if (schema === undefined) return undefined;
  if (path === "$") return schema;
  let segments: Segment[];
  try {
    segments = parseJsonPath(path);
  } catch {
    return undefined;
  }
  if (segments.length > MAX_DEPTH * 4) return undefined;
  let current = schema;
  let many = false;
  for (const segment of segments) {
    const next = step(current, segment);
    if (!next) return undefined;
    current = next.schema;
    many ||= next.many;
  }
  return many ? { type: "array", items: current } : current;
}

/** The item schema of a list schema (what a step that runs over it gets each time), or undefined. */
export function itemSchema(schema: JsonSchema | undefined): JsonSchema | undefined {
  if (schema === undefined) return undefined;
  const node = single(schema);
  return typesOf(node).includes("array") && isSchema(node.items) ? node.items : undefined;
}

/**
 * A value of `schema` — its const, its first enum value, or the least value of its type (an
 * object with its required properties) — or undefined when the schema does not say enough.
 * Bounded in depth and properties.
 */
export function standInFor(schema: JsonSchema | undefined, depth = 0): { value: unknown } | undefined {
  if (schema === undefined || depth > MAX_DEPTH) return undefined;
  const node = single(schema);
  if ("const" in node) return { value: node.const };
  if (Array.isArray(node.enum) && node.enum.length > 0) return { value: node.enum[0] };
  const type = typesOf(node).find((candidate) => candidate !== "null") ?? typesOf(node)[0];
  switch (type) {
    case "string":
      return { value: "text" };
    case "number":
    case "integer":
      return { value: 1 };
    case "boolean":
      return { value: true };
    case "null":
      return { value: null };
    case "array":
      return { value: [] };
    case "object": {
      const value: Record<string, unknown> = {};
      const properties = isSchema(node.properties) ? node.properties : {};
      const required = Array.isArray(node.required) ? node.required.filter((name): name is string => typeof name === "string").slice(0, MAX_PROPERTIES) : [];
      for (const name of required) {
        const inner = standInFor(isSchema(properties[name]) ? properties[name] : undefined, depth + 1);
        if (!inner) return undefined;
        value[name] = inner.value;
      }
      return { value };
    }
    default:
      return undefined;
  }
}

/** A schema's type in words, for error messages ("number", "object {content, encoding}", "list of number"). */
export function describeSchema(schema: JsonSchema, depth = 0): string {
  const node = single(schema);
  const types = typesOf(node);
  if (types.includes("array")) return depth > 1 || !isSchema(node.items) ? "list" : `list of ${describeSchema(node.items, depth + 1)}`;
  if (types.includes("object")) {
    const names = Object.keys(isSchema(node.properties) ? node.properties : {}).slice(0, 8);
    return names.length > 0 ? `object {${names.join(", ")}}` : "object";
  }
  return types.join(" or ") || "value";
}
