/**
 * A value brought to the type a JSON schema asks for, where a person would expect it: a number
 * where text is wanted becomes its decimal text, "42" where a number is wanted becomes 42,
 * "true" a boolean, JSON text an object or a list, an enum value in another case the listed one.
 * Nothing else changes: a value that cannot be brought over is left as it is, for validation to
 * refuse with the field it is at. Each change is told in words, for the trace.
 */

type Schema = Record<string, unknown>;

/** How deep into nested objects and lists values are fitted (schemas deeper than this are left as they are). */
const MAX_DEPTH = 24;
const NUMBER_TEXT = /^\s*-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?\s*$/;

export interface Fitted {
  value: unknown;
  /** What was changed, one sentence each (`content: the number 397.8 as the text "397.8"`). */
  changes: string[];
}

function isSchema(value: unknown): value is Schema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function typesOf(schema: Schema): string[] {
  if (typeof schema.type === "string") return [schema.type];
  if (Array.isArray(schema.type)) return schema.type.filter((type): type is string => typeof type === "string");
  return [];
}

function jsonTypeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

/** Whether a value's JSON type is one the schema allows (without looking inside it). */
function typeFits(value: unknown, types: readonly string[]): boolean {
  if (types.length === 0) return true;
  const type = jsonTypeOf(value);
  return types.includes(type) || (type === "integer" && types.includes("number"));
}

/** Of object branches, the one whose properties a value's keys fit best: all its keys known and every required one there, else the most keys known. */
function closestObject(value: Record<string, unknown>, branches: readonly Schema[]): Schema | undefined {
  const keys = Object.keys(value);
  let best: { branch: Schema; score: number } | undefined;
  for (const branch of branches) {
    const properties = isSchema(branch.properties) ? branch.properties : {};
    const required = Array.isArray(branch.required) ? (branch.required as string[]) : [];
    const known = keys.filter((key) => key in properties).length;
    const complete = known === keys.length && required.every((key) => key in value);
    const score = (complete ? 1_000 : 0) + known;
    if (!best || score > best.score) best = { branch, score };
  }
  return best?.branch;
}

function shown(value: unknown): string {
  const text = typeof value === "string" ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
}

function describe(value: unknown): string {
  switch (jsonTypeOf(value)) {
    case "integer":
    case "number":
      return `the number ${shown(value)}`;
    case "boolean":
      return `the boolean ${shown(value)}`;
    case "string":
      return `the text ${shown(value)}`;
    case "array":
      return "a list";
    case "object":
      return "an object";
    default:
      return "null";
  }
}

/** The value as one of `types`, or undefined when no person would read it so. */
function convert(value: unknown, types: readonly string[]): { value: unknown } | undefined {
  for (const type of types) {
    if (type === "string") {
      if (typeof value === "number" && Number.isFinite(value)) return { value: String(value) };
      if (typeof value === "boolean") return { value: String(value) };
      if (typeof value === "object" && value !== null) return { value: JSON.stringify(value, null, 2) };
    } else if ((type === "number" || type === "integer") && typeof value === "string" && NUMBER_TEXT.test(value)) {
      const number = Number(value);
      if (Number.isFinite(number) && (type === "number" || Number.isInteger(number))) return { value: number };
    } else if (type === "boolean" && typeof value === "string" && /^(?:true|false)$/i.test(value.trim())) {
      return { value: value.trim().toLowerCase() === "true" };
    } else if ((type === "object" || type === "array") && typeof value === "string") {
      try {
        const parsed = JSON.parse(value) as unknown;
        if (jsonTypeOf(parsed) === type) return { value: parsed };
      } catch {
        // not JSON text
      }
    }
  }
  return undefined;
}

function fitAt(value: unknown, schema: Schema, at: string, changes: string[], depth: number): unknown {
  if (depth > MAX_DEPTH || value === undefined) return value;
  if (Array.isArray(schema.anyOf)) {
    const branches = schema.anyOf.filter(isSchema);
    // A branch the value's type already fits is taken as it is (an object: the one whose properties it has); otherwise the first it can be brought to.
    const typed = branches.filter((branch) => typeFits(value, typesOf(branch)) && (!Array.isArray(branch.enum) || branch.enum.includes(value)));
    const fitting = isSchema(value) && typed.length > 1 ? closestObject(value, typed) : typed[0];
    if (fitting) return fitAt(value, fitting, at, changes, depth + 1);
    for (const branch of branches) {
      const before = changes.length;
      const result = fitAt(value, branch, at, changes, depth + 1);
      if (result !== value) return result;
      changes.length = before;
    }
    return value;
  }
  if (Array.isArray(schema.enum) && typeof value === "string" && !schema.enum.includes(value)) {
    const match = schema.enum.find((option) => typeof option === "string" && option.toLowerCase() === value.trim().toLowerCase());
    if (match !== undefined) {
      changes.push(`${at || "the answer"}: ${shown(value)} read as ${shown(match)}`);
      return match;
    }
  }
  const types = typesOf(schema);
  let current: unknown = value;
  if (!typeFits(current, types)) {
    const converted = convert(current, types);
    if (!converted) return value;
    changes.push(`${at || "the answer"}: ${describe(current)} given as ${describe(converted.value)}`);
    current = converted.value;
  }
  if (Array.isArray(current) && isSchema(schema.items)) {
    const items = schema.items;
    let changed = false;
    const fitted = current.map((item, index) => {
      const next = fitAt(item, items, `${at}[${index}]`, changes, depth + 1);
      if (next !== item) changed = true;
      return next;
    });
    return changed ? fitted : current;
  }
  if (isSchema(current) && !Array.isArray(current) && isSchema(schema.properties)) {
    const properties = schema.properties;
    let changed = false;
    const fitted: Record<string, unknown> = { ...current };
    for (const [name, item] of Object.entries(current)) {
      const property = properties[name];
      if (!isSchema(property)) continue;
      const next = fitAt(item, property, at ? `${at}.${name}` : name, changes, depth + 1);
      if (next !== item) {
        fitted[name] = next;
        changed = true;
      }
    }
    return changed ? fitted : current;
  }
  return current;
}

/** `value` brought to the types `schema` asks for where that is plain (see the module's comment), with what changed. */
export function fitToSchema(value: unknown, schema: Schema, at = ""): Fitted {
  const changes: string[] = [];
  const fitted = fitAt(value, schema, at, changes, 0);
  return { value: fitted, changes };
}
