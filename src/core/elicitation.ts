import { createHash } from "node:crypto";
import { z } from "zod";
import { stableStringify, truncate } from "./text.js";

/**
 * A tool server's question for a person (MCP elicitation, form mode), as troupe keeps and checks
 * it. The form comes from a remote server, so it is a program in disguise: it is rebuilt from the
 * few keywords MCP allows (flat fields of strings, numbers, booleans and enums), bounded in size,
 * and every check of an answer against it is linear in the answer. Nothing here runs a regular
 * expression the server wrote or a JSON Schema keyword beyond these.
 */

/** The most fields a form may have; a larger one is declined without asking anyone. */
export const MAX_FIELDS = 24;
/** The most options one choice field may list. */
export const MAX_OPTIONS = 100;
/** The longest option value (values must come back exact, so a longer one declines the form). */
const MAX_OPTION_VALUE = 200;
/** Titles, descriptions and option labels are cut to this many characters. */
const MAX_LABEL = 300;
/** The most of a server's message a person is shown (the whole of it is fingerprinted). */
export const MAX_MESSAGE = 2_000;
/** The longest text an answer's field may hold, whatever the form's maxLength says. */
export const MAX_ANSWER_TEXT = 10_000;
const NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const FORMATS = new Set(["email", "uri", "date", "date-time"]);

export type ElicitationValue = string | number | boolean | string[];
export const ElicitationContent = z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.array(z.string())]));
export type ElicitationContent = z.infer<typeof ElicitationContent>;

interface Option {
  value: string;
  title?: string;
}

/** One field of a form, as rebuilt from the server's schema. */
type Field =
  | { type: "string"; title?: string; description?: string; minLength?: number; maxLength?: number; format?: string; default?: string; options?: Option[] }
  | { type: "number" | "integer"; title?: string; description?: string; minimum?: number; maximum?: number; default?: number }
  | { type: "boolean"; title?: string; description?: string; default?: boolean }
  | { type: "array"; title?: string; description?: string; minItems?: number; maxItems?: number; default?: string[]; options: Option[] };

/** A form as troupe keeps it: the MCP restricted schema, rebuilt and bounded. */
export interface ElicitationForm {
  type: "object";
  properties: Record<string, Record<string, unknown>>;
  required?: string[];
}

/** How a person answered: the MCP result actions, and which question the answer was given to. */
export const ElicitationAnswer = z.object({
  action: z.enum(["accept", "decline", "cancel"]),
  content: ElicitationContent.optional(),
  fingerprint: z.string().min(1).max(128),
});
export type ElicitationAnswer = z.infer<typeof ElicitationAnswer>;

/** What a run waiting on a tool server's question keeps in its interrupt (kind `mcp-elicitation`). */
export interface ElicitationQuestion {
  /** The MCP server's name in troupe's config, and the tool whose call it asked during. */
  server: string;
  tool: string;
  agent?: string;
  subtaskId?: string;
  /** The server's words, cut to MAX_MESSAGE: untrusted text, never troupe's own. */
  message: string;
  requestedSchema: ElicitationForm;
  /** Which question this is (the server, tool, whole message and form): an answer is only ever given to the question it was given for. */
  fingerprint: string;
  /** Always `mcp:<server>`: where the words come from, for every surface that shows them. */
  source: string;
  untrusted: true;
  askedAt: number;
  /** When troupe serve answers it cancel if nobody has (the server's elicitation.timeoutMs). */
  expiresAt?: number;
}

/**
 * A server's text made safe to show: control characters (ANSI escapes that rewrite a terminal's
 * lines, carriage returns) and the bidirectional overrides become spaces, so it cannot forge what
 * troupe itself prints around it. Line breaks and tabs stay.
 */
export function printable(value: string, max: number): string {
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  return truncate(value.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, " "), max);
}

const text = (value: unknown, max = MAX_LABEL): string | undefined => (typeof value === "string" ? printable(value, max) : undefined);
const finite = (value: unknown): number | undefined => (typeof value === "number" && Number.isFinite(value) ? value : undefined);
const count = (value: unknown): number | undefined => {
  const number = finite(value);
  return number !== undefined && number >= 0 && Number.isInteger(number) ? number : undefined;
};

function optionsOf(values: unknown, titles?: unknown): Option[] | string {
  if (!Array.isArray(values)) return "its choices are not a list";
  if (values.length === 0) return "it has no choices";
  if (values.length > MAX_OPTIONS) return `it has ${values.length} choices, more than ${MAX_OPTIONS}`;
  const options: Option[] = [];
  for (const [index, entry] of values.entries()) {
    const value = typeof entry === "string" ? entry : typeof entry === "object" && entry !== null ? (entry as { const?: unknown }).const : undefined;
    if (typeof value !== "string") return "a choice is not a string";
    if (value.length > MAX_OPTION_VALUE) return `a choice is longer than ${MAX_OPTION_VALUE} characters`;
    const title = typeof entry === "object" && entry !== null ? text((entry as { title?: unknown }).title) : Array.isArray(titles) ? text(titles[index]) : undefined;
    options.push(title !== undefined ? { value, title } : { value });
  }
  return options;
}

/** A field rebuilt from the server's property, or why it cannot be asked. */
function fieldOf(property: unknown): Field | string {
  if (typeof property !== "object" || property === null || Array.isArray(property)) return "it is not a schema";
  const raw = property as Record<string, unknown>;
  const labels = { ...(text(raw.title) !== undefined ? { title: text(raw.title) as string } : {}), ...(text(raw.description) !== undefined ? { description: text(raw.description) as string } : {}) };
  switch (raw.type) {
    case "string": {
      const choices = raw.enum !== undefined ? optionsOf(raw.enum, raw.enumNames) : raw.oneOf !== undefined ? optionsOf(raw.oneOf) : undefined;
      if (typeof choices === "string") return choices;
      const format = typeof raw.format === "string" && FORMATS.has(raw.format) ? raw.format : undefined;
      const field: Field = { type: "string", ...labels };
      if (choices) field.options = choices;
      if (count(raw.minLength) !== undefined) field.minLength = count(raw.minLength) as number;
      if (count(raw.maxLength) !== undefined) field.maxLength = count(raw.maxLength) as number;
      if (format) field.format = format;
      if (typeof raw.default === "string" && fieldViolation(field, raw.default) === undefined) field.default = raw.default;
      return field;
    }
    case "number":
    case "integer": {
      const field: Field = { type: raw.type, ...labels };
      if (finite(raw.minimum) !== undefined) field.minimum = finite(raw.minimum) as number;
      if (finite(raw.maximum) !== undefined) field.maximum = finite(raw.maximum) as number;
      if (finite(raw.default) !== undefined && fieldViolation(field, raw.default) === undefined) field.default = raw.default as number;
      return field;
    }
    case "boolean":
      return { type: "boolean", ...labels, ...(typeof raw.default === "boolean" ? { default: raw.default } : {}) };
    case "array": {
      const items = raw.items as Record<string, unknown> | undefined;
      if (typeof items !== "object" || items === null) return "a multiple choice without items";
      const choices = items.enum !== undefined ? optionsOf(items.enum) : optionsOf(items.anyOf);
      if (typeof choices === "string") return choices;
      const field: Field = { type: "array", ...labels, options: choices };
      if (count(raw.minItems) !== undefined) field.minItems = count(raw.minItems) as number;
      if (count(raw.maxItems) !== undefined) field.maxItems = count(raw.maxItems) as number;
      if (Array.isArray(raw.default) && fieldViolation(field, raw.default) === undefined) field.default = raw.default as string[];
      return field;
    }
    default:
      return `its type ${JSON.stringify(truncate(String(raw.type), 40))} is not one a form may ask (string, number, integer, boolean, or a multiple choice)`;
  }
}

/** The field as the MCP schema it came as (the same keywords only, bounded). */
function schemaOf(field: Field): Record<string, unknown> {
  const { options, ...rest } = field as Field & { options?: Option[] };
  if (!options) return { ...rest };
  const titled = options.some((option) => option.title !== undefined);
  const choices = titled ? options.map((option) => ({ const: option.value, title: option.title ?? option.value })) : options.map((option) => option.value);
  if (field.type === "array") return { ...rest, items: titled ? { anyOf: choices } : { type: "string", enum: choices } };
  return titled ? { ...rest, oneOf: choices } : { ...rest, enum: choices };
}

/**
 * A server's requested schema rebuilt as troupe keeps it, or why it cannot be put to a person
 * (too many fields, a field of a kind forms do not have, too many choices): such a question is
 * declined without asking anyone.
 */
export function formOf(requested: unknown): { form: ElicitationForm } | { refused: string } {
  if (typeof requested !== "object" || requested === null || Array.isArray(requested)) return { refused: "its form is not a schema" };
  const raw = requested as { type?: unknown; properties?: unknown; required?: unknown };
  if (raw.type !== "object" || typeof raw.properties !== "object" || raw.properties === null || Array.isArray(raw.properties)) return { refused: "its form is not an object schema" };
  const names = Object.keys(raw.properties);
  if (names.length > MAX_FIELDS) return { refused: `its form has ${names.length} fields, more than ${MAX_FIELDS}` };
  const properties: Record<string, Record<string, unknown>> = {};
  for (const name of names) {
    if (!NAME.test(name)) return { refused: `its form has a field named ${JSON.stringify(truncate(name, 40))}: names are letters, digits, '_', '.' or '-' (at most 64)` };
    const field = fieldOf((raw.properties as Record<string, unknown>)[name]);
    if (typeof field === "string") return { refused: `its field "${name}" cannot be asked: ${field}` };
    properties[name] = schemaOf(field);
  }
  const required = Array.isArray(raw.required) ? [...new Set(raw.required.filter((name): name is string => typeof name === "string" && name in properties))] : [];
  return { form: { type: "object", properties, ...(required.length > 0 ? { required } : {}) } };
}

/** A kept form's field, read back (forms are kept rebuilt, so this is only ever a known shape). */
function fieldsOf(form: ElicitationForm): Map<string, Field> {
  const fields = new Map<string, Field>();
  for (const [name, schema] of Object.entries(form.properties)) {
    const field = fieldOf(schema);
    if (typeof field !== "string") fields.set(name, field);
  }
  return fields;
}

function isDate(value: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(value)) return false;
  const date = new Date(`${value}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().startsWith(value);
}

function isEmail(value: string): boolean {
  const at = value.indexOf("@");
  return at > 0 && at === value.lastIndexOf("@") && at < value.length - 1 && !/\s/.test(value) && value.slice(at + 1).includes(".");
}

function formatViolation(format: string, value: string): string | undefined {
  switch (format) {
    case "email":
      return isEmail(value) ? undefined : "is not an email address";
    case "uri":
      return URL.canParse(value) ? undefined : "is not a URI";
    case "date":
      return isDate(value) ? undefined : "is not a date (YYYY-MM-DD)";
    case "date-time":
      return /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/.test(value) && !Number.isNaN(Date.parse(value)) ? undefined : "is not a date-time (RFC 3339)";
    default:
      return undefined;
  }
}

/** Why `value` does not fit `field`, or undefined when it does. Linear in the value. */
function fieldViolation(field: Field, value: unknown): string | undefined {
  switch (field.type) {
    case "string": {
      if (typeof value !== "string") return "must be text";
      if (value.length > MAX_ANSWER_TEXT) return `is longer than ${MAX_ANSWER_TEXT} characters`;
      if (field.options && !field.options.some((option) => option.value === value)) return `must be one of ${field.options.map((option) => JSON.stringify(option.value)).join(", ")}`;
      const length = [...value].length;
      if (field.minLength !== undefined && length < field.minLength) return `must be at least ${field.minLength} characters`;
      if (field.maxLength !== undefined && length > field.maxLength) return `must be at most ${field.maxLength} characters`;
      return field.format ? formatViolation(field.format, value) : undefined;
    }
    case "number":
    case "integer":
      if (typeof value !== "number" || !Number.isFinite(value)) return "must be a number";
      if (field.type === "integer" && !Number.isInteger(value)) return "must be a whole number";
      if (field.minimum !== undefined && value < field.minimum) return `must be at least ${field.minimum}`;
      if (field.maximum !== undefined && value > field.maximum) return `must be at most ${field.maximum}`;
      return undefined;
    case "boolean":
      return typeof value === "boolean" ? undefined : "must be true or false";
    case "array": {
      if (!Array.isArray(value)) return "must be a list of choices";
      if (value.length > field.options.length) return `lists more than its ${field.options.length} choices`;
      const allowed = new Set(field.options.map((option) => option.value));
      const seen = new Set<string>();
      for (const item of value) {
        if (typeof item !== "string" || !allowed.has(item)) return `may only list ${[...allowed].map((choice) => JSON.stringify(choice)).join(", ")}`;
        if (seen.has(item)) return `lists ${JSON.stringify(item)} twice`;
        seen.add(item);
      }
      if (field.minItems !== undefined && value.length < field.minItems) return `must list at least ${field.minItems}`;
      if (field.maxItems !== undefined && value.length > field.maxItems) return `must list at most ${field.maxItems}`;
      return undefined;
    }
  }
}

/**
 * An accepted answer checked against its form, with the form's defaults filled in for the fields
 * it leaves out (SEP-1034): the content to send, or the violations (each naming its field).
 */
export function checkContent(form: ElicitationForm, given: unknown): { content: ElicitationContent } | { violations: string[] } {
  if (typeof given !== "object" || given === null || Array.isArray(given)) return { violations: ["the answer must be an object of the form's fields"] };
  const fields = fieldsOf(form);
  const violations: string[] = [];
  const content: ElicitationContent = {};
  for (const [name, value] of Object.entries(given as Record<string, unknown>)) {
    const field = fields.get(name);
    if (!field) {
      violations.push(`the form has no field "${truncate(name, 64)}" (its fields: ${[...fields.keys()].join(", ") || "none"})`);
      if (violations.length >= 10) break;
      continue;
    }
    const wrong = fieldViolation(field, value);
    if (wrong) violations.push(`${name} ${wrong}`);
    else content[name] = value as ElicitationValue;
  }
  for (const [name, field] of fields) {
    if (content[name] === undefined && field.default !== undefined) content[name] = field.default;
  }
  for (const name of form.required ?? []) {
    if (content[name] === undefined && !violations.some((violation) => violation.startsWith(`${name} `))) violations.push(`${name} is required`);
  }
  return violations.length > 0 ? { violations } : { content };
}

/**
 * A person's answer in words as the form's content: a JSON object as it is; for a form of one
 * field, the words as that field's value (a number, yes/no, or a comma-separated list of choices).
 */
export function contentFromText(form: ElicitationForm, answer: string): { content: unknown } | { violations: string[] } {
  const trimmed = answer.trim();
  if (trimmed.startsWith("{")) {
    try {
      return { content: JSON.parse(trimmed) as unknown };
    } catch {
      return { violations: ["the answer starts with { but is not a JSON object"] };
    }
  }
  const fields = [...fieldsOf(form)];
  if (fields.length !== 1) {
    return { violations: [`the form has ${fields.length} fields (${fields.map(([name]) => name).join(", ") || "none"}): answer with a JSON object of them, such as {"${fields[0]?.[0] ?? "field"}": …}`] };
  }
  const [name, field] = fields[0] as [string, Field];
  switch (field.type) {
    case "number":
    case "integer":
      return { content: { [name]: trimmed === "" ? Number.NaN : Number(trimmed) } };
    case "boolean": {
      const word = trimmed.toLowerCase();
      if (["yes", "true", "y"].includes(word)) return { content: { [name]: true } };
      if (["no", "false", "n"].includes(word)) return { content: { [name]: false } };
      return { violations: [`${name} must be yes or no`] };
    }
    case "array":
      return { content: { [name]: trimmed === "" ? [] : trimmed.split(",").map((item) => item.trim()) } };
    default:
      return { content: { [name]: answer } };
  }
}

/** The fingerprint of a question: its server, tool, whole message and form. */
export function fingerprintOf(server: string, tool: string, message: string, form: ElicitationForm): string {
  return createHash("sha256").update(stableStringify({ server, tool, message, form })).digest("hex").slice(0, 32);
}

/** The form's fields in a line each, for a person reading words: `name (number, required): description`. */
export function describeForm(form: ElicitationForm): string[] {
  const required = new Set(form.required ?? []);
  return [...fieldsOf(form)].map(([name, field]) => {
    const kind =
      field.type === "array"
        ? `any of ${field.options.map((option) => option.value).join(" | ")}`
        : field.type === "string" && field.options
          ? `one of ${field.options.map((option) => option.value).join(" | ")}`
          : field.type === "string" && field.format
            ? `text, ${field.format}`
            : field.type === "string"
              ? "text"
              : field.type;
    const notes = [kind, required.has(name) ? "required" : "optional", ...(field.default !== undefined ? [`default ${JSON.stringify(field.default)}`] : [])];
    const about = field.title ?? field.description;
    return `${name} (${notes.join(", ")})${about ? `: ${about}` : ""}`;
  });
}
