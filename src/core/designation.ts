import type { Designation, TargetKind } from "./designation-types.js";
import { isArgRef, type PlannedSubtask } from "./plan.js";
export type { Designation, TargetKind } from "./designation-types.js";

/** Bounds on what a designation collects, so a huge trusted value costs a bounded walk. */
const LIMITS = { values: 2_000, valueChars: 1_000_000, totalChars: 4_000_000, textChars: 200_000, depth: 8 } as const;

/** Adds the string (and number) leaves of a value to `into`, bounded in count, size and depth. */
function collectLeaves(value: unknown, into: Set<string>, budget: { chars: number }, depth = 0): void {
  if (into.size >= LIMITS.values || budget.chars <= 0 || depth > LIMITS.depth) return;
  if (typeof value === "string") {
    if (value.length <= LIMITS.valueChars) {
      into.add(value);
      budget.chars -= value.length;
    }
    return;
  }
  if (typeof value === "number" || typeof value === "boolean") {
    into.add(String(value));
    return;
  }
  if (Array.isArray(value)) {
    for (const item of value) collectLeaves(item, into, budget, depth + 1);
    return;
  }
  if (typeof value === "object" && value !== null) for (const item of Object.values(value)) collectLeaves(item, into, budget, depth + 1);
}

/**
 * The designation of a subtask: from its task, label, literals and declared writes, plus the
 * resolved values of arguments that came by reference from trusted results.
 */
export function designationFor(
  task: string,
  subtask: PlannedSubtask,
  trustedValues: Readonly<Record<string, unknown>> = {},
  answers: readonly string[] = [],
  untrustedValues: Readonly<Record<string, unknown>> = {},
): Designation {
  const values = new Set<string>();
  const budget = { chars: LIMITS.totalChars };
  for (const arg of Object.values(subtask.args)) if (!isArgRef(arg)) collectLeaves(arg.value, values, budget);
  for (const value of Object.values(trustedValues)) collectLeaves(value, values, budget);
  const texts = [task, subtask.label, ...answers].map((text) => text.slice(0, LIMITS.textChars));
  const short = [...values].filter((value) => value.length < 4_096);
  const passed = new Set<string>();
  collectLeaves(Object.values(untrustedValues), passed, { chars: LIMITS.totalChars });
  return {
    ...(passed.size > 0 ? { passed: new Set([...passed].filter((value) => value.length < 4_096).map(normalisePath)) } : {}),
    texts,
    values,
    paths: new Set(short.map(normalisePath)),
    names: new Set(short.map(nameOf)),
    writes: (subtask.writes ?? []).map(normalisePath),
    tools: subtask.tools ?? null,
  };
}

/** A name as matched: spaces collapsed, lower case. */
function nameOf(text: string): string {
  return text.replace(/\s+/g, " ").trim().toLowerCase();
}

/** A workspace path as written in different ways: `./a/b`, `/workspace/a/b/`, `a//b` are all `a/b`. */
export function normalisePath(path: string): string {
  const parts = path.replace(/\\/g, "/").replace(/^\/workspace(?=\/|$)/, "").split("/");
  const kept = parts.filter((part) => part !== "" && part !== ".");
  return kept.join("/");
}

const PATH_CHAR = /[\p{L}\p{N}_\-./~]/u;
const URL_CHAR = /[\p{L}\p{N}_\-./~?=&%#+:@!$,;*'()[\]]/u;
const WORD_CHAR = /[\p{L}\p{N}_]/u;

/**
 * Whether `needle` occurs in `text` as a whole token: not preceded by a character of the same
 * kind, and not followed by one — except a final `.`, `,` or `?` that ends a sentence.
 */
function mentions(text: string, needle: string, tokenChar: RegExp, caseless = false): boolean {
  if (needle === "") return false;
  const haystack = caseless ? text.toLowerCase() : text;
  const wanted = caseless ? needle.toLowerCase() : needle;
  for (let from = haystack.indexOf(wanted); from >= 0; from = haystack.indexOf(wanted, from + 1)) {
    const before = from > 0 ? haystack[from - 1] : undefined;
    const end = from + wanted.length;
    const after = haystack[end];
    const afterNext = haystack[end + 1];
    const sentenceEnd = after !== undefined && ".,?!:;".includes(after) && (afterNext === undefined || /\s|["'`)\]]/.test(afterNext));
    if ((before === undefined || !tokenChar.test(before)) && (after === undefined || sentenceEnd || !tokenChar.test(after))) return true;
  }
  return false;
}

/**
 * Whether the instructions name a folder `path` is inside: the folder (three characters or more,
 * so not a word such as "a" or "in") given as a plan value or mentioned as a whole token in the
 * task or label. A path that leaves with `..` is inside nothing.
 */
export function insideNamedFolder(designation: Designation, path: string): boolean {
  const segments = normalisePath(path).split("/");
  if (segments.includes("..")) return false;
  for (let end = segments.length - 1; end > 0; end -= 1) {
    const folder = segments.slice(0, end).join("/");
    if (folder.length < 3) continue;
    if (designation.paths.has(folder) || designation.texts.some((text) => mentions(text, folder, PATH_CHAR) || mentions(text, `${folder}/`, PATH_CHAR))) return true;
  }
  return false;
}

/** Whether `path` is one of `writes`, or inside one of them (a declared folder). */
function withinWrites(path: string, writes: readonly string[]): boolean {
  return writes.some((write) => path === write || (write === "" ? path !== "" : path.startsWith(`${write}/`)));
}

/**
 * Whether the instructions designate `value` as a target of this kind: a path the plan declares
 * it writes (or, declaring none, one its literals or instruction text name), a URL or name they
 * give, code the plan itself wrote. Values that are not text designate nothing unless the plan
 * gave them as they are.
 */
export function designates(designation: Designation, kind: TargetKind, value: unknown): boolean {
  if (typeof value === "number" || typeof value === "boolean") return designation.values.has(String(value));
  if (typeof value !== "string") return false;
  switch (kind) {
    case "code":
      return designation.values.has(value);
    case "path": {
      const path = normalisePath(value);
      if (designation.passed?.has(path) && insideNamedFolder(designation, path)) return true;
      if (designation.writes.length > 0) return withinWrites(path, designation.writes);
      if (designation.paths.has(path)) return true;
      return path !== "" && designation.texts.some((text) => mentions(text, path, PATH_CHAR) || mentions(text, value, PATH_CHAR));
    }
    case "url":
      return designation.values.has(value) || designation.texts.some((text) => mentions(text, value, URL_CHAR));
    case "name": {
      const name = value.replace(/\s+/g, " ").trim();
      if (name === "") return false;
      if (designation.names.has(name.toLowerCase())) return true;
      return designation.texts.some((text) => mentions(text.replace(/\s+/g, " "), name, WORD_CHAR, true));
    }
    default:
      return false;
  }
}
