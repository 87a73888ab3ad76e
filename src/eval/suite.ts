import { z } from "zod";
import { InputError } from "../core/errors.js";
import { patternProblem } from "../core/linear-regex.js";
import { LIMITS } from "../core/limits.js";
import { TaskText } from "../core/run.js";
import { checkRelativePath } from "../tools/workspace.js";

/**
 * The suite format (a public surface, documented in the README): JSON Lines, one case a line.
 * Keys are snake_case as in the issue; every `expect` key is optional, and an unknown key
 * anywhere is an error naming its line and key.
 */

export const CASE_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/** The run statuses a case can expect (an eval never answers a question or approves anything). */
export const EXPECTED_STATUSES = ["completed", "failed", "interrupted"] as const;

/** The judge's pass mark when the case gives none: the critic's. */
export const DEFAULT_JUDGE_MIN_SCORE = LIMITS.passThreshold;

const required = (what: string) => (issue: { input: unknown }) => (issue.input === undefined ? "is required" : `must be ${what}`);

/** A file inside the case's workspace: relative, no `..`, and naming a file (not `.`, the workspace itself). */
const WorkspacePath = z.string().superRefine((value, context) => {
  try {
    if (checkRelativePath(value).length === 0) context.addIssue({ code: "custom", message: `"${value}" names the workspace itself, not a file in it` });
  } catch (error) {
    context.addIssue({ code: "custom", message: `"${value}" is not a path inside the workspace: ${(error as Error).message}` });
  }
});

/** One text or several; both become a list. */
const Phrases = z
  .union([z.string().min(1, { error: "must not be empty" }), z.array(z.string().min(1, { error: "must not be empty" })).min(1, { error: "must list at least one text" })], {
    error: "must be a text or a list of texts",
  })
  .transform((value) => (typeof value === "string" ? [value] : value));

/** A regular expression run on RE2 (linear time): a suite is a program its submitter wrote. */
const RegexSource = z.string({ error: required("a regular expression (a string)") }).superRefine((value, context) => {
  const problem = patternProblem(value);
  if (problem !== undefined) context.addIssue({ code: "custom", message: `is not a regular expression troupe can run: ${problem}` });
});

const Rubric = z.string({ error: required("a text") }).min(1, { error: "must not be empty" }).max(2_000, { error: "must be at most 2,000 characters" });

/** `"judge": "the answer explains X"`, or `{ "rubric": "…", "min_score": 0.8 }`. */
const Judge = z
  .union([Rubric, z.object({ rubric: Rubric, min_score: z.number().min(0).max(1).default(DEFAULT_JUDGE_MIN_SCORE) }).strict()], {
    error: "must be a rubric (a text) or { rubric, min_score }",
  })
  .transform((value) => (typeof value === "string" ? { rubric: value, min_score: DEFAULT_JUDGE_MIN_SCORE } : value));

export const Expectations = z
  .object({
    /** completed (the default when absent), failed or interrupted. */
    status: z.enum(EXPECTED_STATUSES, { error: `must be one of ${EXPECTED_STATUSES.join(", ")}` }).optional(),
    answer_includes: Phrases.optional(),
    answer_excludes: Phrases.optional(),
    answer_matches: RegexSource.optional(),
    /** Path → its exact text (after trimming one trailing newline), or null: the file must not exist. */
    files: z.record(WorkspacePath, z.string().nullable()).optional(),
    file_includes: z.record(WorkspacePath, Phrases).optional(),
    max_model_calls: z.number({ error: "must be a number" }).int({ error: "must be a whole number" }).min(0).optional(),
    max_cost_usd: z.number({ error: "must be a number" }).min(0).optional(),
    judge: Judge.optional(),
  })
  .strict();
export type Expectations = z.infer<typeof Expectations>;

export const EvalCase = z
  .object({
    id: z.string({ error: required("a string") }).regex(CASE_ID_PATTERN, { error: "must be 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit (it names the case's folder and cassette)" }),
    task: TaskText,
    /** Files the case's fresh workspace starts with. */
    files: z.record(WorkspacePath, z.string({ error: "must be the file's text" })).optional(),
    expect: Expectations.optional(),
  })
  .strict();
export type EvalCase = z.infer<typeof EvalCase>;

export interface Suite {
  /** The file's name, or the name given with the suite. */
  name: string;
  cases: EvalCase[];
}

/** Where an issue is, and what is wrong, in the terms of the suite file. */
function describeIssue(issue: z.core.$ZodIssue): string {
  const where = issue.path
    .map((part, index) => (typeof part === "number" ? `[${part}]` : /^[A-Za-z_]\w*$/.test(String(part)) ? `${index === 0 ? "" : "."}${String(part)}` : `[${JSON.stringify(String(part))}]`))
    .join("");
  if (issue.code === "invalid_key") return `${where}: ${issue.issues[0]?.message ?? "not a valid key"}`;
  if (issue.code === "unrecognized_keys") {
    const keys = issue.keys.map((key) => `"${key}"`).join(", ");
    const hint = issue.path.length === 0 && issue.keys.includes("judge") ? " (a judge's rubric goes in expect.judge)" : "";
    return `${where ? `${where}: ` : ""}unknown key${issue.keys.length > 1 ? "s" : ""} ${keys}${hint}`;
  }
  return `${where ? `${where}: ` : ""}${issue.message}`;
}

/**
 * Parses raw cases (from JSON Lines or a JSON array); `where(index)` names a case in messages
 * (`offline.jsonl line 3`). Ids must be unique.
 */
export function parseCases(values: Array<{ value: unknown; where: string }>, name: string, maxCases: number = LIMITS.evalMaxCases): Suite {
  if (values.length === 0) throw new InputError("suite_empty", `${name}: the suite has no cases`);
  if (values.length > maxCases) throw new InputError("suite_too_large", `${name}: ${values.length} cases, more than ${maxCases}`);
  const cases: EvalCase[] = [];
  const seen = new Map<string, string>();
  for (const { value, where } of values) {
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new InputError("suite_invalid", `${where}: a case must be a JSON object`, { where });
    }
    const parsed = EvalCase.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0] as z.core.$ZodIssue;
      throw new InputError("suite_invalid", `${where}: ${describeIssue(issue)}`, { where, path: issue.path.join(".") });
    }
    const earlier = seen.get(parsed.data.id);
    if (earlier !== undefined) throw new InputError("suite_invalid", `${where}: id "${parsed.data.id}" is already used (${earlier})`, { where });
    seen.set(parsed.data.id, where);
    cases.push(parsed.data);
  }
  return { name, cases };
}

/** Parses a suite in JSON Lines: one case a line; blank lines are skipped. */
export function parseSuite(text: string, name: string, maxCases?: number): Suite {
  const values: Array<{ value: unknown; where: string }> = [];
  text.split(/\r?\n/).forEach((line, index) => {
    if (line.trim() === "") return;
    const where = `${name} line ${index + 1}`;
    try {
      values.push({ value: JSON.parse(line) as unknown, where });
    } catch (error) {
      throw new InputError("suite_invalid", `${where}: not a JSON object (${(error as Error).message})`, { where });
    }
  });
  return parseCases(values, name, maxCases);
}
