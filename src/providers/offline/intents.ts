/**
 * How the offline model reads a task: split it into clauses and recognise, by rules, the ones it
 * can really carry out with tools (arithmetic, workspace files, JSON). Everything else is an
 * open-ended clause that needs a language model. There are no answers for particular tasks here,
 * only grammar.
 */

export type JsonSource = { text: string } | { path: string } | { previous: true };

export type Intent =
  | { kind: "compute"; clause: string; expression: string; usesPrevious: boolean }
  | { kind: "write"; clause: string; path: string; content?: string; usesPrevious: boolean }
  | { kind: "read"; clause: string; path: string; usesPrevious: false }
  | { kind: "list"; clause: string; path: string; recursive: boolean; usesPrevious: false }
  | { kind: "json"; clause: string; source: JsonSource; usesPrevious: boolean }
  | { kind: "count"; clause: string; unit: CountUnit; path?: string; usesPrevious: false }
  | { kind: "map"; clause: string; folder: string; action: string; usesPrevious: false }
  | { kind: "search"; clause: string; query: string; usesPrevious: false }
  | { kind: "run"; clause: string; language: "javascript" | "python" | "node"; code?: string; path?: string; usesPrevious: false }
  | { kind: "copy"; clause: string; from: string; to: string; usesPrevious: false }
  | { kind: "move"; clause: string; from: string; to: string; usesPrevious: false }
  | { kind: "delete"; clause: string; path: string; usesPrevious: false }
  | { kind: "open"; clause: string; agent: "research" | "code"; usesPrevious: boolean };

export type CountUnit = "lines" | "words" | "characters";

/** What a worker's clause is about when it names no file itself: the file it was given as an argument. */
export interface ClauseContext {
  path?: string;
}

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
  let output = "";
  let index = 0;
  while (index < text.length) {
    const char = text[index] ?? "";
    const closer = char === '"' ? '"' : char === "“" ? "”" : char === "`" ? "`" : char === "'" && /(^|\s)$/.test(text.slice(0, index)) ? "'" : undefined;
    if (closer) {
      const end = text.indexOf(closer, index + 1);
      if (end > index) {
        output += keep(text.slice(index, end + 1));
        index = end + 1;
        continue;
      }
    }
    if (char === "{" || char === "[") {
      const end = matchingBracket(text, index);
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

function matchingBracket(text: string, start: number): number {
  const stack: string[] = [];
  let inString = false;
  for (let index = start; index < text.length; index += 1) {
    const char = text[index];
    if (inString) {
      if (char === "\\") index += 1;
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"') inString = true;
    else if (char === "{" || char === "[") stack.push(char === "{" ? "}" : "]");
    else if (char === "}" || char === "]") {
      if (stack.pop() !== char) return -1;
      if (stack.length === 0) return index;
    }
  }
  return -1;
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

const PATH_WORD = String.raw`["'\x60]?((?:[\w.-]+\/)*[\w-][\w.-]*(?:\.[A-Za-z0-9]{1,10}|\/))["'\x60]?`;
const TRANSFER = new RegExp(String.raw`^\s*(copy|duplicate|move|rename)\s+(?:the\s+)?(?:file\s+)?${PATH_WORD}\s+(?:to|into|as)\s+(?:a\s+|the\s+)?(?:new\s+)?(?:file\s+)?(?:called\s+|named\s+)?${PATH_WORD}\s*$`, "i");
const REMOVAL = new RegExp(String.raw`^\s*(?:delete|remove|erase)\s+(?:the\s+)?(?:file\s+)?${PATH_WORD}\s*$`, "i");

/** "copy a.txt to b.txt", "move a.txt into archive/", "rename a to b", "delete old.txt". */
function fileOperationIntent(clause: string): Intent | undefined {
  const transfer = TRANSFER.exec(clause);
  if (transfer?.[1] && transfer[2] && transfer[3]) {
    const from = transfer[2].replace(/\/$/, "");
    // Into a folder: the file keeps its name there.
    const to = transfer[3].endsWith("/") ? `${transfer[3]}${from.split("/").at(-1)}` : transfer[3];
    const kind = /^(?:copy|duplicate)$/i.test(transfer[1]) ? "copy" : "move";
    return { kind, clause, from, to, usesPrevious: false };
  }
  const removal = REMOVAL.exec(clause);
  if (removal?.[1]) return { kind: "delete", clause, path: removal[1].replace(/\/$/, ""), usesPrevious: false };
  return undefined;
}

/** Turns words into operators and keeps the clause only if what is left is arithmetic. */
export function toExpression(clause: string): string | undefined {
  let text = ` ${clause.toLowerCase()} `;
  text = text.replace(/\b(?:please|can you|could you|tell me|for me|exactly|approximately|roughly)\b/g, " ");
  text = text.replace(/^\s*(?:compute|calculate|evaluate|work out|find|determine|get|what(?:'s| is| are)|how much is|solve)\b/, " ");
  text = text.replace(/\b(?:the value of|the result of|the answer to)\b/g, " ");
  text = text.replace(/\bthe sum of ([\d.,]+) and ([\d.,]+)/g, "$1 + $2");
  text = text.replace(/\bthe product of ([\d.,]+) and ([\d.,]+)/g, "$1 * $2");
  text = text.replace(/\bthe difference between ([\d.,]+) and ([\d.,]+)/g, "$1 - $2");
  text = text.replace(/\b(?:the )?square root of\s+([\d.,]+|\([^)]*\))/g, "sqrt($1)");
  text = text.replace(/\b(?:the )?cube root of\s+([\d.,]+|\([^)]*\))/g, "cbrt($1)");
  text = text
    .replace(/\bper ?cent\b/g, "%")
    .replace(/\bplus\b/g, "+")
    .replace(/\bminus\b/g, "-")
    .replace(/\b(?:multiplied by|times)\b/g, "*")
    .replace(/\b(?:divided by|over)\b/g, "/")
    .replace(/\b(?:to the power of|raised to(?: the power of)?)\b/g, "^")
    .replace(/\bsquared\b/g, "^2")
    .replace(/\bcubed\b/g, "^3")
    .replace(/\bmodulo\b/g, "mod");
  text = text.replace(/\bthe\b/g, " ").replace(/[?=]+\s*$/g, " ").replace(/\s+/g, " ").trim();
  if (!/\d/.test(text)) return undefined;
  const words = text.match(/[a-zπ_]+/g) ?? [];
  const allowed = new Set([
    "of", "mod", "sqrt", "cbrt", "abs", "round", "floor", "ceil", "trunc", "min", "max", "sum", "avg", "pow", "exp",
    "ln", "log", "log10", "log2", "sin", "cos", "tan", "asin", "acos", "atan", "pi", "π", "e", "tau",
  ]);
  if (words.some((word) => !allowed.has(word))) return undefined;
  if (!/^[\d\s.,+\-*/^%()!a-zπ_×÷−]+$/.test(text)) return undefined;
  if (/^[\d.,\s]+$/.test(text)) return undefined;
  return text;
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

/** Recognises one clause. */
export function parseClause(clause: string, context: ClauseContext = {}): Intent {
  const lower = clause.toLowerCase();
  const usesPrevious = PRONOUN.test(clause);
  const path = filePathIn(clause) ?? context.path;

  // Code to run comes first: "run `…`" is code even when the code counts lines or words.
  const run = runIntent(clause, lower, path);
  if (run) return run;

  const operation = fileOperationIntent(clause);
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
    const content = writeContent(clause.replace(writeTarget[0], " "));
    // A file to write with nothing to put in it is a description of work (code to write), not a write.
    if (content !== undefined || (usesPrevious && !codeLike)) {
      return { kind: "write", clause, path: writeTarget[1], content, usesPrevious: content === undefined && usesPrevious };
    }
  }

  if (path && /\b(?:read|open|show|display|print|cat|load|view|contents? of|what(?:'s| is) in)\b/.test(lower) && !writeVerb) {
    return { kind: "read", clause, path, usesPrevious: false };
  }

  const expression = toExpression(clause);
  if (expression) return { kind: "compute", clause, expression, usesPrevious: false };

  const search = searchIntent(clause, lower);
  if (search) return search;

  return { kind: "open", clause, agent: codeLike ? "code" : "research", usesPrevious };
}

/** A clause that only points back ("check it", "verify that") adds nothing to the clause before it. */
function isBareFollowUp(intent: Intent): boolean {
  return intent.kind === "open" && intent.usesPrevious && intent.clause.split(/\s+/).length <= 3;
}

const FOLDER = String.raw`(?:the\s+)?(?:folder\s+|directory\s+)?["'\x60]?([\w.-]+(?:/[\w.-]+)*)/?["'\x60]?`;
/** "for each of the files in data/, <action>" — the action applies to every file of the folder. */
const FOR_EACH_PREFIX = new RegExp(String.raw`^\s*for\s+(?:each|every)(?:\s+one)?(?:\s+of)?(?:\s+the)?\s+files?\s+(?:in|under|inside|of)\s+${FOLDER}\s*[,:]\s*([\s\S]+)$`, "i");
/** "<action> of each file in data/" / "<action> in all the files in data". */
const EACH_FILE_SUFFIX = new RegExp(String.raw`\b(?:of|in|for|on)\s+(?:each|every|all)(?:\s+of)?(?:\s+the)?\s+files?\s+(?:in|under|inside|of)\s+${FOLDER}`, "i");

function mapIntent(action: string, folder: string, clause: string): Intent {
  return { kind: "map", clause, folder: folder.replace(/\/+$/, "") || ".", action: action.trim(), usesPrevious: false };
}

/** A clause that asks for the same work on every file of a folder, or undefined. */
function eachFileClause(clause: string): Intent | undefined {
  const match = EACH_FILE_SUFFIX.exec(clause);
  if (!match?.[1]) return undefined;
  return mapIntent(clause.replace(match[0], "").replace(/\s+/g, " ").trim(), match[1], clause);
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
  const intents = clauses.map((clause) => eachFileClause(clause) ?? parseClause(clause));
  return intents.filter((intent, index) => index === 0 || !isBareFollowUp(intent));
}
