import { fitToSchema } from "../core/schema-fit.js";

type Schema = Record<string, unknown>;

/** Tool arguments brought to the types the tool takes, with each change in words for the trace. */
export interface FittedArgs {
  args: Record<string, unknown>;
  notes: string[];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function propertiesOf(parameters: Schema): Record<string, Schema> {
  return (isRecord(parameters.properties) ? parameters.properties : {}) as Record<string, Schema>;
}

function wantsText(property: Schema | undefined): boolean {
  if (!property) return false;
  if (property.type === "string") return true;
  return Array.isArray(property.anyOf) && property.anyOf.some((branch) => isRecord(branch) && branch.type === "string");
}

function takesEncoding(parameters: Schema, encoding: string): boolean {
  const property = propertiesOf(parameters).encoding;
  return property !== undefined && (!Array.isArray(property.enum) || property.enum.includes(encoding));
}

/**
 * A read file's value (`{ content, encoding }`, what file_read gives) where the tool wants text:
 * the content itself — and, when it is base64 and the tool takes an `encoding` the call left
 * out, that encoding, so the bytes are written as they were read.
 */
function fileContent(value: unknown): { content: string; encoding: string } | undefined {
  if (!isRecord(value) || typeof value.content !== "string") return undefined;
  const encoding = value.encoding === undefined ? "utf8" : value.encoding;
  return encoding === "utf8" || encoding === "base64" ? { content: value.content, encoding } : undefined;
}

/** The name of the parameter a tool takes named variables in (the calculator's `vars`): an object of any names. */
const VARIABLES = "vars";

function takesVariables(parameters: Schema): boolean {
  const property = propertiesOf(parameters)[VARIABLES];
  return property !== undefined && property.type === "object" && property.additionalProperties !== false && property.properties === undefined;
}

/**
 * A direct step's arguments that the tool does not name, moved into its named variables when it
 * takes them (`{ expression: "a + b", a: 1, b: 2 }` → `{ expression, vars: { a: 1, b: 2 } }`): a
 * plan's arguments are flat, each a value or a reference, so this is how a calculation binds
 * earlier results by name. Variables given in `vars` itself stay; a name in both is the plan's.
 */
function bindLooseArgs(parameters: Schema, args: Record<string, unknown>, notes: string[]): Record<string, unknown> {
  if (!takesVariables(parameters)) return { ...args };
  const properties = propertiesOf(parameters);
  const loose = Object.keys(args).filter((name) => !(name in properties));
  if (loose.length === 0) return { ...args };
  const given = isRecord(args[VARIABLES]) ? (args[VARIABLES] as Record<string, unknown>) : {};
  const bound: Record<string, unknown> = { ...args, [VARIABLES]: { ...given, ...Object.fromEntries(loose.map((name) => [name, args[name]])) } };
  for (const name of loose) delete bound[name];
  notes.push(`${VARIABLES}: ${loose.join(", ")} bound as the expression's variables`);
  return bound;
}

/**
 * Arguments as the tool takes them, where a person would expect it: a file's read value given
 * for text is its content (base64 bytes keep their encoding), a value whose content came from
 * base64 bytes (`encodings`: by argument, from where a reference took it) brings the encoding
 * along, arguments the tool does not name become its named variables where it takes them
 * (`bindLooseArgs`), and every other value is fitted to the tool's JSON schema (`fitToSchema`: a number
 * where text is wanted is its decimal text, "42" where a number is wanted is 42, …). What cannot
 * be brought over is left for the tool's validation to refuse, naming the field.
 */
export function fitToolArgs(parameters: Schema, args: Record<string, unknown>, encodings: Readonly<Record<string, string>> = {}): FittedArgs {
  const properties = propertiesOf(parameters);
  const notes: string[] = [];
  const adjusted: Record<string, unknown> = bindLooseArgs(parameters, args, notes);
  for (const [name, value] of Object.entries(adjusted)) {
    const carried = wantsText(properties[name]) ? fileContent(value) : undefined;
    if (carried) {
      adjusted[name] = carried.content;
      notes.push(`${name}: the content of the file's read value${carried.encoding === "base64" ? " (base64 bytes)" : ""}`);
    }
    const encoding = carried?.encoding ?? encodings[name];
    if (encoding === "base64" && adjusted.encoding === undefined && takesEncoding(parameters, "base64")) {
      adjusted.encoding = "base64";
      notes.push(`encoding: base64, as ${name} was read`);
    }
  }
  const fitted = fitToSchema(adjusted, parameters);
  return { args: fitted.value as Record<string, unknown>, notes: [...notes, ...fitted.changes] };
}
