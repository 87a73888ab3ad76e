import { ArgReferenceError } from "./json-path.js";

/**
 * A reference's `format`: the value it selects as text, one line per item of a list (a single
 * value is one line), each line the template with `{}` replaced by the item and `{field}` by
 * that field of it — how a plan hands a list of results to a tool that takes text (a file's
 * content: `"{item}: {price}"` over a map's outputs) without a model retyping it. Bounded:
 * the template's length and placeholders here and in the plan's schema, the text it makes by
 * `FORMAT_MAX_BYTES`.
 */

export const FORMAT_MAX_CHARS = 200;
const MAX_PLACEHOLDERS = 20;
export const FORMAT_MAX_BYTES = 1_000_000;
const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]{0,63})?\}/g;

/** Why a template cannot be used, or undefined. */
export function formatProblem(template: string): string | undefined {
  if (template.length > FORMAT_MAX_CHARS) return `its format is longer than ${FORMAT_MAX_CHARS} characters`;
  const placeholders = template.match(PLACEHOLDER) ?? [];
  if (placeholders.length === 0) return 'its format has no placeholder: {} is the item, {field} a field of it (e.g. "{item}: {price}")';
  if (placeholders.length > MAX_PLACEHOLDERS) return `its format has ${placeholders.length} placeholders; at most ${MAX_PLACEHOLDERS} are allowed`;
  const rest = template.replace(PLACEHOLDER, "");
  if (/[{}]/.test(rest)) return "its format has a { or } that is not a placeholder ({} or {field})";
  return undefined;
}

function text(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean" || value === null) return String(value);
  return JSON.stringify(value) ?? "";
}

/** The value a reference selected, as the lines its format makes. */
export function formatReferenced(value: unknown, template: string, from: string): string {
  const problem = formatProblem(template);
  if (problem !== undefined) throw new ArgReferenceError(`the reference to ${from}: ${problem}`);
  const items = Array.isArray(value) ? value : [value];
  const lines: string[] = [];
  let bytes = 0;
  const tooLarge = () => new ArgReferenceError(`the reference to ${from}: its formatted text is larger than ${FORMAT_MAX_BYTES} bytes`);
  for (const [index, item] of items.entries()) {
    // Counted piece by piece, so a large item repeated by the template's placeholders is refused before the line is built.
    let characters = 0;
    const line = template.replace(PLACEHOLDER, (_whole, field: string | undefined) => {
      if (field !== undefined && (typeof item !== "object" || item === null || Array.isArray(item) || !Object.hasOwn(item, field))) {
        throw new ArgReferenceError(`the reference to ${from}: item ${index + 1} has no field "${field}" for its format (it is ${text(item).slice(0, 80)})`);
      }
      const piece = text(field === undefined ? item : (item as Record<string, unknown>)[field]);
      characters += piece.length;
      if (bytes + characters > FORMAT_MAX_BYTES) throw tooLarge();
      return piece;
    });
    bytes += Buffer.byteLength(line, "utf8") + 1;
    if (bytes > FORMAT_MAX_BYTES) throw tooLarge();
    lines.push(line);
  }
  return lines.join("\n");
}
