/**
 * Questions in words about the records of a JSON file — "the names of the users whose city is
 * Paris", "how many users have an age over 30", "list the emails", "the average age of the
 * users" — read into a `JsonQuestion`, and turned into a JSONPath from the words and the shape
 * of the data: the list of objects that has the named fields, the keys as the data spells them.
 * Grammar and the data's own shape only: no answers.
 */
import type { Condition, JsonQuestion } from "./intent-types.js";

/** "names" → "name", "cities" → "city", "addresses" → "address"; a word that is not plural stays. */
export function singular(word: string): string {
  const lower = word.toLowerCase();
  if (/ies$/.test(lower) && lower.length > 4) return `${lower.slice(0, -3)}y`;
  if (/(?:sses|shes|ches|xes|zes)$/.test(lower)) return lower.slice(0, -2);
  if (/[^s]s$/.test(lower) && !/(?:us|is)$/.test(lower)) return lower.slice(0, -1);
  return lower;
}

/** Plurals that do not end in s. */
const IRREGULAR_PLURALS = new Set(["people", "children", "men", "women", "staff", "data", "media", "mice", "geese", "feet", "teeth"]);

function isPlural(word: string): boolean {
  return IRREGULAR_PLURALS.has(word.toLowerCase()) || singular(word) !== word.toLowerCase();
}

/** Words that make a value something other than a value: "between 20 and 30", "like A", "30 or more". */
const NOT_A_VALUE = /\b(?:between|than|like|contain(?:s|ing)?|starts?|ends?|begins?|matching|or|and|not|nor)\b/i;

/** A condition's value, or undefined when the words are not one this grammar can compare: an order needs a number. */
function comparedValue(text: string, operator: Condition["operator"]): Condition["value"] | undefined {
  const value = literal(text);
  const quoted = /^["'`“].*["'`”]$/.test(text.trim());
  if (!quoted && typeof value === "string" && NOT_A_VALUE.test(value)) return undefined;
  if ([">", ">=", "<", "<="].includes(operator) && typeof value !== "number") return undefined;
  return value;
}

const COMPARATORS: Array<[RegExp, Condition["operator"]]> = [
  [/^(?:over|above|greater than|more than|higher than|larger than|bigger than|exceeding|>)$/, ">"],
  [/^(?:at least|no less than|>=|greater than or equal to)$/, ">="],
  [/^(?:under|below|less than|fewer than|lower than|smaller than|<)$/, "<"],
  [/^(?:at most|no more than|<=|less than or equal to)$/, "<="],
  [/^(?:is not|isn't|not|not equal to|other than|!=)$/, "!="],
  [/^(?:is|are|was|equals?|equal to|of|=|==)$/, "=="],
];
const COMPARATOR_WORDS = String.raw`greater than or equal to|less than or equal to|greater than|more than|higher than|larger than|bigger than|less than|fewer than|lower than|smaller than|not equal to|other than|no less than|no more than|at least|at most|exceeding|over|above|under|below|is not|isn't|equal to|equals|equal|is|are|was|of|not|>=|<=|!=|==|=|>|<`;
const COMPARISON = new RegExp(String.raw`^(?:(?:an?|the|their|its)\s+)?(.+?)\s+(?:(?:is|are)\s+)?(${COMPARATOR_WORDS})\s+(.+)$`, "i");

/** A value as the task writes it: quoted text, a number, true/false/null, or a bare word. */
function literal(text: string): Condition["value"] {
  const trimmed = text.trim();
  const quoted = /^["'`“](.*)["'`”]$/.exec(trimmed);
  if (quoted) return quoted[1] ?? "";
  if (/^-?\d[\d,]*(?:\.\d+)?$/.test(trimmed)) return Number(trimmed.replace(/,/g, ""));
  if (/^(?:true|yes)$/i.test(trimmed)) return true;
  if (/^(?:false|no)$/i.test(trimmed)) return false;
  if (/^null$/i.test(trimmed)) return null;
  return trimmed;
}

/** One condition: "city is Paris", "an age over 30", "older than 30", "status 'shipped'", "an email". */
function condition(phrase: string, marker: string): Condition | undefined {
  const text = phrase.trim();
  // "in Paris", "from Lyon", "who live in Nice": a value, in whichever field holds it.
  const place = /^(?:(?:live|lives|living|based|located|are|is)\s+)*(?:in|from)\s+(.+)$/i.exec(text);
  if (place?.[1]) {
    const value = comparedValue(place[1], "==");
    return value === undefined ? undefined : { field: "", operator: "==", value };
  }
  const age = /^(older|younger)\s+than\s+(\d+(?:\.\d+)?)$/i.exec(text);
  if (age?.[1] && age[2]) return { field: "age", operator: age[1].toLowerCase() === "older" ? ">" : "<", value: Number(age[2]) };
  const comparison = COMPARISON.exec(text);
  if (comparison?.[1] && comparison[2] && comparison[3]) {
    const operator = COMPARATORS.find(([pattern]) => pattern.test(comparison[2]?.toLowerCase() ?? ""))?.[1];
    const value = operator ? comparedValue(comparison[3], operator) : undefined;
    if (operator && value !== undefined && !/\s(?:and|or)\s/i.test(comparison[1])) return { field: comparison[1].toLowerCase(), operator, value };
    // Words that look like a comparison but compare nothing this grammar knows ("between 20 and 30", "like A").
    if (operator) return undefined;
  }
  const bare = /^(?:(?:an?|the|their|its)\s+)?([A-Za-z_][\w-]*(?:\s+[A-Za-z_][\w-]*)?)$/.exec(text)?.[1];
  if (bare) {
    // "who are active": a flag that is true; "with an email": a field that is there.
    if (/^(?:are|is)$/i.test(marker)) return { field: bare.toLowerCase(), operator: "==", value: true };
    return { field: bare.toLowerCase(), operator: "exists" };
  }
  // "with status shipped", "with first name Ann": the field, then its value.
  const pair = /^(?:(?:an?|the)\s+)?([A-Za-z_][\w\s-]*?)\s+(\S+|["'`“].*["'`”])$/.exec(text);
  const value = pair?.[2] === undefined ? undefined : comparedValue(pair[2], "==");
  if (pair?.[1] && value !== undefined && !NOT_A_VALUE.test(pair[1])) return { field: pair[1].toLowerCase(), operator: "==", value };
  return undefined;
}

const LEADING_VERBS = /^(?:please\s+)?(?:list|show(?:\s+me)?|get|give\s+me|return|print|find|extract|tell\s+me|display|select|output|read|open|cat|load|view|what\s+(?:are|is)|who\s+are)(?:\s+|$)/i;
const CONDITION_MARKER = /\s+(?:(?:that|who|which)\s+)?(whose|where|with|having|have|has|are|is|(?=older\s+than|younger\s+than)|(?=(?:(?:live|lives|living|based|located)\s+)?(?:in|from)\s+["'\x60“]?[A-Z]))\b\s*/;
const AGGREGATES: Array<[RegExp, NonNullable<JsonQuestion["aggregate"]>]> = [
  [/^(?:average|mean)$/i, "avg"],
  [/^(?:total|sum(?:\s+of)?)$/i, "sum"],
  [/^(?:maximum|max|highest|largest|biggest|greatest)$/i, "max"],
  [/^(?:minimum|min|lowest|smallest|least)$/i, "min"],
];

/**
 * The question a clause asks about the records of the JSON file at `path`, or undefined when it
 * asks none (a read, a validation, or words this grammar does not follow).
 */
export function jsonQuestion(clause: string, path: string): JsonQuestion | undefined {
  const escaped = path.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  let text = clause
    .replace(new RegExp(String.raw`\s*\b(?:in|from|of|inside|within)\s+(?:the\s+)?(?:file\s+)?["'\x60]?${escaped}["'\x60]?(?:\s+file)?`, "i"), " ")
    .replace(new RegExp(String.raw`["'\x60]?${escaped}["'\x60]?:?`, "i"), " ")
    .replace(/[?.!]+\s*$/, "")
    .replace(/\s+/g, " ")
    .trim();
  if (/\b(?:valid|validate|format|pretty|parse|schema)\b/i.test(text)) return undefined;
  let count = false;
  const counting = /^(?:how\s+many|count(?:\s+the)?|(?:what\s+is\s+)?the\s+number\s+of|number\s+of)\s+/i.exec(text);
  if (counting) {
    count = true;
    // "how many of the users …" counts the users.
    text = text.slice(counting[0].length).replace(/^of\s+(?:the\s+)?/i, "");
  } else {
    text = text.replace(LEADING_VERBS, "");
  }
  const which = /^which\s+/i.exec(text);
  if (which) text = text.slice(which[0].length);
  text = text.replace(/^(?:all\s+(?:of\s+)?)?(?:the\s+)?/i, "");
  let aggregate: JsonQuestion["aggregate"];
  const figure = /^(average|mean|total|sum\s+of|sum|maximum|max|highest|largest|biggest|greatest|minimum|min|lowest|smallest|least)\s+(?:the\s+)?/i.exec(text);
  if (figure?.[1] && !count) {
    aggregate = AGGREGATES.find(([pattern]) => pattern.test(figure[1] ?? ""))?.[1];
    text = text.slice(figure[0].length);
  }
  const marker = CONDITION_MARKER.exec(text);
  const head = (marker ? text.slice(0, marker.index) : text).trim();
  const rest = marker ? text.slice(marker.index + marker[0].length).trim() : "";
  if (!head || /^(?:contents?|text|data|file|json|lines|words|characters)$/i.test(head)) return undefined;
  const conditions: Condition[] = [];
  // "how many users are there": a marker with nothing after it asks about every record.
  if (marker && !/^(?:there)?$/i.test(rest)) {
    for (const part of rest.split(/\s+and\s+(?:(?:whose|where|with|have|has|are|is)\s+)?/i)) {
      const parsed = condition(part, marker[1] ?? "");
      if (!parsed) return undefined;
      conditions.push(parsed);
    }
  }
  // "the names of the users", "name of the user", or one noun: "emails", "users".
  const of = /^([A-Za-z_][\w-]*(?:\s+[A-Za-z_][\w-]*)?)\s+of\s+(?:the\s+|all\s+(?:the\s+)?|each\s+|every\s+)?([A-Za-z_][\w-]*)$/i.exec(head);
  if (of?.[1] && of[2]) {
    if (count) return undefined;
    const fieldWords = of[1];
    const field = fieldWords.split(/\s+/).map(singular).join(" ");
    const one = !isPlural(fieldWords.split(/\s+/).at(-1) ?? "");
    // "the age of Ann": a name, not a kind of record — the record that holds it.
    if (/^[A-Z]/.test(of[2])) return { count, field, singular: one, conditions: [...conditions, { field: "", operator: "==", value: of[2] }], ...(aggregate ? { aggregate } : {}) };
    // "the email of the user" with nothing to say which user: not a question with one answer.
    if (!isPlural(of[2]) && conditions.length === 0) return undefined;
    return { count, field, singular: one, collection: of[2].toLowerCase(), conditions, ...(aggregate ? { aggregate } : {}) };
  }
  if (!/^[A-Za-z_][\w-]*$/.test(head)) return undefined;
  if (aggregate) return undefined;
  // One noun: the records ("users") or one field of them ("emails"); the data tells which.
  return { count, singular: false, collection: head.toLowerCase(), conditions };
}

/** A list of records in the data: where it is, its name, and the keys its objects have. */
interface RecordList {
  path: string;
  name?: string;
  keys: Map<string, unknown>;
  depth: number;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function member(path: string, key: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

/** Every array of objects in the data (to a few levels), with a sample value of each key. */
function recordLists(data: unknown): RecordList[] {
  const lists: RecordList[] = [];
  const visit = (value: unknown, path: string, name: string | undefined, depth: number): void => {
    if (depth > 6) return;
    if (Array.isArray(value)) {
      const records = value.filter(isRecord);
      if (records.length > 0 && records.length >= value.length / 2) {
        const keys = new Map<string, unknown>();
        for (const record of records) for (const [key, sample] of Object.entries(record)) if (!keys.has(key) || keys.get(key) === null) keys.set(key, sample);
        lists.push({ path, ...(name ? { name } : {}), keys, depth });
      }
      return;
    }
    if (isRecord(value)) for (const [key, child] of Object.entries(value)) visit(child, member(path, key), key, depth + 1);
  };
  visit(data, "$", undefined, 0);
  return lists;
}

/** The spellings a field named in words may have in data: "first name" → first_name, firstName, first-name. */
function spellings(words: string): string[] {
  const parts = words.toLowerCase().split(/\s+/);
  const camel = parts.map((part, index) => (index === 0 ? part : part.charAt(0).toUpperCase() + part.slice(1))).join("");
  const forms = [parts.join(" "), parts.join("_"), parts.join("-"), parts.join(""), camel];
  return [...new Set(forms.flatMap((form) => [form, singular(form), `${form}s`]))];
}

/** A key's plural spellings: sku → skus, status → statuses, city → cities. */
function plurals(key: string): string[] {
  const lower = key.toLowerCase();
  return [`${lower}s`, `${lower}es`, ...(lower.endsWith("y") ? [`${lower.slice(0, -1)}ies`] : [])];
}

/** The data's own key for a field named in words (in the singular or the plural), or undefined. */
export function keyFor(keys: ReadonlyMap<string, unknown>, words: string): string | undefined {
  const wanted = spellings(words);
  return [...keys.keys()].find((key) => wanted.includes(key.toLowerCase()) || wanted.includes(singular(key)) || plurals(key).some((plural) => wanted.includes(plural)));
}

function namesMatch(name: string | undefined, noun: string | undefined): boolean {
  if (!name || !noun) return false;
  return singular(name) === singular(noun) || name.toLowerCase() === noun.toLowerCase();
}

/** A condition's value as the data has it: the data's own spelling of a word, a number as text where the data keeps text. */
function comparable(value: Condition["value"], samples: unknown[]): Condition["value"] {
  if (typeof value === "string") {
    const spelled = samples.find((sample) => typeof sample === "string" && sample.toLowerCase() === value.toLowerCase());
    if (typeof spelled === "string") return spelled;
    if (/^-?\d+(?:\.\d+)?$/.test(value) && samples.some((sample) => typeof sample === "number")) return Number(value);
  }
  if (typeof value === "number" && samples.length > 0 && samples.every((sample) => typeof sample === "string")) return String(value);
  return value;
}

function filterOf(key: string, condition: Condition, samples: unknown[]): string {
  const field = member("@", key);
  if (condition.operator === "exists") return `${field} != null`;
  const value = JSON.stringify(comparable(condition.value ?? null, samples));
  const operator = condition.operator === "==" ? "===" : condition.operator === "!=" ? "!==" : condition.operator;
  return `${field} ${operator} ${value}`;
}

/** The values of one key across the data's lists (for matching a condition's spelling). */
function samplesOf(data: unknown, list: RecordList, key: string): unknown[] {
  const values: unknown[] = [];
  const walk = (value: unknown, segments: string[]): void => {
    if (segments.length === 0) {
      if (Array.isArray(value)) for (const item of value) if (isRecord(item) && key in item) values.push(item[key]);
      return;
    }
    if (isRecord(value)) walk(value[segments[0] ?? ""], segments.slice(1));
  };
  const segments = [...list.path.matchAll(/\.([A-Za-z_$][\w$]*)|\[("(?:[^"\\]|\\.)*")\]/g)].map((match) => match[1] ?? (JSON.parse(match[2] ?? '""') as string));
  walk(data, segments);
  return values.slice(0, 1_000);
}

/**
 * "with city Paris" reads like a field of two words that must be there; when the data has no
 * such field but has the first word, it is that field with the last word as its value.
 */
function reread(entry: Condition, lists: RecordList[], data: unknown): Condition {
  if (entry.field === "") {
    // The field that holds the value, in the first list where one does.
    for (const list of lists) {
      const key = [...list.keys.keys()].find((candidate) => samplesOf(data, list, candidate).some((sample) => typeof sample === "string" && typeof entry.value === "string" && sample.toLowerCase() === entry.value.toLowerCase()));
      if (key !== undefined) return { ...entry, field: key };
    }
    return entry;
  }
  if (entry.operator !== "exists" || !entry.field.includes(" ")) return entry;
  if (lists.some((list) => keyFor(list.keys, entry.field) !== undefined)) return entry;
  const words = entry.field.split(/\s+/);
  const field = words.slice(0, -1).join(" ");
  if (!lists.some((list) => keyFor(list.keys, field) !== undefined)) return entry;
  return { field, operator: "==", value: literal(words.at(-1) ?? "") };
}

/** What the question selects: the JSONPath for the json tool's query, and which field it names. */
export interface QuestionPath {
  path: string;
  /** Where the records were found, for the answer's wording. */
  records: string;
}

/**
 * The JSONPath that answers a question over this data, or the reason there is none (no list of
 * records with the named fields). Without the data (too large to be shown), a path that looks
 * for matching records at any depth.
 */
export function questionPath(asked: JsonQuestion, data: unknown, visible: boolean, keysSeen: readonly string[] = []): QuestionPath | { problem: string } {
  const question = visible ? { ...asked, conditions: asked.conditions.map((entry) => reread(entry, recordLists(data), data)) } : asked;
  const unplaced = question.conditions.find((entry) => entry.field === "");
  if (unplaced) return { problem: `no field of the records holds ${JSON.stringify(unplaced.value)}` };
  const conditionFields = question.conditions.map((entry) => entry.field);
  if (!visible) {
    if (asked.conditions.some((entry) => entry.field === "")) return { problem: "the data is too large to be shown, so which field holds the value cannot be seen" };
    // The keys are those a preview shows, else the words as most data spells them (first_name).
    const seen = new Map(keysSeen.map((key) => [key, null]));
    const spell = (words: string): string => keyFor(seen, words) ?? words.trim().replace(/\s+/g, "_");
    const filters = question.conditions.map((entry) => filterOf(spell(entry.field), entry, []));
    const noun = question.collection;
    if (filters.length === 0 && !question.field && noun && !question.count && !keysSeen.some((key) => key.toLowerCase() === noun) && keyFor(seen, noun)) {
      // One noun the preview shows as a field of the records ("list the emails"): its values, wherever they are.
      return { path: `$..${member("", spell(noun)).replace(/^\./, "")}`, records: "records at any depth" };
    }
    const records = filters.length > 0 ? `$..[?(${filters.join(" && ")})]` : noun ? `${member("$.", noun)}[*]` : "$..[*]";
    return { path: `${records}${question.field ? member("", spell(question.field)) : ""}`, records: "records at any depth" };
  }
  const lists = recordLists(data);
  if (lists.length === 0) return { problem: "the file holds no list of records (objects) to ask about" };
  const fieldWords = question.field;
  const has = (list: RecordList, fields: string[]): boolean => fields.every((named) => keyFor(list.keys, named) !== undefined);
  const byName = lists.filter((list) => namesMatch(list.name, question.collection));
  let chosen: RecordList | undefined;
  let field = fieldWords;
  if (fieldWords !== undefined) {
    chosen = [...byName, ...lists].find((list) => has(list, [fieldWords, ...conditionFields]));
  } else {
    chosen = byName.find((list) => has(list, conditionFields));
    if (!chosen && question.collection && !question.count) {
      // One noun that names no list: a field of the records ("list the emails").
      const noun = question.collection;
      chosen = lists.find((list) => has(list, [noun, ...conditionFields]));
      if (chosen) field = noun;
    }
    chosen ??= byName.length === 0 ? lists.filter((list) => has(list, conditionFields)).sort((left, right) => left.depth - right.depth)[0] : undefined;
  }
  if (!chosen) {
    const wanted = [field ?? question.collection, ...conditionFields].filter(Boolean).join(", ");
    const found = lists.slice(0, 3).map((list) => `${list.path} with ${[...list.keys.keys()].slice(0, 10).join(", ")}`).join("; ");
    return { problem: `no list of records has ${wanted} (found ${found})` };
  }
  const list = chosen;
  const filters = question.conditions.map((entry) => {
    const key = keyFor(list.keys, entry.field) as string;
    return filterOf(key, entry, samplesOf(data, list, key));
  });
  const selector = filters.length > 0 ? `[?(${filters.join(" && ")})]` : "[*]";
  const key = field !== undefined ? keyFor(list.keys, field) : undefined;
  return { path: `${list.path}${selector}${key !== undefined ? member("", key) : ""}`, records: list.path };
}
