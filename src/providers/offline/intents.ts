/**
 * How the offline model reads a task: split it into clauses and recognise, by rules, the ones it
 * can really carry out with tools (arithmetic, workspace files, JSON). Everything else is an
 * open-ended clause that needs a language model. There are no answers for particular tasks here,
 * only grammar.
 */

import { BracketSpans } from "../../core/json-scan.js";
import { combination, computations, continuation, figureContinuation, toExpression } from "./arithmetic.js";
import { fileOperations } from "./file-operations.js";
import type { ClauseContext, CountUnit, Intent } from "./intent-types.js";
import { jsonQuestion } from "./json-questions.js";

export type { ClauseContext, Condition, CountUnit, Intent, JsonQuestion, JsonSource } from "./intent-types.js";

const ACTION_VERBS = [
  "copy",
  "duplicate",
  "move",
  "rename",
  "delete",
  "remove",
  "compute",
  "calculate",
  "evaluate",
  "work out",
  "add",
  "multiply",
  "divide",
  "double",
  "halve",
  "triple",
  "subtract",
  "save",
  "write",
  "store",
  "put",
  "record",
  "read",
  "open",
  "show",
  "display",
  "print",
  "list",
  "validate",
  "check",
  "verify",
  "format",
  "pretty-print",
  "summarize",
  "summarise",
  "explain",
  "create",
  "find",
  "search",
  "run",
  "count",
  "remember",
  "what is",
  "what's",
  "what are",
  "how much is",
  "how many",
];

const PRONOUN = /\b(it|this|that|these|those|them|the (?:result|answer|value|output|number|sum|total|product|difference|quotient|json|text|content|contents))\b/i;
const FILE_PATH = /(?:^|[\s"'`(])((?:[\w.-]+\/)*[\w-][\w.-]*\.[A-Za-z0-9]{1,10})(?=$|[\s"'`),;:!?])/;
const QUOTED = /"([^"]*)"|'([^']*)'|`([^`]*)`|“([^”]*)”/;

/** Marks a protected span; a private-use character that task text does not contain. */
const PLACEHOLDER = "\uE000";
const PLACEHOLDER_PATTERN = /\uE000(\d+)\uE000/g;

/** Replaces quoted strings and bracketed JSON with placeholders so splitting cannot cut them. */
function protect(text: string): { text: string; restore: (clause: string) => string } {
  const saved: string[] = [];
  const keep = (value: string): string => {
    saved.push(value);
    return `${PLACEHOLDER}${saved.length - 1}${PLACEHOLDER}`;
  };
  const spans = new BracketSpans(text);
  // A closing quote the text has no more of is not looked for again (each look reads to the end).
  const exhausted = new Set<string>();
  let output = "";
  let index = 0;
  while (index < text.length) {
    const char = text[index] ?? "";
    const closer = char === '"' ? '"' : char === "“" ? "”" : char === "`" ? "`" : char === "'" && (index === 0 || /\s/.test(text[index - 1] ?? "")) ? "'" : undefined;
    if (closer && !exhausted.has(closer)) {
      const end = text.indexOf(closer, index + 1);
      if (end < 0) exhausted.add(closer);
      if (end > index) {
        output += keep(text.slice(index, end + 1));
        index = end + 1;
        continue;
      }
    }
    if (char === "{" || char === "[") {
      const span = spans.spanAt(index);
      const end = span.kind === "closed" ? span.end : -1;
      if (end > index) {
        output += keep(text.slice(index, end + 1));
        index = end + 1;
        continue;
      }
    }
    output += char;
    index += 1;
  }
  const restore = (clause: string): string =>
    clause.replace(PLACEHOLDER_PATTERN, (_, position: string) => saved[Number(position)] ?? "");
  return { text: output, restore };
}

/** Splits a task into clauses at sentence ends, "then", and "and" before an action verb. */
export function splitClauses(task: string): string[] {
  const { text, restore } = protect(task);
  const verbs = ACTION_VERBS.map((verb) => verb.replace(/[-\s]/g, (match) => (match === " " ? "\\s+" : "-"))).join("|");
  const boundary = new RegExp(
    `(?:[.;!?](?=\\s|$))|\\n+|,?\\s+(?:and\\s+)?then\\s+|,\\s*(?:and\\s+)?(?=(?:${verbs})\\b)|\\s+and\\s+(?=(?:also\\s+)?(?:${verbs})\\b)`,
    "i",
  );
  return text
    .split(boundary)
    .map((clause) => restore(clause ?? "").trim())
    .map((clause) => clause.replace(/^(?:please|also|and|then|finally|first|next)[,\s]+/i, "").trim())
    .filter((clause) => clause.length > 0 && /[A-Za-z0-9]/.test(clause));
}

function unquote(value: string): string {
  const match = QUOTED.exec(value);
  if (match && match.index === 0 && match[0].length === value.length) return match[1] ?? match[2] ?? match[3] ?? match[4] ?? "";
  return value;
}

function filePathIn(clause: string): string | undefined {
  const stripped = clause.replace(/https?:\/\/\S+/g, " ");
  return FILE_PATH.exec(stripped)?.[1];
}

function writeContent(clause: string): string | undefined {
  const quoted = QUOTED.exec(clause);
  if (quoted) return quoted[1] ?? quoted[2] ?? quoted[3] ?? quoted[4];
  const after = /\b(?:containing|with (?:the )?(?:text|content|contents|line)|saying|that says)\s+(.+?)(?:\s+(?:to|into|in|as)\s+\S+\.\w+)?$/i.exec(clause);
  if (after?.[1]) return unquote(after[1].trim());
  return undefined;
}

function countUnit(lower: string): CountUnit | undefined {
  const match = /\b(?:count|how many|number of)\b.*?\b(lines?|words?|characters?|chars?)\b/.exec(lower);
  if (!match?.[1]) return undefined;
  if (match[1].startsWith("line")) return "lines";
  if (match[1].startsWith("word")) return "words";
  return "characters";
}

/** "run `code`" or "run script.py": code to run in the sandbox. */
function runIntent(clause: string, lower: string, path: string | undefined): Intent | undefined {
  if (!/^\s*(?:run|execute)\b/.test(lower)) return undefined;
  const code = /`([^`]+)`/.exec(clause)?.[1];
  const script = path && /\.(?:py|js|mjs)$/i.test(path) ? path : undefined;
  if (code === undefined && script === undefined) return undefined;
  const language = /\bpython\b/.test(lower) || script?.endsWith(".py") ? "python" : /\bnode(?:\.?js)?\b/.test(lower) || (script && code === undefined) ? "node" : "javascript";
  return code !== undefined ? { kind: "run", clause, language, code, usesPrevious: false } : { kind: "run", clause, language, path: script, usesPrevious: false };
}

/** "search the knowledge folder for X", "look up X", "find notes about X": an offline search. */
function searchIntent(clause: string, lower: string): Intent | undefined {
  if (!/^\s*(?:search|look\s+up|lookup|find)\b/.test(lower)) return undefined;
  if (!/^\s*(?:search|look\s+up|lookup)\b/.test(lower) && !/\b(?:notes?|docs?|documentation|knowledge|sources?|references?|articles?|material)\b/.test(lower)) return undefined;
  let query = clause.replace(/^\s*(?:search|look\s+up|lookup|find)\b\s*/i, "");
  const about = /\b(?:for|about|on|regarding|mentioning)\s+(.+)$/i.exec(query);
  if (about?.[1]) query = about[1];
  query = query
    .replace(/\b(?:in|from|through)\s+(?:the\s+)?(?:knowledge(?:\s+(?:folder|base))?|notes|docs|documentation|workspace)\b/gi, " ")
    .replace(/^(?:the\s+)?(?:knowledge(?:\s+(?:folder|base))?|notes|docs|documentation|workspace|web)\s*/i, "")
    .replace(/[?.!]+$/, "")
    .trim();
  return query ? { kind: "search", clause, query: unquote(query), usesPrevious: false } : undefined;
}

/** Words for several earlier results at once: "save both to f.txt", "write them all to f.txt". */
const SEVERAL = /\b(?:both|all of them|them all|all (?:the |three |four )?(?:results|values|numbers|answers)|the (?:two|three|four)(?: results| numbers| values)?|these|those|them|each of them|the results)\b/i;

/** "read a.txt and b.txt", "count the words in a.txt and b.txt": the same work on each file it names. */
function perFile(clause: string): Intent[] | undefined {
  const list = /^(.*?\b(?:in|of|from)\s+|\s*(?:read|open|show|display|print|cat|load|view)\s+(?:the\s+)?(?:files?\s+)?)((?:["'`]?[\w./-]+\.[A-Za-z0-9]{1,10}["'`]?(?:\s*,\s*|\s*,?\s+and\s+(?:in\s+)?)){1,20}["'`]?[\w./-]+\.[A-Za-z0-9]{1,10}["'`]?)\s*[.!?]?$/i.exec(clause);
  if (!list?.[1] || !list[2]) return undefined;
  const prefix = list[1];
  const paths = list[2].split(/\s*,\s*(?:and\s+)?(?:in\s+)?|\s+and\s+(?:in\s+)?/i).map((path) => path.replace(/^["'`]|["'`]$/g, ""));
  const intents = paths.map((path) => parseClause(`${prefix}${path}`));
  return intents.every((intent) => intent.kind === "read" || intent.kind === "count") ? intents : undefined;
}

/** "count the lines in a.txt and the words in b.txt": one count per unit named. */
function perUnit(clause: string): Intent[] | undefined {
  const verb = /^\s*(count|how many)\s+/i.exec(clause);
  if (!verb?.[1]) return undefined;
  const parts = clause.slice(verb[0].length).split(/\s*,?\s+and\s+(?=(?:the\s+)?(?:number\s+of\s+)?(?:lines|words|characters|chars)\b)/i);
  if (parts.length < 2) return undefined;
  const intents = parts.map((part) => parseClause(`${verb[1]} ${part}`));
  return intents.every((intent) => intent.kind === "count") ? intents : undefined;
}

/** Only a pronoun or "the result": a clause about an earlier value, not a fact or a subject of its own. */
const ONLY_PRONOUN = /^(?:it|this|that|these|those|them|the (?:result|answer|value|output|number|sum|total|product|difference|quotient))$/i;

/** "remember that X is Y" (a fact to keep) and "forget what you know about X" (one to drop). */
function memoryIntent(clause: string): Intent | undefined {
  const remember = /^\s*(?:remember|memori[sz]e|note down|keep in mind|don't forget)\s*[:,]?\s+(?:that\s+)?([\s\S]+?)\s*[.!]*\s*$/i.exec(clause);
  if (remember?.[1] && !ONLY_PRONOUN.test(remember[1].trim())) {
    const fact = unquote(remember[1].trim());
    const subject = /^(.{1,200}?)\s+(?:is|are|was|were|equals|means|=)\s+\S/i.exec(fact)?.[1]?.trim();
    return subject ? { kind: "remember", clause, fact, subject, usesPrevious: false } : { kind: "remember", clause, fact, usesPrevious: false };
  }
  const forget = /^\s*forget\s+(?:(?:what|everything)\s+(?:you|we)\s+(?:know|remember)\s+about|everything\s+about|about|the\s+fact\s+that|that)?\s*([\s\S]+?)\s*[.!]*\s*$/i.exec(clause);
  if (forget?.[1] && !ONLY_PRONOUN.test(forget[1].trim())) return { kind: "forget", clause, query: forget[1].trim(), usesPrevious: false };
  return undefined;
}

/** "what was the result?", "what is it?", "show the total": the latest value asked for again. */
function previousIntent(clause: string): Intent | undefined {
  const match = /^\s*(?:what(?:'s|\s+is|\s+was)|show(?:\s+me)?|print|tell\s+me|give\s+me)\s+(it|that|the\s+(?:result|answer|value|output|number|sum|total|product|difference|quotient))(?:\s+again)?\s*[?.!]*\s*$/i.exec(clause);
  return match ? { kind: "previous", clause, usesPrevious: true } : undefined;
}

/** A question long-term memory may answer: "what is X?", "who is X?", "what do you know about X?", "tell me about X". */
function recallIntent(clause: string): Intent | undefined {
  const match =
    /^\s*(?:what\s+(?:do|did)\s+(?:you|we)\s+(?:know|remember)\s+about|do\s+you\s+remember|what\s+did\s+i\s+(?:say|tell\s+you)\s+about|recall|tell\s+me\s+about|what(?:'s|\s+is|\s+are|\s+was|\s+were)|who(?:'s|\s+is|\s+are|\s+was)|where(?:'s|\s+is|\s+are|\s+was)|when(?:'s|\s+is|\s+was))\s+([\s\S]+?)\s*[?.!]*\s*$/i.exec(clause);
  const query = match?.[1]?.trim();
  if (!query || ONLY_PRONOUN.test(query) || !/[\p{L}]/u.test(query)) return undefined;
  return { kind: "recall", clause, query, usesPrevious: false };
}

/** Recognises one clause. */
export function parseClause(clause: string, context: ClauseContext = {}): Intent {
  const lower = clause.toLowerCase();
  const usesPrevious = PRONOUN.test(clause) || /\bboth\b/i.test(clause);
  const path = filePathIn(clause) ?? context.path;

  // Code to run comes first: "run `…`" is code even when the code counts lines or words.
  const run = runIntent(clause, lower, path);
  if (run) return run;

  // A fact to remember or forget, whatever words it holds ("remember that backups are saved to b.txt").
  const memory = memoryIntent(clause);
  if (memory) return memory;
  const previous = previousIntent(clause);
  if (previous) return previous;

  const [operation] = fileOperations(clause) ?? [];
  if (operation) return operation;

  const unit = countUnit(lower);
  if (unit && !/\b(?:save|write|store)\b/.test(lower)) {
    return path ? { kind: "count", clause, unit, path, usesPrevious: false } : { kind: "count", clause, unit, usesPrevious: false };
  }

  if (/\b(?:list|show|what)\b.*\b(?:files|folders|directories|contents of (?:the )?(?:folder|directory|workspace))\b/.test(lower) && !/\b(?:save|write|store)\b/.test(lower)) {
    const folder = /\b(?:in|of|under|inside)\s+(?:the\s+)?(?:folder\s+|directory\s+)?["'`]?([\w./-]+?)\/?["'`]?(?:\s|$)/i.exec(clause)?.[1];
    const target = folder && !/^(?:workspace|the|this)$/i.test(folder) ? folder : ".";
    return { kind: "list", clause, path: target, recursive: /\b(?:recursive(?:ly)?|all files|sub-?folders|subdirectories)\b/.test(lower), usesPrevious: false };
  }

  if (/\bjson\b/.test(lower) && /\b(?:validate|valid|check|verify|format|pretty|parse)\b/.test(lower) && !/\b(?:save|write|store)\b.*\bto\b/.test(lower)) {
    const inline = /[{[][\s\S]*[}\]]/.exec(clause)?.[0];
    if (inline) return { kind: "json", clause, source: { text: inline }, usesPrevious: false };
    if (path) return { kind: "json", clause, source: { path }, usesPrevious: false };
    return { kind: "json", clause, source: { previous: true }, usesPrevious: true };
  }

  const codeLike =
    /\b(?:code|script|program|function|implement|class|module|crawler|scraper|cli|api|regex|query)\b/.test(lower) &&
    /\b(?:write|create|build|implement|generate|make|develop|code)\b/.test(lower);
  const writeVerb = /\b(?:save|write|store|put|record|output|dump|append)\b/.test(lower);
  const writeTarget = /\b(?:to|into|in|as)\s+(?:a\s+|the\s+)?(?:new\s+)?(?:file\s+)?(?:called\s+|named\s+)?["'`]?((?:[\w.-]+\/)*[\w-][\w.-]*\.[A-Za-z0-9]{1,10})/i.exec(clause);
  if (writeVerb && writeTarget?.[1]) {
    const rest = clause.replace(writeTarget[0], " ");
    const content = writeContent(rest);
    // A file to write with nothing to put in it is a description of work (code to write), not a write.
    if (content !== undefined || (usesPrevious && !codeLike)) {
      const several = content === undefined && SEVERAL.test(rest);
      return { kind: "write", clause, path: writeTarget[1], content, usesPrevious: content === undefined && usesPrevious, ...(several ? { several } : {}) };
    }
  }

  // A question about the records of a JSON file: "the names of the users whose city is Paris in users.json".
  if (path?.toLowerCase().endsWith(".json") && !writeVerb) {
    const question = jsonQuestion(clause, path);
    if (question) return { kind: "query", clause, path, question, usesPrevious: false };
  }

  if (path && /\b(?:read|open|show|display|print|cat|load|view|contents? of|what(?:'s| is) in)\b/.test(lower) && !writeVerb) {
    return { kind: "read", clause, path, usesPrevious: false };
  }

  const expression = toExpression(clause);
  if (expression) return { kind: "compute", clause, expression, usesPrevious: false };

  // Arithmetic on earlier results: "then ×2", "double it" (the latest), "add them", "the difference" (several).
  const chained = continuation(clause) ?? combination(clause);
  if (chained) return { kind: "compute", clause, expression: chained.expression, usesPrevious: true, chained };

  const search = searchIntent(clause, lower);
  if (search) return search;

  // A question nothing above answers may be about something remembered (there is no file in it to read).
  if (!path) {
    const recall = recallIntent(clause);
    if (recall) return recall;
  }

  return { kind: "open", clause, agent: codeLike ? "code" : "research", usesPrevious };
}

/** A clause that only points back ("check it", "verify that") adds nothing to the clause before it. */
function isBareFollowUp(intent: Intent): boolean {
  return intent.kind === "open" && intent.usesPrevious && intent.clause.split(/\s+/).length <= 3;
}

const FOLDER = String.raw`(?:the\s+)?(?:folder\s+|directory\s+)?["'\x60]?([\w.-]+(?:/[\w.-]+)*)/?["'\x60]?`;
const FILES = String.raw`(?:files?|scripts?|programs?)`;
/** "for each of the files in data/, <action>" — the action applies to every file of the folder. */
const FOR_EACH_PREFIX = new RegExp(String.raw`^\s*for\s+(?:each|every)(?:\s+one)?(?:\s+of)?(?:\s+the)?\s+${FILES}\s+(?:in|under|inside|of)\s+${FOLDER}\s*[,:]\s*([\s\S]+)$`, "i");
/** "<action> of each file in data/" / "<action> in all the files in data". */
const EACH_FILE_SUFFIX = new RegExp(String.raw`\b(?:of|in|for|on)\s+(?:each|every|all)(?:\s+of)?(?:\s+the)?\s+${FILES}\s+(?:in|under|inside|of)\s+${FOLDER}`, "i");
/** "run every script in scripts/", "validate all the files in configs": a verb whose object is every file. */
const VERB_EACH_FILE = new RegExp(String.raw`^\s*(run|execute|read|validate|check)\s+(?:each|every|all)(?:\s+of)?(?:\s+the)?\s+${FILES}\s+(?:in|under|inside|of)\s+${FOLDER}\s*[.!]?\s*$`, "i");

function mapIntent(action: string, folder: string, clause: string): Intent {
  return { kind: "map", clause, folder: folder.replace(/\/+$/, "") || ".", action: action.trim(), usesPrevious: false };
}

/** A clause that asks for the same work on every file of a folder, or undefined. */
function eachFileClause(clause: string): Intent | undefined {
  const verb = VERB_EACH_FILE.exec(clause);
  if (verb?.[1] && verb[2]) return mapIntent(`${verb[1].toLowerCase()} it`, verb[2], clause);
  const match = EACH_FILE_SUFFIX.exec(clause);
  if (!match?.[1]) return undefined;
  return mapIntent(clause.replace(match[0], "").replace(/\s+/g, " ").trim(), match[1], clause);
}

/**
 * Arithmetic on the previous result with a figure the task must find first ("multiply it by the
 * number of lines in log.txt"): the figure's own intent (a count, a question over a JSON file's
 * records), then the computation over the last two numbers — the previous result and the figure.
 * Undefined when the amount is not a figure these rules can find.
 */
export function figureChain(clause: string): Intent[] | undefined {
  const found = figureContinuation(clause);
  if (!found) return undefined;
  // The figure's words are its subtask's label, which its worker reads again by the same rules.
  const figure = parseClause(found.figure);
  const numeric = figure.kind === "count" || (figure.kind === "query" && (figure.question.count || figure.question.aggregate !== undefined));
  if (!numeric) return undefined;
  const chained = { expression: found.template, operands: { kind: "pair" as const } };
  return [figure, { kind: "compute", clause, expression: found.template, usesPrevious: true, chained }];
}

/**
 * One clause as the intents it stands for: the same work on every file of a folder (a map),
 * several files moved or deleted, several computations ("2^10 and 3^5"), arithmetic with a
 * figure found first, several files read or counted — else the one intent of the clause.
 */
function clauseIntents(clause: string): Intent[] {
  const each = eachFileClause(clause);
  if (each) return [each];
  const operations = fileOperations(clause);
  if (operations) return operations;
  const chain = figureChain(clause);
  if (chain) return chain;
  const several = computations(clause);
  if (several) return several.map(({ part, expression }) => ({ kind: "compute", clause: `Compute ${part}`, expression, usesPrevious: false }));
  return perUnit(clause) ?? perFile(clause) ?? [parseClause(clause)];
}

/** The clauses of a task and what each one asks for. */
export function parseTask(task: string): Intent[] {
  const prefix = FOR_EACH_PREFIX.exec(task);
  if (prefix?.[1] && prefix[2]) {
    const [action = "", ...rest] = splitClauses(prefix[2]);
    return [mapIntent(action, prefix[1], `for each file in ${prefix[1]}: ${action}`), ...parseTaskClauses(rest)];
  }
  return parseTaskClauses(splitClauses(task));
}

function parseTaskClauses(clauses: string[]): Intent[] {
  const intents = clauses.flatMap(clauseIntents);
  return intents.filter((intent, index) => index === 0 || !isBareFollowUp(intent));
}
