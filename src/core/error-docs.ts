import { ERROR_CODES, type ErrorEntry, type ErrorKind, FIELD_ERROR, FIELD_PROBLEMS, KIND_DEFAULTS } from "./error-codes.js";

/** The kinds in the order the page lists them, each with what it means. */
const KINDS: Record<ErrorKind, string> = {
  input: "Bad input from the caller: a flag, a request body, a tool call's arguments.",
  config: "Bad or missing configuration: a setting, an environment variable, a database troupe cannot use.",
  not_found: "Something asked for does not exist, or is not the caller's to see.",
  conflict: "The request does not fit the current state: a run already going, a task already finished.",
  denied: "Refused: no key, no grant, no approval, or over a limit.",
  model: "A model misbehaved or could not be reached.",
  tool: "A tool call failed; the agent that made it sees the code and the message.",
  system: "A fault of troupe itself or of what it runs on: the database, the server's load.",
};

function cell(text: string): string {
  return text.replaceAll("|", "\\|");
}

function row(code: string, entry: ErrorEntry): string {
  return `| \`${code}\` | ${entry.status} | ${entry.exit} | ${cell(entry.remedy)} |`;
}

/** `docs/errors.md`, written from the catalogue (`npm run docs:errors`; a test checks the page is current). */
export function renderErrorsPage(): string {
  const lines = [
    "# Error codes",
    "",
    "<!-- Generated from src/core/error-codes.ts by `npm run docs:errors`; do not edit by hand. -->",
    "",
    "Every error troupe reports carries a stable `code`: in the HTTP envelope `{code, message, data}`, in",
    "the CLI's `--json` output and message, and in a failed tool call the agent and the trace see. Each",
    "code has one kind, one HTTP status and one CLI exit code (0 completed, 1 failed, 2 bad input or",
    "configuration, 3 waiting for a person; a cancelled command exits 130).",
    "",
    "| kind | meaning | HTTP status | exit code |",
    "| --- | --- | --- | --- |",
    ...Object.entries(KINDS).map(([kind, meaning]) => `| ${kind} | ${meaning} | ${KIND_DEFAULTS[kind as ErrorKind].status} | ${KIND_DEFAULTS[kind as ErrorKind].exit} |`),
    "",
    "Each code below has its own row; a few answer with a status of their own (401, 413, 415, 429, 503, 504).",
  ];
  const entries = Object.entries(ERROR_CODES) as [string, ErrorEntry][];
  for (const kind of Object.keys(KINDS) as ErrorKind[]) {
    lines.push("", `## ${kind}`, "", KINDS[kind], "", "| code | HTTP | exit | remedy |", "| --- | --- | --- | --- |");
    const codes = entries.filter(([, entry]) => entry.kind === kind).sort(([a], [b]) => a.localeCompare(b));
    if (kind === "input") codes.push([`<field>_${FIELD_PROBLEMS.join("\\|")}`, FIELD_ERROR]);
    for (const [code, entry] of codes) lines.push(row(code, entry));
  }
  lines.push(
    "",
    "## Request fields",
    "",
    "A request body, query or path that fails its schema answers with a code naming the first field at fault:",
    `\`<field>_<problem>\`, the problem one of ${FIELD_PROBLEMS.map((problem) => `\`${problem}\``).join(", ")}`,
    "(`task_required`, `limit_out_of_range`); `unknown_field` for a field the route does not take. `data.issues`",
    "lists every problem with its path, code and message.",
    "",
  );
  return lines.join("\n");
}
