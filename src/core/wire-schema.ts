import { z } from "zod";

/** A JSON schema as sent to a provider. */
export type JsonSchema = Record<string, unknown>;

/**
 * Keywords no wire schema carries. `default` is refused by OpenAI's strict mode; string lengths
 * are not in the subset OpenAI documents for strict mode (troupe checks them itself, and the
 * description states the bound).
 */
const ALWAYS_DROPPED = ["default"] as const;
const ALWAYS_DESCRIBED = ["minLength", "maxLength"] as const;

/** Keywords that only constrain objects and that strict mode rejects. */
const STRICT_REFUSED = ["not", "oneOf", "allOf", "if", "then", "else", "patternProperties", "propertyNames", "unevaluatedProperties", "dependentSchemas", "dependentRequired", "minProperties", "maxProperties", "$ref", "$defs", "prefixItems", "contains", "uniqueItems"];

/** A keyword's bound in words; undefined when it goes without saying (a string that is not empty). */
function phrase(keyword: string, value: unknown): string | undefined {
  switch (keyword) {
    case "maxLength":
      return `at most ${String(value)} characters`;
    case "minLength":
      return value === 1 ? undefined : `at least ${String(value)} characters`;
    case "maxItems":
      return value === 0 ? "always empty" : `at most ${String(value)} items`;
    case "minItems":
      return `at least ${String(value)} items`;
    case "maximum":
      return `at most ${String(value)}`;
    case "minimum":
      return `at least ${String(value)}`;
    default:
      return `${keyword}: ${JSON.stringify(value)}`;
  }
}

function isSchema(value: unknown): value is JsonSchema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Applies `visit` to every subschema (properties, items, anyOf branches), bottom up, returning a new schema. */
function mapSchema(schema: JsonSchema, visit: (schema: JsonSchema) => JsonSchema): JsonSchema {
  const copy: JsonSchema = { ...schema };
  if (isSchema(copy.properties)) copy.properties = Object.fromEntries(Object.entries(copy.properties).map(([name, child]) => [name, isSchema(child) ? mapSchema(child, visit) : child]));
  if (isSchema(copy.items)) copy.items = mapSchema(copy.items, visit);
  if (isSchema(copy.additionalProperties)) copy.additionalProperties = mapSchema(copy.additionalProperties, visit);
  for (const key of ["anyOf", "oneOf", "allOf"]) {
    if (Array.isArray(copy[key])) copy[key] = (copy[key] as unknown[]).map((child) => (isSchema(child) ? mapSchema(child, visit) : child));
  }
  return visit(copy);
}

/**
 * Moves `keywords` out of every subschema into its description, in words ("at most 50 items"),
 * for a provider whose strict mode rejects them: the model still reads the bound, and troupe
 * checks it when it parses the answer.
 */
export function describeKeywords(schema: JsonSchema, keywords: readonly string[]): JsonSchema {
  if (keywords.length === 0) return schema;
  return mapSchema(schema, (node) => {
    const moved = keywords.filter((keyword) => keyword in node);
    if (moved.length === 0) return node;
    const rest: JsonSchema = { ...node };
    const words = moved.flatMap((keyword) => {
      const text = phrase(keyword, rest[keyword]);
      delete rest[keyword];
      return text === undefined ? [] : [text];
    });
    if (words.length === 0) return rest;
    const description = typeof rest.description === "string" && rest.description !== "" ? `${rest.description} (${words.join(", ")})` : words.join(", ");
    return { ...rest, description };
  });
}

/**
 * A zod schema as the JSON schema troupe sends for a structured answer: the output shape (every
 * property of an object required, unknown ones refused), nullable types as `anyOf` with a null
 * branch rather than a list of types (the form both OpenAI's and Anthropic's strict modes take),
 * no `default`, string lengths stated in descriptions.
 */
export function wireJsonSchema(schema: z.ZodType): JsonSchema {
  const converted = z.toJSONSchema(schema, { io: "output", unrepresentable: "any" }) as JsonSchema;
  delete converted.$schema;
  const normalized = mapSchema(converted, (node) => {
    const copy: JsonSchema = { ...node };
    for (const keyword of ALWAYS_DROPPED) delete copy[keyword];
    if (Array.isArray(copy.type)) {
      const { type, ...rest } = copy;
      const branches = (type as string[]).map((name) => ({ type: name }));
      const keep = Object.fromEntries(Object.entries(rest).filter(([key]) => key === "description" || key === "title"));
      const typed = Object.fromEntries(Object.entries(rest).filter(([key]) => key !== "description" && key !== "title"));
      // Keywords of one type (items of an array, enum of a string…) stay with their branch.
      const withKeywords = branches.map((branch) => (Object.keys(typed).length > 0 && branch.type !== "null" ? { ...branch, ...typed } : branch));
      return { ...keep, anyOf: withKeywords };
    }
    return copy;
  });
  return describeKeywords(normalized, ALWAYS_DESCRIBED);
}

/**
 * Whether a JSON schema fits the strict structured-output modes (OpenAI `strict: true`,
 * Anthropic strict tools): an object at the root, every object closed (`additionalProperties:
 * false`) with every property required, none of the keywords they refuse. troupe asks for strict
 * mode only for schemas that pass, so a schema that does not fit is sent as a plain one.
 */
export function isStrictCompatible(schema: JsonSchema): boolean {
  if (schema.type !== "object" || "anyOf" in schema) return false;
  let compatible = true;
  mapSchema(schema, (node) => {
    if (STRICT_REFUSED.some((keyword) => keyword in node)) compatible = false;
    if (!("type" in node) && !("anyOf" in node) && !("enum" in node) && !("const" in node)) compatible = false;
    if (node.type === "object") {
      const properties = isSchema(node.properties) ? Object.keys(node.properties) : [];
      const required = Array.isArray(node.required) ? (node.required as string[]) : [];
      if (node.additionalProperties !== false || properties.some((name) => !required.includes(name))) compatible = false;
    }
    if (node.type === "array" && !isSchema(node.items)) compatible = false;
    return node;
  });
  return compatible;
}
